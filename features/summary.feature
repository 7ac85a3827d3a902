Feature: The Summary terminal
  The only strategy that spends a model call sits at the bottom of the ladder. It is reached
  only when the free layers could not get the conversation under target, it summarises the
  oldest messages first, and a failing summariser never costs the conversation.

  Background:
    Given a conversation of 3 tasks with 2 tool steps each and large tool outputs
    And a summariser that answers a short summary

  Scenario: The terminal is not reached when the free layers get under target
    Given a ladder of ToolResults then a Summary terminal
    When the conversation is compacted to 50% of its size
    Then the conversation fits the target
    And the summariser was never called

  Scenario: The terminal summarises the oldest turns when the free layers could not get there
    Given a ladder of ToolResults then a Summary terminal
    When the conversation is compacted to 30% of its size
    Then the conversation fits the target
    And the summariser was called once
    And the original task is kept verbatim and a summary stands where its steps were
    And the system message, the task anchor and the newest step are kept as they were
    And the summary is not taken for the task anchor
    And the result is a valid conversation

  Scenario Outline: A failing summariser keeps the conversation
    Given a summariser that <fails>
    And a Summary strategy on its own
    When the conversation is compacted to 30% of its size
    Then the conversation is unchanged
    And a failure event was emitted for the summary strategy

    Examples:
      | fails                          |
      | raises an error                |
      | answers nothing                |
      | does not answer in time        |

  Scenario: A summary that would not be smaller is a quiet decline, not a failure
    Given a summariser that answers something longer
    And a Summary strategy on its own
    When the conversation is compacted to 30% of its size
    Then the conversation is unchanged
    And no failure event was emitted
    And the summary is skipped with the reason "summary_not_smaller"

  Scenario: After repeated failures the breaker stops calling the summariser
    Given a summariser that raises an error
    And a Summary strategy on its own
    When the conversation is compacted to 30% of its size 4 times
    Then the summariser was called 3 times
    And the breaker is open
    When the breaker is reset
    And the conversation is compacted to 30% of its size 1 times
    Then the summariser was called 4 times
