"""What the background-summary tests share: a summariser gated by an event the test holds,
the ladder it sits in, and an agent's step that grows the conversation.

Nothing here reads a clock to decide: a call that returns while the summariser is still held
is a call that did not wait for it."""

from __future__ import annotations

import json
import threading

from compaction import CompactionPipeline, Message, ToolCall
from compaction.strategies.fit import Fit
from compaction.strategies.summary import Summary
from compaction.strategies.tool_results import ToolResults

WINDOW = 6_000


class Gated:
    """A model summariser that answers only once the test opens its gate."""

    model_call = True

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.finished = threading.Event()
        self.calls = 0

    def __call__(self, transcript: str, instructions: str) -> str:
        self.calls += 1
        self.entered.set()
        if not self.gate.wait(timeout=60):
            raise RuntimeError("the test never opened the gate")
        self.finished.set()
        return "Summary of the earlier work: every module read, m3 holds the bug."


def ladder(summarizer: object) -> CompactionPipeline:
    """Tool-result clearing, then the summary: the assistant's long reasoning is what only a
    summary can shrink."""
    return CompactionPipeline().use(ToolResults()).use(Summary(summarizer)).run(Fit())


def grow(agent: list[Message], i: int) -> None:
    """One step of the agent: long reasoning, a read, and its result."""
    call = ToolCall(f"c{i}", "read", json.dumps({"path": f"m{i}.py"}))
    thinking = f"Step {i}: weighing module m{i} against the plan. " * 25
    agent.append(Message("assistant", thinking, tool_calls=(call,)))
    agent.append(Message("tool", f"# m{i}\n" + "value = compute(x)\n" * 10, tool_call_id=f"c{i}"))
