Feature: Persistent named sessions for CLI runs (seed 001, context manager)
  As a user of an agent driven from the command line
  I want to save and restore conversation contexts by name
  So that I can have stateful interactions across CLI runs, and lose nothing

  Background:
    Given a temporary session store

  Scenario: Create a new session
    When I create a session named "test-session"
    Then the session should be initialized
    And the session directory should exist
    And the session files should be created

  Scenario: Save and load messages
    Given a session named "chat-session"
    When I add a user message "Hello, how are you?"
    And I add an assistant message "I'm doing well, thank you!"
    And I save the session
    Then the messages should be persisted to disk
    When I open the session "chat-session" again in a new process
    Then the loaded messages should match the saved messages

  Scenario: Save and restore global context
    Given a session named "stateful-session"
    When I save global context with key "writing_stage" and value "planning"
    And I save global context with key "document_type" and value "research_paper"
    Then the global context should be persisted to disk
    When I reload the session in a new process
    Then the global context should contain "writing_stage" with value "planning"
    And the global context should contain "document_type" with value "research_paper"

  Scenario: Update existing session state
    Given a session named "update-session"
    And the session has state "current_task" with value "writing"
    When I update the state "current_task" to "reviewing"
    And I add metadata "last_update" with the current timestamp
    Then the state "current_task" should be "reviewing" after a reload
    And the metadata should contain the timestamp after a reload

  Scenario: Get the last N messages from history
    Given a session named "history-session"
    And I have added 10 messages to the conversation
    When I request the last 5 messages
    Then I should receive exactly 5 messages
    And the messages should be the most recent ones, oldest first

  Scenario: Clear conversation history
    Given a session named "clear-session"
    And the session has 5 messages in history
    When I clear the session
    Then the message history should be empty
    But the session directory should still exist

  Scenario: Delete an entire session
    Given a session named "delete-session"
    And the session has messages and state data
    When I delete the session
    Then the session directory should not exist
    And opening the session "delete-session" without creating it should say it does not exist

  Scenario: List available sessions
    Given I have created sessions named "context2", "context3", "context1"
    When I list all sessions
    Then the list should be "context1", "context2", "context3"

  Scenario: Export and import a session
    Given a session named "export-session"
    And the session has messages, state, and global context data
    When I export the session to a file
    Then the export file should contain all session data
    When I import the session as "import-session"
    Then the imported session should match the original

  Scenario: Get formatted conversation history
    Given a session named "format-session"
    And I have added messages with timestamps
    When I get the formatted history without metadata
    Then the output should show timestamps, roles, and content
    And the output should not include metadata information
    When I get the formatted history with metadata
    Then the output should include metadata information

  Scenario: Handle a non-existent session gracefully
    When I open a session named "new-session"
    And I check if the session exists
    Then it should indicate the session doesn't exist
    When I try to get messages from the empty session
    Then it should return an empty list
    And nothing should have been written for "new-session"
