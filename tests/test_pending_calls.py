"""A call whose result has not come back yet (a sub-agent at work, a long tool) survives the
parent's compaction: no layer drops or cuts it, its result pairs with it when it comes, and the
ledger written meanwhile names it (tool, call id, task line).

The sub-agent calls are Claude Code's own ``Task`` calls from the shared real sessions; the
later result appended is the one the session recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import Compactor, Message, ToolCall
from compaction._pending import STAND_IN_KEY
from compaction.adapters.anthropic import to_anthropic
from compaction.adapters.openai import to_openai
from compaction.formats import load
from compaction.ladder import default_pipeline
from compaction.memory.agents import is_agent_call, task_line, waiting_on
from compaction.memory.transcript import provenance
from compaction.messages import assistant, system, tool, user
from compaction.strategies.dedupe import Dedupe
from compaction.strategies.fit import Fit
from compaction.strategies.sliding_window import SlidingWindow
from compaction.strategies.summary import Summary
from compaction.strategies.tool_results import ToolResults
from compaction.strategies.truncate import Truncate
from compaction.strategy import Strategy
from compaction.tokens import ApproximateCounter
from compaction.validate import problems, unanswered, validate

from .conftest import TRANSCRIPTS
from .conversations import conversations, texts
from .event_recorder import recording

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- provider shapes: what OpenAI and Anthropic check, on the payloads we would send ----------


def openai_ok(payload: list[dict[str, Any]]) -> None:
    """Every assistant ``tool_calls`` id is answered by the ``tool`` messages right after it,
    and every ``tool`` message answers a call of the assistant message before its run."""
    i = 0
    while i < len(payload):
        m = payload[i]
        assert m["role"] != "tool", f"openai: tool message {i} follows no call"
        i += 1
        wanted = {c["id"] for c in m.get("tool_calls") or ()}
        got = set()
        while i < len(payload) and payload[i]["role"] == "tool":
            assert payload[i]["tool_call_id"] in wanted, f"openai: message {i} answers no call"
            got.add(payload[i]["tool_call_id"])
            i += 1
        assert got == wanted, f"openai: calls {wanted - got} unanswered"


def anthropic_ok(messages: list[dict[str, Any]]) -> None:
    """Every ``tool_use`` block is answered by a ``tool_result`` in the very next (user)
    message, and every ``tool_result`` answers a ``tool_use`` of the message before."""
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        if uses:
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            assert nxt is not None and nxt["role"] == "user", "anthropic: tool_use at the end"
            answered = {b["tool_use_id"] for b in nxt["content"] if b.get("type") == "tool_result"}
            assert uses <= answered, f"anthropic: {uses - answered} unanswered"
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        if results:
            before = messages[i - 1]["content"] if i else []
            called = {
                b["id"] for b in before if isinstance(b, dict) and b.get("type") == "tool_use"
            }
            assert results <= called, f"anthropic: results {results - called} answer no call"


def sendable(messages: Sequence[Message]) -> None:
    validate(messages)
    openai_ok(to_openai(messages))
    anthropic_ok(to_anthropic(messages).messages)


def answered_later(messages: Sequence[Message], results: Sequence[Message]) -> list[Message]:
    """``messages`` with each of ``results`` put where it belongs: after the run of results
    that follows the call it answers (as the agent appends it when it comes)."""
    out = list(messages)
    for result in results:
        at = next(
            i for i, m in enumerate(out) if any(c.id == result.tool_call_id for c in m.tool_calls)
        )
        at += 1
        while at < len(out) and out[at].role == "tool":
            at += 1
        out.insert(at, result)
    return out


def ledgers(messages: Sequence[Message]) -> list[Message]:
    """The notes and summaries of ours (they carry a ledger; a harness's own summary read from
    a log does not)."""
    return [
        m
        for m in messages
        if (provenance(m) or {}).get("kind") in ("note", "summary")
        and "facts" in (provenance(m) or {})
    ]


# -- the real sessions: the parent compacts while its Task call is out ------------------------

SESSIONS = sorted(TRANSCRIPTS.glob("claude-code/*.jsonl")) if TRANSCRIPTS.is_dir() else []


def _task_calls(path: Path) -> list[tuple[list[Message], int, ToolCall, Message]]:
    messages = list(load(path).messages)
    found = []
    for i, m in enumerate(messages):
        for call in m.tool_calls:
            if is_agent_call(call):
                ids = {c.id for c in m.tool_calls}  # the step's results, as recorded
                results = [r for r in messages[i + 1 :] if r.tool_call_id in ids]
                found.append((messages, i, call, results))
    return found


CASES = [case for path in SESSIONS for case in _task_calls(path)]


def test_the_real_sessions_hold_sub_agent_calls() -> None:
    if not TRANSCRIPTS.is_dir():
        pytest.skip("real transcripts not present")
    assert len(CASES) >= 4  # every shared Claude Code session that starts a sub-agent


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[2].id)
def test_the_parent_compacts_while_its_sub_agent_is_out(case: Any) -> None:
    messages, at, call, results = case
    history = messages[: at + 1]  # the parent just started the sub-agent, and waits
    assert [c.id for c in unanswered(history)] == [
        call.id
        for call in history[-1].tool_calls
        if call.id not in {m.tool_call_id for m in history}
    ]
    counter = ApproximateCounter()
    size = counter.count_messages(history)
    compactor = Compactor(None, window=max(size // 4, 1_000), counter=counter)
    request = compactor.before_call(history)
    assert compactor.compacted and len(request) < len(history)
    # the step waiting on the sub-agent is there, as it was: same object, at the end
    assert request[-1] is history[-1]
    assert not [m for m in request if STAND_IN_KEY in m.meta]
    # the ledger names it: tool, call id, task line
    written = ledgers(request)
    assert written
    for ledger in written:
        assert (call.id, "Task", task_line(call), True) in provenance(ledger)["facts"]["waiting"]
        assert f"Task (call {call.id}): {task_line(call)}" in ledger.content
    # the sub-agent comes back: its result pairs with the kept call, the request is sendable
    grown = [*history, *results]
    later = compactor.before_call(grown)
    n = len(results)
    assert later[-n - 1] is history[-1]  # the results follow the kept call (a layer may cut them)
    assert [m.tool_call_id for m in later[-n:]] == [m.tool_call_id for m in results]
    sendable(later)
    # and the next compaction, with nothing open any more, no longer says it waits
    again = Compactor(None, window=max(size // 4, 1_000), counter=counter).before_call(grown)
    sendable(again)
    assert all("waiting" not in provenance(m)["facts"] for m in ledgers(again))


def test_a_sub_agent_out_in_the_middle_is_kept_and_answered_where_it_belongs() -> None:
    if not CASES:
        pytest.skip("real transcripts not present")
    # the session whose Task call comes early, with its result left out: the call is open in
    # the middle of a long run (the result appended later goes right after it)
    messages, at, call, results = min(CASES, key=lambda c: c[1])
    result = next(r for r in results if r.tool_call_id == call.id)
    history = [m for m in messages if m is not result]
    pipeline = default_pipeline()
    size = pipeline.counter.count_messages(history)
    for target in (size // 2, size // 10, size // 50, 200):
        out = pipeline.compact(history, target=target).messages
        assert sum(m is messages[at] for m in out) == 1, target
        sendable(answered_later(out, [result]))


# -- every strategy, alone and in a ladder, on small conversations ----------------------------

SUB_AGENT = ToolCall(
    "agent_1",
    "Task",
    {
        "description": "Find the flaky test",
        "prompt": "Run tests/test_io.py 20 times\n" + "p" * 3000,
    },
)


def long_run(steps: int = 12) -> list[Message]:
    msgs = [system("You are a coding agent."), user("make the suite pass")]
    for i in range(steps):
        # the same four commands again and again, with the same output (dedupe's work)
        msgs.append(assistant("", [ToolCall(f"c{i}", "bash", {"command": f"pytest -k t{i % 4}"})]))
        msgs.append(tool(f"c{i}", f"FAILED tests/test_x.py::t{i % 4}\n" + "x" * 1500, name="bash"))
    return msgs


def with_open_call(where: str) -> tuple[list[Message], Message, list[Message]]:
    """A run with a sub-agent out (and a parallel read answered beside it); ``where`` is
    "end" or "middle". Answers (history, the open step, its later result)."""
    msgs = long_run()
    step = assistant(
        "starting a helper", [SUB_AGENT, ToolCall("r1", "Read", {"file_path": "a.py"})]
    )
    sibling = tool("r1", "a" * 2000, name="Read")
    at = len(msgs) if where == "end" else 6
    msgs[at:at] = [step, sibling]
    return (
        msgs,
        step,
        [tool("agent_1", "the flaky test is t3: it reads a shared file", name="Task")],
    )


STRATEGIES: dict[str, Callable[[], Strategy]] = {
    "dedupe": Dedupe,
    "tool_results": lambda: ToolResults(min_tokens=0),
    "sliding_window": SlidingWindow,
    "summary": Summary,
    "fit": Fit,
    "truncate": lambda: Truncate(max_chars=100),
}


@pytest.mark.parametrize("where", ["end", "middle"])
@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_no_strategy_drops_or_cuts_an_open_call(name: str, where: str) -> None:
    msgs, step, results = with_open_call(where)
    counter = ApproximateCounter()
    total = counter.count_messages(msgs)
    for target in (total * 2 // 3, total // 4, 50):
        result = STRATEGIES[name]().compact(msgs, target=target, counter=counter)
        out = result.messages
        assert sum(m is step for m in out) == 1, (name, target)
        assert problems(out, pending={"agent_1"}) == []
        assert not [m for m in out if STAND_IN_KEY in m.meta]
        sendable(answered_later(out, results))
    # and the layer did work around it (every one of them can shrink this run)
    assert result.after < result.before, name


def test_the_ladder_compacts_around_an_open_call_in_both_flavours() -> None:
    msgs, step, results = with_open_call("end")
    counter = ApproximateCounter()
    pipeline = default_pipeline(counter=counter)
    target = counter.count_messages(msgs[-2:]) + 600  # the open step, and room for the rest
    sync = pipeline.compact(msgs, target=target)
    asyn = asyncio.run(pipeline.acompact(msgs, target=target))
    for r in (sync, asyn):
        assert r.messages[-2] is step and r.after < r.before and r.fits is not None
        sendable(answered_later(r.messages, results))
        (ledger,) = ledgers(r.messages)
        assert "Waiting on: Task (call agent_1): Find the flaky test" in ledger.content
    assert sync.messages == asyn.messages


def test_a_layer_that_drops_an_open_call_is_refused_loudly() -> None:
    class DropSteps(Strategy):  # valid output, much smaller: every tool step dropped
        name = "drop_steps"

        def rewrite(self, messages, *, target, counter):
            return [m for m in messages if m.role != "tool" and not m.tool_calls]

    msgs, _, _ = with_open_call("end")
    with recording() as seen:
        result = DropSteps().compact(msgs, target=10)
    assert result.messages == tuple(msgs) and not result.changed
    assert [(d.strategy, d.reason) for d in result.declined] == [("drop_steps", "invalid")]
    (failed,) = seen.of("failed")
    assert "waiting on its result" in str(failed["error"])


def test_invalid_input_beside_an_open_call_is_still_refused() -> None:
    msgs, _, _ = with_open_call("end")
    with pytest.raises(ValueError, match="answers no call"):
        default_pipeline().compact([*msgs, tool("ghost", "x")], target=10)


def test_the_ledger_names_sub_agents_first_and_every_open_call() -> None:
    calls = [
        ToolCall("b1", "bash", {"command": "make build\nmake test"}),
        ToolCall("s1", "spawn_agent", {"message": "  review the diff\n\nthen report"}),
        ToolCall("x1", "lookup", {"topic": "x" * 500}),
        ToolCall("k1", "run", {"subagent_type": "Explore", "prompt": "map the repo"}),
    ]
    lines = [(w.name, w.call_id, w.task, w.agent) for w in waiting_on(calls)]
    assert lines == [
        ("spawn_agent", "s1", "review the diff", True),
        ("run", "k1", "map the repo (Explore)", True),
        ("bash", "b1", "make build", False),
        ("lookup", "x1", "x" * 119 + "…", False),
    ]


# -- the property: at any target, the default ladder never removes or cuts an open call -------


@st.composite
def with_open_steps(draw: Any) -> tuple[list[Message], list[Message], list[Message]]:
    """A generated conversation with one or two open steps put at step boundaries anywhere
    (the end included), each with a text, an open call, maybe an answered sibling; answers
    (conversation, the open steps, their later results)."""
    msgs = draw(conversations(max_turns=4, max_steps=3))
    first = next((i for i, m in enumerate(msgs) if m.role != "system"), len(msgs))
    starts = [i for i in range(first, len(msgs) + 1) if i == len(msgs) or msgs[i].role != "tool"]
    open_steps: list[Message] = []
    later: list[Message] = []
    for k in range(draw(st.integers(1, 2))):
        at = draw(st.sampled_from(starts))
        call = ToolCall(
            f"open_{k}",
            draw(st.sampled_from(["Task", "bash", "spawn_agent"])),
            {"prompt": draw(texts)},
        )
        calls = [call]
        step: list[Message] = []
        if draw(st.booleans()):
            calls.append(ToolCall(f"side_{k}", "read_file", '{"path": "src/app.py"}'))
            step.append(tool(f"side_{k}", draw(texts), name="read_file"))
        head = assistant(draw(texts), calls)
        msgs[at:at] = [head, *step]
        starts = [i if i < at else i + 1 + len(step) for i in starts]
        open_steps.append(head)
        later.append(tool(call.id, "done", name=call.name))
    return msgs, open_steps, later


@PROPERTY
@given(data=with_open_steps(), share=st.floats(0.0, 1.2))
def test_an_open_call_is_never_removed_or_cut_by_the_default_ladder(
    data: Any, share: float
) -> None:
    msgs, open_steps, later = data
    counter = ApproximateCounter()
    before = list(msgs)
    target = max(int(counter.count_messages(msgs) * share), 1)
    result = default_pipeline(counter=counter).compact(msgs, target=target)
    out = result.messages
    assert msgs == before  # the caller's list is untouched
    for step in open_steps:
        assert sum(m is step for m in out) == 1
    assert not [m for m in out if STAND_IN_KEY in m.meta]
    assert {c.id for c in unanswered(out)} == {c.id for c in unanswered(msgs)}
    assert problems(out, pending={m.tool_call_id or "" for m in later}) == []
    assert result.after <= result.before
    sendable(answered_later(out, later))
