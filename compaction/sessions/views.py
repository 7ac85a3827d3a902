"""A compacted view's rules: what of the history it covers, the document stored for it, and
the view as sent (repaired when a crash left a call unanswered).

Kept apart from session.py, which holds the locking and the calls: these are the checks a
view must pass whatever store it goes to, so a view that would lose a message (one it stands
in for that the history does not hold) is refused before any write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._log import log
from ..memory.transcript import is_compaction_output, message_ref, provenance
from ..messages import Message
from .codec import encode_message, format_ts, now
from .history import History

__all__ = ["repaired", "view_document"]


def view_document(
    name: str, view: Sequence[Message], history: History, based_on: int | None
) -> tuple[dict[str, Any], int | None, int]:
    """The document stored for ``view`` of session ``name``'s ``history``, the oldest ``seq``
    it stands for (None: none) and the ``seq`` it covers up to (``through_seq``: the newest
    message it holds or stands for, plus one; the history's end when it holds none).

    Every message a view stands in for (``meta["compaction"]["replaces"]``) must be in the
    history, so that it can be recalled (ValueError naming it otherwise); ``based_on`` (how
    much history the view was computed from) must lie between what it covers and the
    history's length, and defaults to what it covers."""
    covered = -1
    oldest: int | None = None
    for i, item in enumerate(view):
        record = provenance(item)
        refs = list(record.get("replaces", ())) if record is not None else []
        seqs = []
        for ref in refs:
            entry = history.find(ref) if isinstance(ref, str) else None
            if entry is None:
                raise ValueError(
                    f"view message {i} replaces {ref!r}, which is not in the history "
                    f"of session {name!r}: storing this view would lose it"
                )
            seqs.append(entry.seq)
        if not is_compaction_output(item):
            entry = history.find(message_ref(item))
            if entry is not None:
                seqs.append(entry.seq)
        for seq in seqs:
            covered = max(covered, seq)
            oldest = seq if oldest is None else min(oldest, seq)
    through = covered + 1 if covered >= 0 else history.next_seq
    if based_on is None:
        based_on = through
    elif (
        not isinstance(based_on, int)
        or isinstance(based_on, bool)
        or not through <= based_on <= history.next_seq
    ):
        raise ValueError(
            f"based_on={based_on!r} must be an int from {through} (the newest message "
            f"the view covers, plus one) to {history.next_seq} (the history's length)"
        )
    body = {
        "updated": format_ts(now()),
        "through_seq": through,
        "based_on": based_on,
        "messages": [encode_message(m) for m in view],
    }
    return body, oldest, through


def repaired(name: str, messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """``messages`` as a provider accepts them: a tool call whose result was never stored (a
    process killed mid-tool) gets an explicit "no result recorded" answer, logged; anything
    else is kept as given."""
    from ..formats.repair import repair  # lazily: only the view needs it

    fixed, repairs = repair(messages)
    # Unanswered calls are what a crash leaves; a view stored on purpose is kept as given.
    if not any(r.kind == "no_result" for r in repairs):
        return messages
    if repairs:
        log.warning(
            "session.view_repaired",
            session=name,
            repairs=[f"{r.kind} {r.call_id}" for r in repairs],
        )
    return fixed
