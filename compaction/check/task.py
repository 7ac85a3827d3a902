"""The original task, and whether a request still holds it.

The task is the first user message a person wrote: what a reader marked synthetic
(``meta["synthetic"]``: a harness's format-error reply, a reminder), a demonstration the
harness prepends (a reader's ``is_demo`` flag) and a note or summary a compaction left are
not. A request holds it verbatim, or cut in its middle with its first and last
``HEAD_TAIL_CHARS`` characters kept in one message (what
the last-resort fit does to an oversized task): a model that sees head and tail still knows
what it was asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..messages import Message

__all__ = ["HEAD_TAIL_CHARS", "is_demonstration", "original_task", "task_kept"]

#: A task kept only in part counts as kept when both its first and its last this many
#: characters are in one message of the result (a cut that keeps head and tail). A shorter
#: task must be kept verbatim.
HEAD_TAIL_CHARS: Final = 80
_STAND_IN: Final = frozenset({"note", "summary"})


def _provenance(message: Message) -> Mapping[str, Any] | None:
    record = message.meta.get("compaction")
    return record if isinstance(record, Mapping) else None


def is_demonstration(message: Message) -> bool:
    # SWE-agent opens with a demonstration trajectory as a user message (its reader keeps the
    # trajectory's own ``is_demo`` flag): an example of the interface, not the task.
    return any(isinstance(v, Mapping) and v.get("is_demo") is True for v in message.meta.values())


def original_task(messages: Sequence[Message]) -> Message | None:
    """The original task: the first user message a person wrote (not marked
    ``meta["synthetic"]`` by a reader, not a demonstration the harness prepends (a reader's
    ``is_demo`` flag), not a note or summary a compaction left); None when there is none."""
    for m in messages:
        if m.role != "user" or m.meta.get("synthetic") is True or is_demonstration(m):
            continue
        record = _provenance(m)
        if record is not None and record.get("kind") in _STAND_IN:
            continue
        return m
    return None


def task_kept(task: Message, result: Sequence[Message]) -> str | None:
    """``"verbatim"`` when a message of ``result`` has the task's text, ``"cut"`` when one holds
    its first and last ``HEAD_TAIL_CHARS`` characters (a
    cut that kept head and tail), else None."""
    text = task.content
    for m in result:
        if m is task or m.content == text:
            return "verbatim"
    if len(text) <= 2 * HEAD_TAIL_CHARS:
        return None
    head, tail = text[:HEAD_TAIL_CHARS], text[-HEAD_TAIL_CHARS:]
    for m in result:
        if len(m.content) < 2 * HEAD_TAIL_CHARS:
            continue
        at = m.content.find(head)
        if at >= 0 and m.content.find(tail, at + HEAD_TAIL_CHARS) >= 0:
            return "cut"
    return None
