Feature: What is kept: the task always survives, every request fits, nothing vanishes
  As an agent developer
  I want compaction to keep what my agent was asked, fit every request, and say what it dropped
  So that a long run never forgets its task, never gets a provider 400, and can get back what went

  # An agent run: the system prompt, the original task, 8 tool steps (each reading a file and
  # seeing an error), then the person's newest request and 2 more steps. The approximate
  # counter is used throughout.

  Background:
    Given an agent run with 8 old steps and a newest request with 2 steps

  Rule: What is protected: the system block, the original task, the newest request, pinned messages

    Scenario: A harness reply is never taken for the task
      Given a mini-swe-agent trajectory whose newest user message is a format error
      When it is read
      Then the format error is marked synthetic
      And the task is the PR description

    Scenario: The ladder keeps the original task and the newest request verbatim
      When the default ladder compacts it to 25% of its size
      Then the result fits the target
      And the original task is kept verbatim
      And the newest request is kept verbatim

    Scenario: A pinned message is never dropped by a free layer
      Given the output of step 2 is pinned
      When the free ladder compacts it to 25% of its size
      Then the output of step 2 is kept verbatim

    Scenario: Older requests the person wrote are the last thing a free layer drops
      Given an older request after step 4
      When the free ladder compacts it to 20% of its size
      Then the older request is kept verbatim
      And the output of step 5 is gone

  Rule: Every request fits whenever the system prompt does

    Scenario: The last resort cuts an oversized newest tool output, head and tail kept
      Given the newest tool output is 20000 characters
      When the default ladder compacts it to 1500 tokens
      Then the result fits the target
      And the newest tool output keeps its head and tail around a cut naming its recall id
      And the original task is kept verbatim

    Scenario: A caller who prefers the strict floor gets the over-target result uncut
      Given the newest tool output is 20000 characters
      When the strict-floor ladder compacts it to 1500 tokens
      Then the result is over the target
      And the newest tool output is kept verbatim

  Rule: Nothing vanishes without a trace

    Scenario: The note where steps were dropped names files, commands, errors and recall ids
      When the free ladder compacts it to 20% of its size
      Then one note stands where the first dropped message was
      And the note names "src/mod0.py", "ValueError" and the recall id of a dropped message

    Scenario: A cleared tool output names its recall id and never invites a re-run
      When tool results alone compact it to 60% of its size
      Then every cleared output names its recall id and says the call already ran

    Scenario: Notes merge into one running note
      When the free ladder compacts it to 30% of its size
      And the free ladder compacts the result to 20% of the original size
      Then there is exactly 1 note
      And the note names "src/mod0.py"

    Scenario: The summary reads the originals a session keeps
      Given the run is stored in a session and its old tool outputs cleared
      When a summary with the session's recall compacts it
      Then the summariser was shown the original output of step 0

  Rule: Drop just enough

    Scenario: The free ladder uses the budget it is given
      When the free ladder compacts it to 40% of its size
      Then the result fits the target
      And the result keeps at least 95% of the target

    Scenario: In a ladder a window is a cap applied only while over target
      When a ladder with a window of 3 messages compacts it to twice its size
      Then the conversation is unchanged
