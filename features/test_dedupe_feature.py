"""Steps for features/dedupe.feature, stated against the public API."""

from __future__ import annotations

import json

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import ApproximateCounter, Message, ToolCall, validate
from compaction.integrations.recall_tools import find_original
from compaction.memory.transcript import provenance
from compaction.messages import assistant, system, tool, user
from compaction.trigger import default_pipeline

scenarios("dedupe.feature")

COUNTER = ApproximateCounter()
FILE = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(120))


def _run(*steps: tuple[str, dict[str, str], str]) -> list[Message]:
    msgs = [system("You are a coding agent."), user("Fix the parser.")]
    for n, (name, args, output) in enumerate(steps):
        call = ToolCall(f"c{n}", name, json.dumps(args))
        msgs += [assistant("", [call]), tool(call.id, output, name=name)]
    return msgs


def _by_dedupe(message: Message) -> bool:
    return (provenance(message) or {}).get("strategy") == "dedupe"


@pytest.fixture
def world():
    return {}


@given("an agent that reads src/parser.py, edits it, and reads it again")
def read_edit_read(world):
    world["messages"] = _run(
        ("read_file", {"path": "src/parser.py"}, FILE),
        ("edit_file", {"path": "src/parser.py", "old": "x + 7", "new": "x - 7"}, "ok"),
        ("read_file", {"path": "src/parser.py"}, FILE.replace("x + 7", "x - 7")),
    )


@given(parsers.parse('an agent that runs "{command}" twice with the same output'))
def twice(world, command):
    out = "On branch main\nnothing to commit, working tree clean\n" * 20
    world["messages"] = _run(
        ("bash", {"command": command}, out), ("bash", {"command": command}, out)
    )


@given(parsers.parse('an agent that runs "{command}" before and after a fix'))
def before_after(world, command):
    world["messages"] = _run(
        ("bash", {"command": command}, "FAILED tests/test_p.py::test_a - KeyError\n" * 20),
        ("bash", {"command": command}, "1 passed in 0.12s\n" * 40),
    )


@when("the default ladder compacts it just under its size")
def just_under(world):
    total = COUNTER.count_messages(world["messages"])
    world["result"] = default_pipeline(counter=COUNTER).compact(
        world["messages"], target=total - 10
    )
    world["out"] = world["result"].messages
    validate(world["out"])


@then("only the dedupe layer was applied")
def only_dedupe(world):
    assert [a.strategy for a in world["result"].applied] == ["dedupe"]


@then(parsers.parse("the first read says it was superseded by the read at step {step:d}"))
def superseded(world, step):
    assert f"superseded by the read at step {step}" in world["out"][3].content


@then("the first read can be recalled by the id it names")
def recallable(world):
    ref = provenance(world["out"][3])["replaces"][0]
    assert f"recall id {ref}" in world["out"][3].content
    assert find_original(ref, world["messages"]) == world["messages"][3]


@then("the second read is sent whole")
def second_whole(world):
    assert world["out"][7] == world["messages"][7]


@then(parsers.parse("the first run says the same call at step {step:d} returned the same output"))
def same_output(world, step):
    text = world["out"][3].content
    assert f"superseded by the same call at step {step}" in text
    assert "returned the same output" in text


@then("the dedupe layer made no pointer")
def no_pointer(world):
    assert not any(_by_dedupe(m) for m in world["out"])
    assert "dedupe" not in [a.strategy for a in world["result"].applied]
