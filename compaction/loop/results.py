"""What a turn-loop run answers ([`LoopResult`][]), and what it has done so far."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ..messages import Message
from .context import ContextChange

__all__ = ["LoopResult"]


@attrs.frozen(slots=True)
class LoopResult:
    """One run.

    ``reply``: the last assistant message; ``messages``: the run's part of the conversation
    (the prompt, then every reply and tool result; a retried turn's prompt is the one stored
    by the first try, and what that try recorded is not repeated here); ``requests``: what each
    model call was sent (after compaction); ``stopped``: ``"answer"`` (the model answered
    without tool calls) or ``"max_steps"``; ``context_changes``: every change made to the
    shared context during the run, in order; ``context``: a copy of the context at the end.
    """

    reply: Message
    messages: tuple[Message, ...]
    requests: tuple[tuple[Message, ...], ...]
    stopped: Literal["answer", "max_steps"]
    context_changes: tuple[ContextChange, ...]
    context: dict[str, Any]

    @property
    def steps(self) -> int:
        """Model calls made."""
        return len(self.requests)


@attrs.define(slots=True)
class _Turn:
    """What one run has done so far (kept when it raises, for the ``turn_finished`` event)."""

    prompt: Message
    requests: list[tuple[Message, ...]] = attrs.field(factory=list)
    added: list[Message] = attrs.field(factory=list)
    changes: list[ContextChange] = attrs.field(factory=list)
    reply: Message | None = None  # the current step's reply, as stored
    stopped: Literal["answer", "max_steps"] = "max_steps"
