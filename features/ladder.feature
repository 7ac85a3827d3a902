Feature: The compaction ladder keeps its three rules
  As an agent developer
  I want a ladder of strategies, cheapest first
  So that the conversation shrinks just enough and the strategy that costs money runs last

  Background:
    Given a conversation of 6 turns of 100 tokens each after a 50-token system prompt

  Scenario: A layer is asked only while the conversation is over target
    Given a ladder: "to_target"
    When I compact to 650 tokens
    Then "to_target" was asked 0 times
    And the conversation is unchanged

  Scenario: A layer that saves nothing is refused and the next one is asked
    Given a ladder: "same_size, to_target"
    When I compact to 300 tokens
    Then "same_size" was asked 1 time
    And "same_size" was declined because "did_not_shrink"
    And "to_target" was asked 1 time
    And the result fits the target

  Scenario: Once under target, the layers below are never reached
    Given a ladder: "to_target, drop_oldest_group"
    When I compact to 300 tokens
    Then "to_target" was asked 1 time
    And "drop_oldest_group" was asked 0 times

  Scenario: The terminal is reached only when the free layers could not get there
    Given a ladder: "drop_oldest_group" with terminal "to_target"
    When I compact to 630 tokens
    Then "to_target" was asked 0 times
    When I compact to 250 tokens
    Then "to_target" was asked 1 time
    And the result fits the target

  Scenario: A declining layer passes the conversation on
    Given a ladder: "declines, to_target"
    When I compact to 300 tokens
    Then "declines" was declined because "declined"
    And the applied strategies are "to_target"

  Scenario: A layer that raises does not lose the conversation
    Given a ladder: "drop_oldest_group, raises, declines"
    When I compact to 100 tokens
    Then a failure event named "raises" was emitted
    And "declines" was asked 1 time
    And the applied strategies are "drop_oldest_group"
    And the result is a valid conversation

  Scenario: A strict ladder re-raises after reporting
    Given a strict ladder: "raises"
    When I compact to 100 tokens expecting an error
    Then the error says "layer exploded"
    And a failure event named "raises" was emitted

  Scenario: An answer that would split a tool pair is refused
    Given a ladder: "breaks_pairs, to_target"
    When I compact to 300 tokens
    Then "breaks_pairs" was declined because "invalid"
    And the result is a valid conversation

  Scenario: Events tell the story in order
    Given a ladder: "declines, to_target"
    When I compact to 300 tokens
    Then the events were "started, strategy_declined, duration, strategy_applied, duration, duration, compacted"
