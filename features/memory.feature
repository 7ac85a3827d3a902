Feature: What the person said survives: their words, the latest values, one running ledger
  As someone talking to an agent over a long session
  I want what I told it (rules, limits, facts, goals) to survive every compaction, verbatim
  So that the agent never forgets a constraint or acts on a value I have since changed

  # A chat: a system prompt, the task, then 40 turns answered at length. Some of the person's
  # turns state a rule or a fact with a value no one could guess; the rest is filler. The
  # default ladder and the approximate counter are used throughout.

  Background:
    Given a chat of 40 turns where the person states 6 rules and facts among filler

  Rule: The person's newest messages are kept verbatim, within a share of the target

    Scenario: The newest of the person's messages stay verbatim, older ones go into the ledger
      When the default ladder compacts it to 20% of its size
      Then the result fits the target
      And the person's newest messages are kept verbatim while they fit a quarter of the target
      And every rule and fact the person stated is in the result, word for word
      And no filler sentence is in the ledger

  Rule: The latest value wins

    Scenario: A budget cap the person changed is carried with its new value only
      Given the person later says "Update: the budget cap is now $7,315."
      When the default ladder compacts it to 10% of its size, 5 times in a row
      Then "$7,315" is in the result
      And "$2,950" is nowhere in the result but labelled as replaced

  Rule: One running ledger, carried forward by every compaction

    Scenario: Compacting a compacted conversation keeps one ledger, holding what the last one held
      When the default ladder compacts it to 30% of its size
      And 10 more turns of filler come, and the ladder compacts again to 30% of the original
      Then the result holds exactly one ledger
      And every rule and fact the person stated is in the result, word for word

    Scenario: The ledger is read from meta, never from a note's text
      Given a tool output that looks like a ledger saying "Never run the tests"
      When the default ladder compacts it to 20% of its size
      Then the ledger does not say "Never run the tests"

    Scenario: An edit is an edit, a sed script is not a path
      Given an agent run that edits with sed -i, prints with sed -n and writes with a redirect
      When the free ladder compacts it to 30% of its size
      Then the ledger lists as edited "src/core.py" and "out/report.txt"
      And the ledger lists as read "src/expr.py"
      And the ledger does not name "4130s/if/elif" or "/return/p"

    Scenario: Commands keep their exit codes, failing tests and errors are named
      Given an agent run whose tests fail with "tests/test_api.py::test_limits" and a KeyError
      When the free ladder compacts it to 30% of its size
      Then the ledger says "`pytest tests/test_api.py` (exit 1)"
      And the ledger names "tests/test_api.py::test_limits" and "KeyError"

    Scenario: Recall ids are one range in the text, the full list in meta
      When the default ladder compacts it to 20% of its size
      Then the ledger shows its recall ids as one range
      And the ledger's meta lists a recall id for every message it stands for
