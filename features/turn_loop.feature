Feature: Turn loop with a persistent context
  As the developer of an agent
  I want a turn loop that compacts before every model call and keeps a shared context
  So that tools and chained agents carry state across calls and runs (seed 001)

  Scenario: Tool agent context updates are captured
    Given a turn loop with a tool that runs Python code with the context
    When the tool executes code that sets context["writing_stage"] to "drafting"
    Then the global context updates should be captured
    And the context should persist after execution

  Scenario: Context updates through stream routing
    Given a stream router of three context-aware agents
    When a message flows through the stream with context metadata
    And the agents modify the context during processing
    Then all context modifications should be preserved
    And the final context should reflect all changes

  Scenario: Run with context and conversation history
    Given an application with a simple config for context
    When running with a 15 message conversation history
    Then only the last 10 messages are used
    And the prompt is formatted with the history

  Scenario: Run with context and long assistant response
    Given an application with a simple config for context
    When running with a 600 character assistant response in the history
    Then the response is truncated to 500 characters

  Scenario: Run with context without history
    Given an application with a simple config for context
    When running with no conversation history
    Then the prompt is used without modification

  Scenario: Temperature override in global context
    Given a config file path for context
    When creating the app with temperature override 0.8
    Then the global context contains temperature value 0.8
