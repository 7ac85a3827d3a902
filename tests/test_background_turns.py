"""A slow model summary in the background: the turn returns before the summariser finishes,
what is swapped in is valid and within the window even when the conversation grew past the
mark while it was out, and a sub-agent started meanwhile stays paired with its result.

The summariser waits on an Event the test holds; nothing here reads a clock to decide."""

from __future__ import annotations

from compaction import Compactor, Message, ToolCall
from compaction.background import Background
from compaction.memory.transcript import provenance
from compaction.validate import validate

from .background_parts import WINDOW, Gated, grow, ladder


def _start() -> tuple[Gated, Background, Compactor, list[Message], int]:
    summarizer = Gated()
    background = Background(start_at=0.5)
    compactor = Compactor(
        ladder(summarizer), WINDOW, compact_at=0.8, compact_to=0.4, background=background
    )
    agent = [Message("system", "You are an agent."), Message("user", "Review every module.")]
    i = 0
    while not background.running and i < 60:
        grow(agent, i)
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
        grow(agent, i)
        i += 1
        request = compactor.before_call(agent)
        assert not summarizer.finished.is_set()
        _fits(compactor, request)
    calls = compactor.stats.calls
    # Then a burst of results lands between two calls (parallel tools, a sub-agent's report).
    for _ in range(12):
        grow(agent, i)
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
