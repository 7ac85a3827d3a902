"""Steps for features/summary.feature: the terminal's behaviour, against the public API.

The free layer is the real ToolResults strategy; the summarisers are small callables (the
protocol is "any callable"), so what fails and how is exact.
"""

from __future__ import annotations

import threading

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import ApproximateCounter, CompactionPipeline, ToolCall, events, validate
from compaction.memory.transcript import is_note, message_ref, parse, provenance
from compaction.messages import assistant, system, tool, user
from compaction.strategies.summary import Summary

tool_results = pytest.importorskip("compaction.strategies.tool_results")

scenarios("summary.feature")


class Summariser:
    def __init__(self, how: str) -> None:
        self.how = how
        self.calls = 0
        self.release = threading.Event()

    def __call__(self, transcript: str, instructions: str) -> str:
        self.calls += 1
        if self.how == "raises an error":
            raise ConnectionError("summariser endpoint down")
        if self.how == "answers nothing":
            return ""
        if self.how == "answers something longer":
            return transcript * 2
        if self.how == "does not answer in time":
            self.release.wait(30)
        return "## Objective\nFix the parsers.\n## Outstanding\nRun the tests."


@pytest.fixture
def world():
    state = {"counter": ApproximateCounter(), "failed": []}

    def on_failed(sender, **kw):
        state["failed"].append((sender, kw))

    events.failed.connect(on_failed)
    yield state
    events.failed.disconnect(on_failed)
    if "summariser" in state:
        state["summariser"].release.set()


@given("a conversation of 3 tasks with 2 tool steps each and large tool outputs")
def conversation(world):
    msgs = [system("You are a coding agent.")]
    for t in range(3):
        msgs.append(user(f"Task {t}: fix the parser in src/p{t}.py"))
        for s in range(2):
            cid = f"t{t}s{s}"
            msgs.append(
                assistant(f"Looking at part {s}.", [ToolCall(cid, "bash", {"command": "cat f"})])
            )
            msgs.append(tool(cid, "line of output\n" * 80, name="bash"))
    world["messages"] = msgs
    world["before"] = world["counter"].count_messages(msgs)


@given("a summariser that answers a short summary")
def short_summariser(world):
    world["summariser"] = Summariser("short")


@given(parsers.parse("a summariser that {how}"))
def failing_summariser(world, how):
    world["summariser"] = Summariser(how)


@given("a ladder of ToolResults then a Summary terminal")
def ladder(world):
    world["summary"] = Summary(world["summariser"], keep_steps=1, timeout=0.1)
    world["pipeline"] = (
        CompactionPipeline().use(tool_results.ToolResults, keep_steps=1).run(world["summary"])
    )


@given("a Summary strategy on its own")
def alone(world):
    world["summary"] = Summary(world["summariser"], keep_steps=1, timeout=0.1)
    world["pipeline"] = CompactionPipeline().run(world["summary"])


def _compact(world, percent: int) -> None:
    target = world["before"] * percent // 100
    world["target"] = target
    world["result"] = world["pipeline"].compact(
        world["messages"], target=target, counter=world["counter"]
    )


@when(parsers.parse("the conversation is compacted to {percent:d}% of its size"))
def compact_once(world, percent):
    _compact(world, percent)


@when(parsers.parse("the conversation is compacted to {percent:d}% of its size {n:d} times"))
def compact_n(world, percent, n):
    for _ in range(n):
        _compact(world, percent)


@when("the breaker is reset")
def reset(world):
    world["summary"].reset()


@then("the conversation fits the target")
def fits(world):
    assert world["result"].fits, (world["result"].after, world["target"])


@then("the summariser was never called")
def never_called(world):
    assert world["summariser"].calls == 0


@then("the summariser was called once")
def called_once(world):
    assert world["summariser"].calls == 1


@then(parsers.parse("the summariser was called {n:d} times"))
def called_n(world, n):
    assert world["summariser"].calls == n


@then("the original task is kept verbatim and a summary stands where its steps were")
def summary_in_place(world):
    out = world["result"].messages
    # the original task (the first request the person wrote) is protected
    assert out[1] == world["messages"][1]
    summary = out[2]
    assert is_note(summary) and summary.role == "user"
    record = provenance(summary)
    assert record["strategy"] == "summary" and record["kind"] == "summary"
    first_steps = world["messages"][2:6]
    # it replaced the first task's steps, as rewritten by the free layer above it
    assert set(record["replaces"]) >= {message_ref(first_steps[0])}
    assert "Fix the parsers." in summary.content


@then("the system message, the task anchor and the newest step are kept as they were")
def kept(world):
    msgs, out = world["messages"], world["result"].messages
    assert out[0] == msgs[0]
    assert msgs[-5] in out  # the last task's request
    assert tuple(out[-2:]) == tuple(msgs[-2:])


@then("the summary is not taken for the task anchor")
def not_anchor(world):
    out = world["result"].messages
    t = parse(out)
    assert out[t.groups[t.anchor].start] == world["messages"][-5]


@then("the result is a valid conversation")
def valid(world):
    validate(world["result"].messages)


@then("the conversation is unchanged")
def unchanged(world):
    assert world["result"].messages == tuple(world["messages"])
    assert not world["result"].changed


@then("a failure event was emitted for the summary strategy")
def failure_event(world):
    stages = [(s.name, kw["stage"]) for s, kw in world["failed"]]
    assert ("summary", "summarize") in stages


@then("the breaker is open")
def breaker_open(world):
    assert world["summary"].breaker_open


@then("no failure event was emitted")
def no_failure_event(world):
    assert world["failed"] == []


@then(parsers.parse('the summary is skipped with the reason "{reason}"'))
def skipped_with(world, reason):
    assert [(d.strategy, d.reason) for d in world["result"].skipped] == [("summary", reason)]
