"""A slow model summary in the background: the turn returns before the summariser finishes,
what is swapped in is valid and within the window even when the conversation grew past the
mark while it was out, and a sub-agent started meanwhile stays paired with its result.

The summariser waits on an Event the test holds; nothing here reads a clock to decide."""

from __future__ import annotations

import json
import threading

from compaction import CompactionPipeline, Compactor, Message, ToolCall
from compaction.background import Background
from compaction.memory.transcript import provenance
from compaction.strategies.fit import Fit
from compaction.strategies.summary import Summary
from compaction.strategies.tool_results import ToolResults
from compaction.validate import validate

WINDOW = 6_000


class Gated:
    """A model summariser that answers only once the test opens its gate."""

    model_call = True

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.finished = threading.Event()

    def __call__(self, transcript: str, instructions: str) -> str:
        self.entered.set()
        if not self.gate.wait(timeout=60):
            raise RuntimeError("the test never opened the gate")
        self.finished.set()
        return "Summary of the earlier work: every module read, m3 holds the bug."


def _grow(agent: list[Message], i: int) -> None:
    call = ToolCall(f"c{i}", "read", json.dumps({"path": f"m{i}.py"}))
    thinking = f"Step {i}: weighing module m{i} against the plan. " * 25
    agent.append(Message("assistant", thinking, tool_calls=(call,)))
    agent.append(Message("tool", f"# m{i}\n" + "value = compute(x)\n" * 10, tool_call_id=f"c{i}"))


def _start() -> tuple[Gated, Background, Compactor, list[Message], int]:
    summarizer = Gated()
    background = Background(start_at=0.5)
    ladder = CompactionPipeline().use(ToolResults()).use(Summary(summarizer)).run(Fit())
    compactor = Compactor(ladder, WINDOW, compact_at=0.8, compact_to=0.4, background=background)
    agent = [Message("system", "You are an agent."), Message("user", "Review every module.")]
    i = 0
    while not background.running and i < 60:
        _grow(agent, i)
        i += 1
        compactor.before_call(agent)
    assert summarizer.entered.wait(30) and background.running
    return summarizer, background, compactor, agent, i


def _finish(summarizer: Gated, background: Background) -> None:
    summarizer.gate.set()
    assert summarizer.finished.wait(30)
    job = background._job
    assert job is not None
    job.work.result(timeout=30)  # the ladder around the summariser is done too


def _fits(compactor: Compactor, request: object) -> None:
    validate(request)  # type: ignore[arg-type]
    assert compactor.counter.count_messages(request) <= WINDOW  # type: ignore[arg-type]


def test_a_summary_back_after_the_conversation_grew_past_the_mark_is_sent_within_the_window():
    summarizer, background, compactor, agent, i = _start()
    # The summary is out: the agent goes on, and every call returns while the summariser has
    # not finished.
    for _ in range(3):
        _grow(agent, i)
        i += 1
        request = compactor.before_call(agent)
        assert not summarizer.finished.is_set()
        _fits(compactor, request)
    calls = compactor.stats.calls
    # Then a burst of results lands between two calls (parallel tools, a sub-agent's report).
    for _ in range(12):
        _grow(agent, i)
        i += 1
    _finish(summarizer, background)
    request = compactor.before_call(agent)
    assert background.stats.applied == 1
    assert "summary" in [(provenance(m) or {}).get("kind") for m in request]
    # what the summary stands for plus the burst is over the mark: the free layers took the
    # rest off in the same call, and it is one call
    _fits(compactor, request)
    assert compactor.counter.count_messages(request) < compactor.threshold
    assert compactor.stats.calls == calls + 1
    compactor.close()


def test_a_sub_agent_started_while_the_summary_is_out_stays_paired_with_its_result():
    summarizer, background, compactor, agent, _ = _start()
    task = ToolCall("agent_1", "Task", {"description": "Check m3", "prompt": "Read m3.py"})
    agent.append(Message("assistant", "Starting a helper.", tool_calls=(task,)))
    request = compactor.before_call(agent)  # the parent compacts while its sub-agent is out
    assert request[-1] is agent[-1] and not summarizer.finished.is_set()
    _finish(summarizer, background)
    agent.append(Message("tool", "m3 divides by zero on empty input", tool_call_id="agent_1"))
    request = compactor.before_call(agent)
    assert background.stats.applied == 1
    assert "summary" in [(provenance(m) or {}).get("kind") for m in request]
    assert request[-2] is agent[-2] and request[-1] is agent[-1]
    _fits(compactor, request)
    compactor.close()
