"""Steps for features/limits.feature (issue 19.4), stated against the public API."""

from __future__ import annotations

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import ApproximateCounter, Message, ToolCall, validate
from compaction.memory.transcript import provenance
from compaction.messages import assistant, system, tool, user
from compaction.trigger import Compactor, default_pipeline

scenarios("limits.feature")

COUNTER = ApproximateCounter()


def _step(n: int, output: str) -> list[Message]:
    call = ToolCall(f"c{n}", "bash", {"command": f"cat src/m{n}.py"})
    return [assistant(f"step {n}", [call]), tool(call.id, output, name="bash")]


def _cut(message: Message) -> bool:
    return (provenance(message) or {}).get("kind") == "truncated"


@pytest.fixture
def world():
    return {}


@given(parsers.parse("a run with a {task:d}-token task and a {output:d}-token newest output"))
def run(world, task, output):
    world["task"] = user("Fix the parser. " * (task // 4 * 4 // 4))
    msgs = [system("You are a coding agent."), world["task"]]
    for n in range(4):
        msgs += _step(n, f"old output {n} " * 300)
    msgs += _step(4, "HEAD\n" + "line of output\n" * (output * 4 // 15) + "TAIL")
    world["messages"] = msgs


@given(parsers.parse("the system prompt takes {tokens:d} tokens"))
def big_system(world, tokens):
    world["messages"][0] = system("rule " * (tokens * 4 // 5))


@when(
    parsers.parse("the default ladder compacts it to {target:d} tokens with a limit of {limit:d}")
)
def compact_with_limit(world, target, limit):
    try:
        world["result"] = default_pipeline(counter=COUNTER).compact(
            world["messages"], target=target, limit=limit
        )
        world["out"] = world["result"].messages
    except ValueError as exc:
        world["error"] = exc


@when(parsers.parse("the default ladder compacts it to {target:d} tokens"))
def compact(world, target):
    world["result"] = default_pipeline(counter=COUNTER).compact(world["messages"], target=target)
    world["out"] = world["result"].messages


@when(parsers.parse("a compactor with a window of {window:d} sees the run"))
def trigger(world, window):
    world["out"] = Compactor(None, window, counter=COUNTER).before_call(world["messages"])


@then(parsers.parse("the result is within {tokens:d} tokens"))
@then(parsers.parse("the request is within {tokens:d} tokens"))
def within(world, tokens):
    validate(world["out"])
    assert COUNTER.count_messages(world["out"]) <= tokens


@then(parsers.parse("the result is over {tokens:d} tokens"))
def over(world, tokens):
    assert COUNTER.count_messages(world["out"]) > tokens


@then("the task is kept verbatim")
def task_whole(world):
    assert world["task"] in world["out"]


@then("the task is cut, its head and tail kept")
def task_cut(world):
    cut = world["out"][1]
    assert _cut(cut) and "recall id" in cut.content
    head = cut.content.partition("\n[…")[0]
    assert head and world["task"].content.startswith(head)


@then("the newest output is cut, its head and tail kept")
def newest_cut(world):
    newest = world["out"][-1]
    assert _cut(newest) and newest.content.startswith("HEAD") and newest.content.endswith("TAIL")


@then(parsers.parse('it fails with "{words}"'))
def fails(world, words):
    assert words in str(world["error"])


@then("the system prompt is kept verbatim")
def system_whole(world):
    assert world["out"][0] == world["messages"][0]


@then("the system prompt is cut")
def system_cut(world):
    assert _cut(world["out"][0])
