"""Steps for features/tool_results.feature, stated against the public API."""

from __future__ import annotations

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import events
from compaction.memory.transcript import provenance
from compaction.messages import Message, ToolCall
from compaction.strategies.tool_results import ToolResults
from compaction.tokens import ApproximateCounter
from compaction.validate import validate

scenarios("tool_results.feature")


@pytest.fixture
def world():
    state = {"asked": 0}

    def asked(sender, **kw):
        if kw.get("name") == "tool_results":
            state["asked"] += 1

    events.strategy_applied.connect(asked)
    events.strategy_declined.connect(asked)
    yield state
    events.strategy_applied.disconnect(asked)
    events.strategy_declined.disconnect(asked)


def placeholders(messages) -> list[int]:
    return [i for i, m in enumerate(messages) if (provenance(m) or {}).get("kind") == "placeholder"]


@given(parsers.parse("an agent run of {n:d} tool steps whose results take {size:d} tokens each"))
def agent_run(world, n, size):
    # Known token counts keep the arithmetic exact; placeholders are counted for real.
    messages = [Message("system", "Be brief.", tokens=20), Message("user", "Fix it.", tokens=10)]
    for k in range(1, n + 1):
        call = ToolCall(f"call_{k}", "bash" if k % 2 else "read_file", {"step": k})
        messages.append(Message("assistant", f"step {k}", tool_calls=(call,), tokens=10))
        messages.append(Message("tool", f"output {k}", tool_call_id=call.id, tokens=size))
    world["messages"] = messages
    world["steps"] = {k: 3 + 2 * (k - 1) for k in range(1, n + 1)}  # index of each result


def compact(world, strategy, target):
    world["target"] = target
    world["result"] = strategy.compact(
        world["messages"], target=target, counter=ApproximateCounter()
    )


@when(parsers.parse("I compact it with tool_results to {target:d} tokens"))
def compact_default(world, target):
    compact(world, ToolResults(), target)


@when(parsers.parse("I compact it with tool_results keeping {keep:d} steps to {target:d} tokens"))
def compact_keeping(world, keep, target):
    compact(world, ToolResults(keep_steps=keep), target)


@when(parsers.parse("I build tool_results keeping {keep:d} steps"))
def build(world, keep):
    with pytest.raises(ValueError) as info:
        ToolResults(keep_steps=keep)
    world["error"] = info.value


@then("the conversation is unchanged")
def unchanged(world):
    assert world["result"].messages == tuple(world["messages"])


@then("tool_results was not asked")
def not_asked(world):
    assert world["asked"] == 0
    assert world["result"].applied == () and world["result"].declined == ()


@then(parsers.re(r"(?P<n>\d+) tool results? (is a placeholder|are placeholders)"))
def n_placeholders(world, n):
    assert len(placeholders(world["result"].messages)) == int(n)


@then(parsers.parse("the placeholder stands for step {k:d} and names its tool"))
def stands_for(world, k):
    i = world["steps"][k]
    new, old = world["result"].messages[i], world["messages"][i]
    assert placeholders(world["result"].messages) == [i]
    assert new.tool_call_id == old.tool_call_id
    name = world["messages"][i - 1].tool_calls[0].name
    assert name in new.content and "again" not in new.content  # never invites a re-run


@then(parsers.parse("the results of steps {a:d} and {b:d} are intact"))
def intact(world, a, b):
    for k in (a, b):
        i = world["steps"][k]
        assert world["result"].messages[i] == world["messages"][i]


@then("every tool call is still answered")
def answered(world):
    validate(world["result"].messages)


@then("the result fits the target")
def fits(world):
    assert world["result"].after <= world["target"]


@then("it is refused because the model has not acted on the newest output yet")
def refused(world):
    assert "keep_steps" in str(world["error"]) and "acted on" in str(world["error"])
