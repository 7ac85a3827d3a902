"""Steps for features/subagents.feature, stated against the public API."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import ApproximateCounter, Message, Strategy, ToolCall, validate
from compaction.ladder import default_pipeline
from compaction.memory.transcript import provenance
from compaction.messages import assistant, system, tool, user

scenarios("subagents.feature")

COUNTER = ApproximateCounter()
TASK = ToolCall(
    "agent_1",
    "Task",
    {"description": "Find the flaky test", "prompt": "Run tests/test_io.py 20 times\n" + "p" * 800},
)


@pytest.fixture
def world() -> dict[str, Any]:
    return {}


def _steps(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        call = ToolCall(f"c{i}", "bash", {"command": f"pytest tests/test_m{i}.py"})
        out.append(assistant(f"Checking module {i}.", [call]))
        out.append(tool(call.id, f"FAILED tests/test_m{i}.py::test_a\n" + "x" * 1500, name="bash"))
    return out


@given("an agent run with 8 steps and a sub-agent started at the end")
def agent_run(world: dict[str, Any]) -> None:
    head = [system("You are a coding agent."), user("Make the test suite pass.")]
    world["open"] = assistant("Starting a helper on the flaky test.", [TASK])
    world["messages"] = [*head, *_steps(8), world["open"]]
    world["result"] = tool(TASK.id, "The flaky test is test_io::test_tmp.", name="Task")


@given("the sub-agent was started after step 3 instead")
def in_the_middle(world: dict[str, Any]) -> None:
    msgs = world["messages"][:-1]
    msgs.insert(2 + 2 * 3, world["open"])
    world["messages"] = msgs


@when(parsers.parse("the default ladder compacts it to {share:d}% of its size"))
def compact(world: dict[str, Any], share: int) -> None:
    msgs = world["messages"]
    target = COUNTER.count_messages(msgs) * share // 100
    world["result_of"] = default_pipeline(counter=COUNTER).compact(msgs, target=target)
    world["out"] = list(world["result_of"].messages)


@when("a layer that drops every tool step compacts it")
def drop_steps(world: dict[str, Any]) -> None:
    class DropSteps(Strategy):
        name = "drop_steps"

        def rewrite(self, messages, *, target, counter):
            return [m for m in messages if m.role != "tool" and not m.tool_calls]

    world["result_of"] = DropSteps().compact(world["messages"], target=10, counter=COUNTER)


@when("the sub-agent's result is appended")
def appended(world: dict[str, Any]) -> None:
    world["out"].append(world["result"])


@when("the sub-agent's result is put right after its call")
def put_after(world: dict[str, Any]) -> None:
    out = world["out"]
    out.insert(out.index(world["open"]) + 1, world["result"])


@then("the step that started the sub-agent is kept verbatim")
def kept(world: dict[str, Any]) -> None:
    assert world["result_of"].after < world["result_of"].before
    assert sum(m is world["open"] for m in world["out"]) == 1


@then("the ledger says it waits on the sub-agent, by tool, call id and task")
def ledger_names_it(world: dict[str, Any]) -> None:
    notes = [m for m in world["out"] if (provenance(m) or {}).get("kind") in ("note", "summary")]
    assert notes
    line = "Waiting on: Task (call agent_1): Find the flaky test"
    assert any(line in m.content for m in notes)
    facts = provenance(notes[-1])["facts"]
    assert ("agent_1", "Task", "Find the flaky test", True) in facts["waiting"]


@then("the conversation is valid")
def valid(world: dict[str, Any]) -> None:
    validate(world["out"])


@then("the layer's answer is refused as invalid")
def refused(world: dict[str, Any]) -> None:
    declined = world["result_of"].declined
    assert [(d.strategy, d.reason) for d in declined] == [("drop_steps", "invalid")]


@then("the conversation is unchanged")
def unchanged(world: dict[str, Any]) -> None:
    assert world["result_of"].messages == tuple(world["messages"])
