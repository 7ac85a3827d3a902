Feature: Two limits: where compaction aims, and what the request must fit
  As an agent developer
  I want what my agent was told to be cut only when the model's window demands it
  So that compacting toward a comfortable mark never costs the task, the newest output or the
  system prompt

  # A run: a system prompt, a task of about 1,500 tokens, 4 old tool steps and a newest step
  # whose output is about 10,000 tokens. The approximate counter is used throughout.

  Background:
    Given a run with a 1500-token task and a 10000-token newest output

  Rule: Droppable content aims at the target; protected content is cut only down to the limit

    Scenario: With the window as the limit, the task stays whole
      When the default ladder compacts it to 2000 tokens with a limit of 8000
      Then the result is within 8000 tokens
      And the result is over 2000 tokens
      And the task is kept verbatim
      And the newest output is cut, its head and tail kept

    Scenario: Without a limit the target is the limit
      When the default ladder compacts it to 1000 tokens
      Then the result is within 1000 tokens
      And the task is cut, its head and tail kept

    Scenario: A limit below the target is refused before any work
      When the default ladder compacts it to 2000 tokens with a limit of 1000
      Then it fails with "must be at least the target"

  Rule: The system prompt is cut only when it alone is over the limit

    Scenario: A system prompt under the limit is never cut
      Given the system prompt takes 1900 tokens
      When the default ladder compacts it to 2000 tokens
      Then the system prompt is kept verbatim

    Scenario: A system prompt over the limit alone is cut to fit
      Given the system prompt takes 6000 tokens
      When the default ladder compacts it to 2000 tokens with a limit of 5000
      Then the result is within 5000 tokens
      And the system prompt is cut

  Rule: The trigger passes the window as the limit

    Scenario: A task over the compaction mark but within the window is sent whole
      When a compactor with a window of 10000 sees the run
      Then the request is within 10000 tokens
      And the task is kept verbatim
      And the newest output is cut, its head and tail kept
