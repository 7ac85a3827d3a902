Feature: Nothing the model would fetch again
  As an agent developer
  I want repeated reads and repeated identical outputs given up first
  So that compaction frees what costs nothing before it clears or drops anything

  Rule: An older copy becomes a pointer to the newer one, recallable by id

    Scenario: A file read again after an edit
      Given an agent that reads src/parser.py, edits it, and reads it again
      When the default ladder compacts it just under its size
      Then only the dedupe layer was applied
      And the first read says it was superseded by the read at step 3
      And the first read can be recalled by the id it names
      And the second read is sent whole

    Scenario: A command re-run with the same output
      Given an agent that runs "git status" twice with the same output
      When the default ladder compacts it just under its size
      Then the first run says the same call at step 2 returned the same output

    Scenario: A command whose output changed is history
      Given an agent that runs "pytest -x" before and after a fix
      When the default ladder compacts it just under its size
      Then the dedupe layer made no pointer
