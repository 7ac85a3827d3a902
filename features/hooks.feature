Feature: Seed 004's hooks, as events and an approval hook
  As the developer of an agent
  I want every step of the ladder and of the turn loop announced as it happens
  So that I can meter, trace and steer my agent without wrapping anything

  # Seed 004's hook catalogue, by our names: MIDDLEWARE_ADDED is layer_added; ENTER and EXIT are
  # layer_entered and layer_exited; COMPACTED and COMPACT_DURATION are compacted and the run's
  # duration; TURN_START, TURN_END and TURN_DURATION are turn_started and turn_finished (seconds);
  # BEFORE_LLM, AFTER_LLM, LLM_DURATION and LLM_FAILURE are model_call_started, _finished
  # (seconds) and _failed (the error, whatever raised it); BEFORE_TOOL, AFTER_TOOL and
  # TOOL_DURATION are tool_call_started and tool_call_finished (seconds); APPROVE_TOOL is the
  # loop's approve_tool hook.

  Background:
    Given a conversation of 6 turns of 100 tokens each after a 50-token system prompt

  Scenario: Adding a layer is announced
    When I build a ladder: "declines, to_target" with terminal "drop_oldest_group"
    Then the layers announced were "declines at 0, to_target at 1, drop_oldest_group at 2 as terminal"

  Scenario: Each layer reached is entered and exited, nested like middleware
    Given a ladder: "declines, to_target" with terminal "drop_oldest_group"
    When I compact to 300 tokens
    Then the layer events were "enter declines, enter to_target, exit to_target, exit declines"
    And every layer entered was asked
    And "to_target" handed back a conversation under 300 tokens

  Scenario: A run under target enters the top layer without asking it
    Given a ladder: "to_target"
    When I compact to 1000 tokens
    Then the layer events were "enter to_target, exit to_target"
    And no layer entered was asked

  Scenario: Only a run that changed the conversation counts as a compaction
    Given a ladder: "to_target"
    When I compact to 1000 tokens
    And I compact to 300 tokens
    And I compact to 1000 tokens
    Then 3 runs finished and 1 of them was a compaction
    And 3 run durations were measured

  Scenario: A strategy written to the seed's signature works
    Given a ladder of a strategy whose rewrite takes only the conversation and the target
    When I compact to 300 tokens
    Then the applied strategies are "seed_signature"
    And no failure was reported

  Scenario: A strategy without a name is refused when it is defined
    When I define a strategy class "Anonymous" without a name
    Then a TypeError names "Anonymous"

  Scenario: A strategy without rewrite answers NotImplementedError
    Given a strict ladder of a named strategy without rewrite
    When I compact to 300 tokens expecting an error
    Then the error is a NotImplementedError naming "Unfinished"

  Scenario: A turn is announced, its model call observed, and both timed
    Given a turn loop whose model answers "hello"
    When I run the turn "hi"
    Then the loop events were "turn_started, model_call_started, model_call_finished, turn_finished"
    And the turn and the model call took a measured time
    And the model call reported the tokens it sent and the provider's usage

  Scenario: A failing model call is reported and ends the turn
    Given a turn loop whose model fails with "502 from the upstream server"
    When I run the turn "hi" expecting an error
    Then the loop events were "turn_started, model_call_started, model_call_failed, turn_finished"
    And the failure carries the error "502 from the upstream server"
    And the turn finished not ok

  Scenario: A tool call is observed before and after, and timed
    Given a turn loop whose model calls "add" with a=2 and b=3, then answers
    When I run the turn "2 + 3?"
    Then the loop events were "turn_started, model_call_started, model_call_finished, tool_call_started, tool_call_finished, model_call_started, model_call_finished, turn_finished"
    And the tool "add" returned "5" in a measured time

  Scenario: The approval hook can deny a tool call
    Given a turn loop whose model calls "delete" with path=/etc, then answers
    And an approval hook that denies "delete" because "nothing is deleted here"
    When I run the turn "clean up"
    Then the tool "delete" did not run
    And the model was told the call was refused because "nothing is deleted here"

  Scenario: The approval hook can rewrite a tool call's arguments
    Given a turn loop whose model calls "add" with a=2 and b=3, then answers
    And an approval hook that sets b to 10
    When I run the turn "2 + 3?"
    Then the tool "add" returned "12" in a measured time
