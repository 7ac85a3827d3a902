Feature: SlidingWindow keeps the newest part of a conversation (seed 000)
  As an agent developer
  I want a SlidingWindow strategy with a configurable window size
  So that long-running agent sessions keep only the most recent messages, never split a tool call
  from its results, and never lose the system prompt or the task at hand

  # The seed's "fragments" are Messages: uko_node, score and depth travel in meta, the tokens
  # column is the message's known token count, and "apply the strategy" is
  # strategy.apply(fragments, Budget(max_tokens, reserved_tokens)).

  # ===========================================================================
  # Protocol conformance
  # ===========================================================================

  Scenario: SlidingWindow satisfies the Strategy protocol
    Given a SlidingWindow with window_size 10 and window_mode "messages"
    Then the sw strategy should satisfy the Strategy protocol
    And the sw strategy name should be "sliding_window"
    And the sw strategy should have a capabilities object

  Scenario: SlidingWindow explain returns a description
    Given a SlidingWindow with window_size 5 and window_mode "messages"
    Then the sw strategy explain should contain "sliding"

  # ===========================================================================
  # Messages mode — basic truncation
  # ===========================================================================

  Scenario: Messages mode keeps only the most recent N messages
    Given a SlidingWindow with window_size 2 and window_mode "messages"
    And the following sliding window fragments:
      | uko_node           | content   | score | tokens | depth | role |
      | project://app/a.py | message 1 | 0.5   | 10     | 3     | user |
      | project://app/b.py | message 2 | 0.6   | 10     | 3     | user |
      | project://app/c.py | message 3 | 0.7   | 10     | 3     | user |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 2 fragments should be returned by sliding window strategy
    And the sliding window result should contain uko_node "project://app/b.py"
    And the sliding window result should contain uko_node "project://app/c.py"
    And the sliding window result should not contain uko_node "project://app/a.py"

  Scenario: Messages mode with exact boundary keeps all messages
    Given a SlidingWindow with window_size 3 and window_mode "messages"
    And the following sliding window fragments:
      | uko_node           | content   | score | tokens | depth | role |
      | project://app/a.py | message 1 | 0.5   | 10     | 3     | user |
      | project://app/b.py | message 2 | 0.6   | 10     | 3     | user |
      | project://app/c.py | message 3 | 0.7   | 10     | 3     | user |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 3 fragments should be returned by sliding window strategy

  Scenario: Messages mode with fewer messages than window size returns all
    Given a SlidingWindow with window_size 10 and window_mode "messages"
    And the following sliding window fragments:
      | uko_node           | content   | score | tokens | depth | role |
      | project://app/a.py | message 1 | 0.5   | 10     | 3     | user |
      | project://app/b.py | message 2 | 0.6   | 10     | 3     | user |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 2 fragments should be returned by sliding window strategy

  Scenario: Messages mode with empty context returns empty
    Given a SlidingWindow with window_size 5 and window_mode "messages"
    And an empty sliding window fragment list
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 0 fragments should be returned by sliding window strategy

  # ===========================================================================
  # Tokens mode — basic truncation
  # ===========================================================================

  Scenario: Tokens mode keeps most recent messages within token limit
    Given a SlidingWindow with window_size 25 and window_mode "tokens"
    And the following sliding window fragments:
      | uko_node           | content   | score | tokens | depth | role |
      | project://app/a.py | message 1 | 0.5   | 10     | 3     | user |
      | project://app/b.py | message 2 | 0.6   | 10     | 3     | user |
      | project://app/c.py | message 3 | 0.7   | 10     | 3     | user |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 2 fragments should be returned by sliding window strategy
    And the sliding window result should contain uko_node "project://app/b.py"
    And the sliding window result should contain uko_node "project://app/c.py"
    And the sliding window result should not contain uko_node "project://app/a.py"

  Scenario: Tokens mode with exact boundary keeps all messages
    Given a SlidingWindow with window_size 30 and window_mode "tokens"
    And the following sliding window fragments:
      | uko_node           | content   | score | tokens | depth | role |
      | project://app/a.py | message 1 | 0.5   | 10     | 3     | user |
      | project://app/b.py | message 2 | 0.6   | 10     | 3     | user |
      | project://app/c.py | message 3 | 0.7   | 10     | 3     | user |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 3 fragments should be returned by sliding window strategy

  Scenario: Tokens mode with empty context returns empty
    Given a SlidingWindow with window_size 100 and window_mode "tokens"
    And an empty sliding window fragment list
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 0 fragments should be returned by sliding window strategy

  Scenario: Tokens mode with single large message that fits returns it
    Given a SlidingWindow with window_size 50 and window_mode "tokens"
    And the following sliding window fragments:
      | uko_node           | content   | score | tokens | depth | role |
      | project://app/a.py | message 1 | 0.5   | 40     | 3     | user |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 1 fragments should be returned by sliding window strategy

  # ===========================================================================
  # System prompt preservation
  # ===========================================================================

  Scenario: System prompt is always preserved outside the sliding window in messages mode
    Given a SlidingWindow with window_size 2 and window_mode "messages"
    And the following sliding window fragments:
      | uko_node                | content        | score | tokens | depth | role   |
      | project://system/prompt | system context | 0.9   | 20     | 5     | system |
      | project://app/a.py      | message 1      | 0.5   | 10     | 3     | user   |
      | project://app/b.py      | message 2      | 0.6   | 10     | 3     | user   |
      | project://app/c.py      | message 3      | 0.7   | 10     | 3     | user   |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 3 fragments should be returned by sliding window strategy
    And the sliding window result should contain uko_node "project://system/prompt"
    And the sliding window result should contain uko_node "project://app/b.py"
    And the sliding window result should contain uko_node "project://app/c.py"
    And the sliding window result should not contain uko_node "project://app/a.py"

  Scenario: System prompt is always preserved outside the sliding window in tokens mode
    Given a SlidingWindow with window_size 25 and window_mode "tokens"
    And the following sliding window fragments:
      | uko_node                | content        | score | tokens | depth | role   |
      | project://system/prompt | system context | 0.9   | 20     | 5     | system |
      | project://app/a.py      | message 1      | 0.5   | 10     | 3     | user   |
      | project://app/b.py      | message 2      | 0.6   | 10     | 3     | user   |
      | project://app/c.py      | message 3      | 0.7   | 10     | 3     | user   |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 3 fragments should be returned by sliding window strategy
    And the sliding window result should contain uko_node "project://system/prompt"
    And the sliding window result should contain uko_node "project://app/b.py"
    And the sliding window result should contain uko_node "project://app/c.py"
    And the sliding window result should not contain uko_node "project://app/a.py"

  Scenario: Multiple system prompts are all preserved
    Given a SlidingWindow with window_size 1 and window_mode "messages"
    And the following sliding window fragments:
      | uko_node                 | content          | score | tokens | depth | role   |
      | project://system/prompt1 | system context 1 | 0.9   | 20     | 5     | system |
      | project://system/prompt2 | system context 2 | 0.8   | 20     | 5     | system |
      | project://app/a.py       | message 1        | 0.5   | 10     | 3     | user   |
      | project://app/b.py       | message 2        | 0.6   | 10     | 3     | user   |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 3 fragments should be returned by sliding window strategy
    And the sliding window result should contain uko_node "project://system/prompt1"
    And the sliding window result should contain uko_node "project://system/prompt2"
    And the sliding window result should contain uko_node "project://app/b.py"
    And the sliding window result should not contain uko_node "project://app/a.py"

  Scenario: Context with only system prompts returns all of them
    Given a SlidingWindow with window_size 1 and window_mode "messages"
    And the following sliding window fragments:
      | uko_node                 | content          | score | tokens | depth | role   |
      | project://system/prompt1 | system context 1 | 0.9   | 20     | 5     | system |
      | project://system/prompt2 | system context 2 | 0.8   | 20     | 5     | system |
    And a sliding window budget with max_tokens 1000 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 2 fragments should be returned by sliding window strategy

  # ===========================================================================
  # Budget enforcement
  # ===========================================================================

  Scenario: Strategy respects token budget after sliding window truncation
    Given a SlidingWindow with window_size 10 and window_mode "messages"
    And the following sliding window fragments:
      | uko_node           | content   | score | tokens | depth | role |
      | project://app/a.py | message 1 | 0.5   | 100    | 3     | user |
      | project://app/b.py | message 2 | 0.6   | 100    | 3     | user |
      | project://app/c.py | message 3 | 0.7   | 100    | 3     | user |
    And a sliding window budget with max_tokens 250 and reserved_tokens 0
    When I apply the SlidingWindow
    Then 2 fragments should be returned by sliding window strategy

  # ===========================================================================
  # can_handle
  # ===========================================================================

  Scenario: can_handle returns a positive confidence
    Given a SlidingWindow with window_size 10 and window_mode "messages"
    When I check can_handle on SlidingWindow
    Then the sliding window confidence should be greater than 0.0

  # ===========================================================================
  # Registry
  # ===========================================================================

  Scenario: SlidingWindow is registered under key "sliding_window"
    Given the strategy registry for sliding window tests
    Then the sw registry should have strategy "sliding_window"

  Scenario: SlidingWindow can be registered manually under a custom key
    Given the strategy registry for sliding window tests
    When I register a custom SlidingWindow with the registry
    Then the sw registry should have strategy "custom_sliding_window"

  # ===========================================================================
  # Configuration validation
  # ===========================================================================

  Scenario: window_size must be positive
    When I attempt to create a SlidingWindow with window_size 0
    Then a ValueError should be raised for sliding window

  Scenario: window_mode must be messages or tokens
    When I attempt to create a SlidingWindow with window_mode "invalid"
    Then a ValueError should be raised for sliding window

  Scenario: window_mode messages is valid
    When I create a SlidingWindow with window_size 5 and window_mode "messages"
    Then no error should be raised for sliding window

  Scenario: window_mode tokens is valid
    When I create a SlidingWindow with window_size 100 and window_mode "tokens"
    Then no error should be raised for sliding window

  # ===========================================================================
  # As a ladder layer: budget-driven and turn-aware
  # ===========================================================================

  Rule: As a ladder layer it drops just enough, one step at a time, and never the task
    # Three past requests, then the current one ("task 3") with four steps, one of them two
    # parallel tool calls. Every message costs 10 tokens, the system prompt 20: 220 in all.
    # "task 0" is the original task: the first user message a person wrote. The ladder counts
    # with the approximate counter; a note naming what went costs about 18 tokens.

    Background:
      Given an agent conversation:
      | role      | content  | tokens | calls | answers |
      | system    | be terse | 20     |       |         |
      | user      | task 0   | 10     |       |         |
      | assistant |          | 10     | c0    |         |
      | tool      | out 0    | 10     |       | c0      |
      | user      | task 1   | 10     |       |         |
      | assistant |          | 10     | c1    |         |
      | tool      | out 1    | 10     |       | c1      |
      | user      | task 2   | 10     |       |         |
      | assistant |          | 10     | c2    |         |
      | tool      | out 2    | 10     |       | c2      |
      | assistant |          | 10     | c3    |         |
      | tool      | out 3    | 10     |       | c3      |
      | user      | task 3   | 10     |       |         |
      | assistant |          | 10     | c4    |         |
      | tool      | out 4    | 10     |       | c4      |
      | assistant |          | 10     | c5,c6 |         |
      | tool      | out 5    | 10     |       | c5      |
      | tool      | out 6    | 10     |       | c6      |
      | assistant |          | 10     | c7    |         |
      | tool      | out 7    | 10     |       | c7      |
      | assistant | done     | 10     |       |         |

    Scenario: The layer drops the oldest steps first and names what went where it was
      When I compact it with a sliding_window layer to 215 tokens
      Then the sliding window layer was applied
      And the result fits the target
      And the result should not contain "out 0", "out 1"
      And the result should contain "task 0", "task 1", "task 2", "out 2", "task 3"
      And the note where the dropped messages were says "4 earlier messages (2 tool steps)"
      And the result is a valid conversation

    Scenario: Older requests the person wrote are the last thing dropped
      When I compact it with a sliding_window layer to 165 tokens
      Then the result fits the target
      And the result should not contain "out 0", "out 1", "out 2", "out 3"
      And the result should contain "task 0", "task 1", "task 2", "task 3", "out 4"
      And the note where the dropped messages were says "8 earlier messages"
      And the result is a valid conversation

    Scenario: The task, the newest request and the newest keep_steps steps are never dropped
      When I compact it with a sliding_window layer with keep_steps 2 to 60 tokens
      Then the sliding window layer was applied
      And the result should contain "be terse", "task 0", "task 3", "out 7", "done"
      And the result should not contain "task 1", "task 2", "out 4", "out 5", "out 6"
      And the note where the dropped messages were says "15 earlier messages"
      And the result is a valid conversation

    Scenario: A tool call and its results go together
      When I compact it with a sliding_window layer with keep_steps 1 to 90 tokens
      Then the result should not contain "out 5", "out 6"
      And no kept assistant message calls "c5" or "c6"
      And the result is a valid conversation

    Scenario: A new note absorbs the older one and counts what it stood for
      When I compact it with a sliding_window layer to 215 tokens
      And I compact the result again with a sliding_window layer to 165 tokens
      Then the note where the dropped messages were says "8 earlier messages"
      And there is exactly 1 note in the result
      And the result is a valid conversation

  Rule: Swapping one note for another is never a rewrite

    Scenario: Only an older note could go, so the layer declines
      Given an agent conversation:
        | role      | content  | tokens | calls | answers |
        | system    | be terse | 20     |       |         |
        | user      | task 3   | 10     |       |         |
        | assistant |          | 10     | c4    |         |
        | tool      | out 4    | 10     |       | c4      |
        | assistant | done     | 10     |       |         |
      And a note from an earlier compaction standing for 5 messages after the system prompt
      When I compact it with a sliding_window layer to 40 tokens
      Then the sliding window layer was declined
      And the conversation is unchanged
