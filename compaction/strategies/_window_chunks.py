"""What the sliding window may drop, in drop order, and the conversation it leaves.

Kept apart from ``sliding_window.py`` so that module holds the window's policy (when it
applies, how far it cuts, the note it leaves) and this one the bookkeeping over groups. Both
are integer arithmetic on counts taken once per message.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..memory.transcript import Transcript, is_person_written
from ..messages import Message
from ._window_notes import Chunk

__all__ = ["build", "drop_order"]


def build(transcript: Transcript, chunks: Sequence[Chunk], note: Message | None) -> list[Message]:
    """The kept messages in order, with ``note`` where the first dropped message was."""
    msgs = transcript.messages
    gone: set[int] = set()
    for chunk in chunks:
        gone.update(chunk.groups)
    out: list[Message] = list(msgs[: transcript.system_end])
    placed = note is None
    for index, group in enumerate(transcript.groups):
        if index in gone:
            if not placed:
                # Between two whole groups a user message is always valid.
                out.append(note)  # type: ignore[arg-type]
                placed = True
            continue
        out.extend(msgs[group.start : group.end])
    return out


def drop_order(
    transcript: Transcript, counts: Sequence[int], *, window_size: int | None, keep_steps: int
) -> list[Chunk]:
    """What may be dropped, in drop order, one group per chunk (the finest grain that
    keeps a call with its results): history, oldest first; then the current request's
    own oldest steps; and only then older person-written user messages, which are small
    and are what the person asked. Protected groups (the task, the newest person-written
    message, pinned ones) and the newest ``keep_steps`` steps are never in it."""
    groups = transcript.groups
    anchor = transcript.anchor
    protected = transcript.protected
    if window_size is not None and transcript.task not in transcript.pinned:
        # A fixed window is the caller's explicit contract on what stays (seed 000: a
        # window of 2 keeps the newest 2), so there the task goes like any older request.
        protected = protected - {transcript.task}
    # The newest keep_steps steps after the anchor (or of everything, without one) stay.
    first = 0 if anchor is None else anchor + 1
    cut = len(groups)
    seen = 0
    for index in range(len(groups) - 1, first - 1, -1):
        if groups[index].kind != "note":
            seen += 1
            if seen == keep_steps:
                cut = index
                break
    else:
        cut = first  # fewer steps than keep_steps: none of them may go
    history_end = cut if anchor is None else anchor
    msgs = transcript.messages

    # The person's newest messages are protected within their share (``words``); older
    # ones go with the history around them, oldest first: the ledger carries what they
    # said, sentence by sentence (a fixed window, which protects no words, still gives
    # them up last, as it always did).
    order: list[int] = []
    asked: list[int] = []
    last = bool(window_size is not None)
    for index in range(history_end):
        if index in protected:
            continue
        if last and groups[index].kind == "user" and is_person_written(msgs[groups[index].start]):
            asked.append(index)
        else:
            order.append(index)
    if anchor is not None:
        order.extend(i for i in range(anchor + 1, cut) if i not in protected)
    order.extend(asked)

    chunks: list[Chunk] = []
    for g in order:
        chunk = Chunk([g])
        group = groups[g]
        for i in range(group.start, group.end):
            m = msgs[i]
            chunk.tokens += counts[i]
            chunk.messages += 1
            chunk.chars += len(m.content) + sum(len(c.arguments) for c in m.tool_calls)
        chunk.notes_only = group.kind == "note"
        chunks.append(chunk)
    return chunks
