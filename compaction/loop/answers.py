"""Running the tool calls of one reply, and recording each result as its call finishes.

A reply's results used to be stored in one write after its last call. When the turn stopped
between two calls (the approval hook raised, Ctrl-C, a killed process) the calls that had run
were not on record, and the documented retry ran them again: a payment made twice. Now the
reply is stored with its first result (never alone while nothing of it ran) and every later
result in a write of its own, so what ran is always on record and a retry continues from it.

A call left without a result when the turn stops is answered with a note (so the history
stays a valid conversation) and is never run again by the loop: it may have had its effect,
and only the model, told plainly, can judge whether to ask for it again.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import attrs

from .._log import log
from .._redact import describe_error
from ..messages import Message, tool
from .approval import ApproveTool
from .calls import Step
from .history import History
from .results import _Turn
from .tools import Tool

__all__ = ["LOST", "Recorder", "answer_calls"]

NOT_RUN = "error: not run: the turn stopped ({error}) before this call ran"
INTERRUPTED = (
    "error: interrupted: the turn stopped ({error}) while this call ran; it may have had its "
    "effect, in part or in whole. Check before calling it again"
)
#: For the calls a run killed outright left unanswered (the next run closes them).
LOST = (
    "error: interrupted: the run stopped before this call's result was recorded; it may have "
    "had its effect, in part or in whole. Check before calling it again"
)


@attrs.define(slots=True)
class Recorder:
    """Where a step's messages go: the loop's history (None for a run that stands alone, which
    records nothing), the run so far, and the request being built."""

    history: History | None
    turn: _Turn
    messages: list[Message]
    agent: str

    def store(self, unstored: list[Message]) -> None:
        """Append ``unstored`` in one write, then forget it (it is stored now)."""
        stored = self.history.record(*unstored) if self.history is not None else tuple(unstored)
        if unstored[0].role == "assistant":
            self.turn.reply = stored[0]
        self.messages.extend(stored)
        self.turn.added.extend(stored)
        unstored.clear()

    def close(self, unstored: list[Message], running: str | None, exc: BaseException) -> None:
        """Record what ran of a reply when the turn stops in the middle of it."""
        if self.history is None:
            return
        error = describe_error(exc, text=False)
        try:
            if unstored:  # the reply itself, stopped while its first call was running
                self.store(unstored)
            texts = {running: INTERRUPTED.format(error=error)} if running is not None else {}
            closed = self.history.close(texts, NOT_RUN.format(error=error))
            self.messages.extend(closed)
            self.turn.added.extend(closed)
        except Exception as failure:  # the next run closes the reply (TurnLoop._turn)
            log.warning("loop.reply_not_closed", error=failure, agent=self.agent)


async def answer_calls(
    reply: Message,
    calls: Step,
    recorder: Recorder,
    tools: Mapping[str, Tool],
    approve: ApproveTool | None,
    shared: MutableMapping[str, Any],
    sync: bool,
) -> Message:
    """Run the calls ``reply`` asked for, storing each result as its call finishes; answers the
    reply as stored."""
    unstored: list[Message] = [reply]
    turn = recorder.turn
    for call in reply.tool_calls:
        try:
            text = await calls.call_tool(tools, approve, call, shared, turn.changes, sync)
        except BaseException as exc:
            # Nothing of the reply ran (its first call was refused by a raising hook): nothing
            # is stored and a retry asks the model again. Otherwise the rest is closed.
            if not unstored or calls.running is not None:
                recorder.close(unstored, calls.running, exc)
            raise
        unstored.append(tool(call.id, text, name=call.name))
        recorder.store(unstored)
    if unstored:  # an answer without calls
        recorder.store(unstored)
    assert turn.reply is not None
    return turn.reply
