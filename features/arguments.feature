Feature: What identifies a step is never cut
  As an agent developer
  I want the calls my agent made to reach the model as it made them
  So that the model never reads read_file(path="") followed by a file

  # An agent reads files through read_file(path=...) on a 12,000-token window; each file is
  # about 3,000 tokens. The trigger compacts at 70% of the window down to 40%.

  Rule: Arguments under the floor are never cut, and a cut frees a meaningful share

    Scenario: The paths of older reads reach the model whole
      Given an agent that reads mod_1.py, mod_2.py, then mod_3.py and mod_4.py at once, then mod_5.py and mod_6.py
      When a compactor with a window of 12000 sees each request
      Then some requests were compacted
      And every tool call in every request is the call the agent made
      And every request is within 12000 tokens

    Scenario: A call whose output is shown whole keeps its arguments within the limit
      Given a step that ran a 200-line script and printed "done", and a newest step reading a file
      When the last resort aims at a third of its size with the whole size as the limit
      Then the script is sent whole

  Rule: Over the hard limit, an argument it does cut keeps its head and a marker

    Scenario: A long file written in the newest step is cut, its path kept
      Given a newest step that writes a 2000-line file to tests/fixtures.py
      When the last resort compacts it to 1000 tokens
      Then the result is within 1000 tokens
      And the written path is kept whole
      And the written content keeps its head and a marker naming its recall id

  Rule: The request fits before the newest outputs keep their head and tail

    Scenario: A system prompt that nearly fills the target leaves the newest outputs their markers
      Given a 2018-token system prompt and a newest step reading three long files
      When the default ladder compacts it to 2200 tokens
      Then the result is within 2200 tokens
      And the system prompt is kept verbatim
      And each newest output still names its recall id
