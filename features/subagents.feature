Feature: Sub-agents survive the parent's compaction
  As an agent developer whose agent starts sub-agents and long tools
  I want a call whose result has not come back yet to come out of every compaction as it went in
  So that its result pairs with it when it comes, and the parent still knows what it waits for

  # An agent run: the system prompt, the task, 8 tool steps, then a step that starts a
  # sub-agent (a Task call, "Find the flaky test") whose result has not come back yet. The
  # approximate counter is used throughout.

  Background:
    Given an agent run with 8 steps and a sub-agent started at the end

  Rule: A call still waiting on its result is never dropped or cut, by any layer

    Scenario: The default ladder keeps the open call and the ledger names it
      When the default ladder compacts it to 20% of its size
      Then the step that started the sub-agent is kept verbatim
      And the ledger says it waits on the sub-agent, by tool, call id and task
      When the sub-agent's result is appended
      Then the conversation is valid

    Scenario: An open call in the middle of the run is kept where it is
      Given the sub-agent was started after step 3 instead
      When the default ladder compacts it to 10% of its size
      Then the step that started the sub-agent is kept verbatim
      When the sub-agent's result is put right after its call
      Then the conversation is valid

    Scenario: A layer that drops an open call is refused
      When a layer that drops every tool step compacts it
      Then the layer's answer is refused as invalid
      And the conversation is unchanged
