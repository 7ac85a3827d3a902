"""When a drop-in hands off: the ``new_context`` call found in the converted history before a
model call, the handoff made once per call, a refusal kept for the drop-in to tell, and a
handoff made again for a compactor that lost it. Re-exported by
[`compaction.integrations.context_tools`][]."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, Final

from .._log import log
from ..handoff import NEW_CONTEXT, HandoffRefused, handoff_reply, take_handoff
from ..messages import Message

__all__ = [
    "MAX_REFUSALS",
    "hand_off_at",
    "hand_off_if_asked",
    "newest_new_context",
    "restore_handoff",
]

#: What a refused ``new_context`` answers begins with this (the hook then does not hand off).
_REFUSED: Final = handoff_reply(False, "")
#: Refusals a drop-in remembers to tell the model again (oldest first out).
MAX_REFUSALS: Final = 256


def _newest_step(messages: Sequence[Message]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            return index
    return None


#: The ``new_context`` calls each compactor has handed off (a retried call must not hand off
#: twice); weak, so a forgotten conversation's set goes with its compactor.
_HANDED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def hand_off_if_asked(
    compactor: Any, messages: Sequence[Message], refusals: dict[str, str] | None = None
) -> Any:
    """Hand off when the newest step of ``messages`` (the drop-in's converted history, before
    a model call) is a ``new_context`` call that was answered done and not handed off yet;
    answers the [`Handoff`][compaction.handoff.Handoff] or None. A refusal (another call
    unanswered) is logged, and put in ``refusals`` (call id -> what the tool should have
    answered) for a drop-in whose tool could not see the step, to tell the model there; the
    conversation goes on in the same window: compaction never fails a model call."""
    index = _newest_step(messages)
    return None if index is None else hand_off_at(compactor, messages, index, refusals)


def newest_new_context(messages: Sequence[Message], start: int = 0) -> int | None:
    """The index of the newest assistant message from ``start`` on that calls
    ``new_context`` (None: there is none)."""
    for index in range(len(messages) - 1, start - 1, -1):
        m = messages[index]
        if m.role == "assistant" and any(c.name == NEW_CONTEXT for c in m.tool_calls):
            return index
    return None


def hand_off_at(
    compactor: Any,
    messages: Sequence[Message],
    index: int,
    refusals: dict[str, str] | None = None,
    *,
    announce: bool = True,
) -> Any:
    """Hand off at the ``new_context`` call of ``messages[index]`` (see
    [`hand_off_if_asked`][]); with ``announce=False`` (a handoff made again for a compactor
    that lost it) no event is sent."""
    call = next((c for c in messages[index].tool_calls if c.name == NEW_CONTEXT), None)
    if call is None:
        return None
    handed = _HANDED.setdefault(compactor, set())
    if call.id in handed:
        return None
    end = index + 1
    while end < len(messages) and messages[end].role == "tool":
        end += 1
    answer = next((m for m in messages[index + 1 : end] if m.tool_call_id == call.id), None)
    if answer is None:
        return None  # not answered yet: the framework answers it before the next call
    handed.add(call.id)
    if answer.content.startswith(_REFUSED):
        return None
    try:
        return take_handoff(compactor, messages[:end], announce=announce)
    except HandoffRefused as exc:
        log.warning("integrations.handoff_refused", reason=str(exc), labels=compactor.labels)
        if refusals is not None:
            refusals[call.id] = handoff_reply(False, str(exc))
            while len(refusals) > MAX_REFUSALS:
                del refusals[next(iter(refusals))]
        return None


def restore_handoff(compactor: Any, messages: Sequence[Message], call_id: Any) -> Any:
    """Make again, quietly, the handoff of the ``new_context`` call ``call_id`` that the
    conversation's state records, for a compactor that never made it (the one that did was
    forgotten: ``max_threads``); answers the [`Handoff`][compaction.handoff.Handoff] or None.
    A handoff is a function of the history up to the call, so the same view comes back."""
    if not isinstance(call_id, str) or call_id in _HANDED.get(compactor, ()):
        return None
    for index in range(len(messages) - 1, -1, -1):
        m = messages[index]
        if m.role == "assistant" and any(c.id == call_id for c in m.tool_calls):
            return hand_off_at(compactor, messages, index, announce=False)
    _HANDED.setdefault(compactor, set()).add(call_id)  # edited away: not looked for again
    return None
