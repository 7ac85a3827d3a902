Feature: Old tool output gives way first
  As an agent developer
  I want the oldest tool results replaced by a short placeholder, and no more than needed
  So that the conversation fits while every call stays answered and the newest output survives

  Background:
    Given an agent run of 5 tool steps whose results take 400 tokens each

  Scenario: Already under target, nothing is asked
    When I compact it with tool_results to 5000 tokens
    Then the conversation is unchanged
    And tool_results was not asked

  Scenario: The oldest result goes first, and only as many as needed
    When I compact it with tool_results to 1800 tokens
    Then 1 tool result is a placeholder
    And the placeholder stands for step 1 and names its tool
    And every tool call is still answered
    And the result fits the target

  Scenario: The newest steps are never touched
    When I compact it with tool_results keeping 2 steps to 100 tokens
    Then 3 tool results are placeholders
    And the results of steps 4 and 5 are intact
    And every tool call is still answered

  Scenario: Keeping no step at all is refused
    When I build tool_results keeping 0 steps
    Then it is refused because the model has not acted on the newest output yet
