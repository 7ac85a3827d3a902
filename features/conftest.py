"""Steps shared by several feature files (pytest-bdd finds step fixtures in conftest)."""

from __future__ import annotations

from pytest_bdd import given, parsers, when

from compaction import Message, ToolCall


@given(
    parsers.parse(
        "a conversation of {turns:d} turns of {size:d} tokens each "
        "after a {sys:d}-token system prompt"
    )
)
def conversation(world, turns, size, sys):
    msgs = [Message("system", "system prompt", tokens=sys)]
    for i in range(turns):
        msgs.append(Message("user", f"task {i}", tokens=size // 4))
        msgs.append(
            Message("assistant", "", tool_calls=(ToolCall(f"c{i}", "bash"),), tokens=size // 4)
        )
        msgs.append(Message("tool", f"out {i}", tool_call_id=f"c{i}", tokens=size // 2))
    world["messages"] = msgs


@when(parsers.parse("I compact to {target:d} tokens expecting an error"))
def compact_error(world, target):
    try:
        world["pipeline"].compact(world["messages"], target=target)
    except Exception as exc:
        world["error"] = exc


@when(parsers.parse("I compact to {target:d} tokens"))
def compact(world, target):
    world["result"] = world["pipeline"].compact(world["messages"], target=target)
