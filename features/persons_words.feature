Feature: What the person said stays in front of the model at every budget
  The ledger is useless in meta alone. Whatever the terminal writes for a region shows what the
  ledger holds, the person's rules and limits first, verbatim, within the budget; every bound
  scales with the budget; a compaction uses its budget; a layer that declines says why, quietly.

  Background:
    Given a chat session of 65 short turns where 12 carry the person's rules, facts and goals
    And a counter of characters

  Scenario Outline: The summary writes the person's statements into its text, as many as fit
    When the default ladder compacts it to <percent>% of its size
    Then the result fits the target
    And at least <kept> of the 12 statements are shown verbatim
    And every ledger line the model reads is one of the person's statements, whole
    And the result uses at least 90% of the target

    Examples:
      | percent | kept |
      | 10      | 3    |
      | 20      | 8    |
      | 35      | 12   |

  Scenario: Rules and limits outlive facts and goals when the room is short
    When the default ladder compacts it to 10% of its size
    Then no goal is shown while a rule is hidden

  Scenario: No bound is larger than the budget
    Then the ledger's cap at 10% of the session in characters is at most half of that budget

  Scenario: The ladder keeps the answer that shows more of the person's statements
    When the default ladder compacts it to 35% of its size
    Then the sliding window's answer was set aside with the reason "fewer_statements"
    And the summary's answer was taken

  Scenario: Declining is quiet
    When the README's first example compacts the shipped agent session to 1,000 tokens
    Then no warning was logged
    And no failure event was emitted
    And the layers that declined are listed with their reasons
