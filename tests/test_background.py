"""A model summary started early, off the turn, and swapped in later: no call waits for it,
every request stays valid and within the window, and a summary that no longer applies is
discarded. The summariser is gated by an event, so "no call waits" is shown by the calls
returning while it is still held, not by a clock."""

from __future__ import annotations

import asyncio
import time

import pytest

from compaction import CompactionPipeline, Compactor, Message, Strategy
from compaction.background import Background
from compaction.memory.offered import offered
from compaction.strategies.fit import Fit
from compaction.strategies.summary import Summary
from compaction.strategies.tool_results import ToolResults
from compaction.validate import validate

from .background_parts import WINDOW, Gated, grow, ladder


def _wait(predicate, seconds: float = 30) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_no_call_waits_and_the_summary_is_swapped_in_when_ready() -> None:
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
    assert summarizer.entered.wait(10) and background.running
    # The summary is held: the turn goes on, compacting with the free layers when it must.
    for _ in range(3):
        grow(agent, i)
        i += 1
        request = compactor.before_call(agent)
        validate(request)
        assert compactor.counter.count_messages(request) <= WINDOW
        assert background.running and not summarizer.gate.is_set()
    assert summarizer.calls == 1
    summarizer.gate.set()
    assert _wait(lambda: not background.running)
    grow(agent, i)
    request = compactor.before_call(agent)
    validate(request)
    kinds = [(m.meta.get("compaction") or {}).get("kind") for m in request]
    assert "summary" in kinds and background.stats.applied == 1
    assert request[-2:] == tuple(agent[-2:])  # what was appended since follows the summary
    compactor.close()


def test_a_summary_of_another_conversation_is_discarded_and_close_cancels() -> None:
    summarizer = Gated()
    background = Background(start_at=0.5)
    compactor = Compactor(ladder(summarizer), WINDOW, compact_at=0.8, background=background)
    agent = [Message("system", "You are an agent."), Message("user", "Review every module.")]
    i = 0
    while not background.running and i < 60:
        grow(agent, i)
        i += 1
        compactor.before_call(agent)
    summarizer.gate.set()
    assert _wait(lambda: not background.running)
    other = [Message("system", "You are an agent."), Message("user", "Something else.")]
    compactor.before_call(other)
    assert background.stats.discarded == 1 and background.stats.applied == 0
    compactor.close()
    assert not background.running
    with pytest.raises(ValueError, match="below"):
        Compactor(ladder(Gated()), WINDOW, compact_at=0.5, background=Background(0.6))


def test_from_an_event_loop_the_summary_is_a_task() -> None:
    import asyncio

    asyncio.run(_from_an_event_loop())


async def _from_an_event_loop() -> None:
    import asyncio

    class Async:
        model_call = True

        def __init__(self) -> None:
            self.gate = asyncio.Event()

        async def __call__(self, transcript: str, instructions: str) -> str:
            await self.gate.wait()
            return "Summary: earlier modules were read."

    summarizer = Async()
    pipeline = ladder(summarizer)
    background = Background(start_at=0.5)
    compactor = Compactor(pipeline, WINDOW, compact_at=0.8, background=background)
    agent = [Message("system", "You are an agent."), Message("user", "Review every module.")]
    i = 0
    while not background.running and i < 60:
        grow(agent, i)
        i += 1
        request = await compactor.abefore_call(agent)
        validate(request)
        assert compactor.counter.count_messages(request) <= WINDOW
    for _ in range(2):  # the turn goes on while the summary is held
        await asyncio.sleep(0)
        grow(agent, i)
        i += 1
        request = await compactor.abefore_call(agent)
        validate(request)
    assert background.running
    summarizer.gate.set()
    for _ in range(100):
        await asyncio.sleep(0.01)
        if not background.running:
            break
    grow(agent, 99)
    request = await compactor.abefore_call(agent)
    assert background.stats.applied == 1
    assert any((m.meta.get("compaction") or {}).get("kind") == "summary" for m in request)


class Told(Strategy):
    """A layer that declines, recording which memory tools its notes would name."""

    name = "told"

    def __init__(self) -> None:
        self.seen: list[tuple[str, ...] | None] = []

    def rewrite(self, messages, *, target, counter):  # type: ignore[no-untyped-def]
        found = offered()
        self.seen.append(None if found is None else tuple(sorted(found)))
        return None


@pytest.mark.parametrize("asynchronous", [False, True])
def test_layers_run_in_the_background_are_told_the_memory_tools_offered(
    asynchronous: bool,
) -> None:
    """The summary's ladder runs on another thread (or task), and the free layers again after
    the swap: each layer is told which memory tools the model has, as on the turn's own runs,
    so its notes say which tools reach what they replaced."""
    summarizer = Gated()
    told = Told()
    pipeline = CompactionPipeline().use(ToolResults()).use(told)
    pipeline = pipeline.use(Summary(summarizer)).run(Fit())
    tools = [
        {"type": "function", "function": {"name": "recall", "parameters": {}}},
        {"type": "function", "function": {"name": "bash", "parameters": {}}},
    ]
    background = Background(start_at=0.5)
    compactor = Compactor(
        pipeline, WINDOW, compact_at=0.8, compact_to=0.4, background=background, tools=tools
    )
    agent = [Message("system", "You are an agent."), Message("user", "Review every module.")]

    async def steps() -> None:
        i = 0
        while not background.running and i < 60:
            grow(agent, i)
            i += 1
            await compactor.abefore_call(agent) if asynchronous else compactor.before_call(agent)
        summarizer.gate.set()
        for _ in range(600):
            if not background.running:
                break
            await asyncio.sleep(0.01)
        for j in range(i, i + 8):  # past the mark again: the free layers run after the swap
            grow(agent, j)
            await compactor.abefore_call(agent) if asynchronous else compactor.before_call(agent)

    asyncio.run(steps())
    compactor.close()
    assert background.stats.applied >= 1
    assert told.seen and set(told.seen) == {("recall",)}
