"""A session's raw history in memory: entries in sequence order, found again by id.

Every backend fills one of these incrementally (only what was added since the last read is
fetched), so a long session is read once per process, not once per call. ``cursor`` is the
backend's own bookmark (a file offset, a database epoch); nothing else looks at it.
``epoch`` names the session's generation: it changes when the history is cleared and when
the session is deleted and created again, so that a view computed from an older generation
can be told apart even where the sequence numbers (and so the ids) repeat.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

import attrs

from ..memory.transcript import message_ref
from ..messages import Message

__all__ = ["Entry", "History"]


@attrs.frozen(slots=True)
class Entry:
    """One message of a session's raw history, with its sequence number and when it was added."""

    seq: int
    timestamp: datetime
    message: Message


class History:
    """The entries read so far, with an index by message id (and by fingerprint, on demand)."""

    def __init__(self) -> None:
        self.reset()

    def reset(
        self,
        cursor: Any = None,
        first_seq: int = 0,
        created: datetime | None = None,
        epoch: str | None = None,
    ) -> None:
        """Forget everything (the session was cleared, deleted or replaced)."""
        self.cursor = cursor
        self.epoch = epoch
        self.first_seq = first_seq
        self.created = created
        self.entries: list[Entry] = []
        self._ids: dict[str, int] = {}
        self._fingerprints: dict[str, int] = {}
        self._fingerprinted = 0

    @property
    def next_seq(self) -> int:
        """The sequence number the next message will get."""
        return self.first_seq + len(self.entries)

    def extend(self, entries: Iterable[Entry]) -> None:
        """Add entries read or written after the ones held (consecutive ``seq`` expected)."""
        base = len(self.entries)
        for i, entry in enumerate(entries):
            if entry.message.id is not None:
                self._ids.setdefault(entry.message.id, base + i)
            self.entries.append(entry)

    def has_id(self, message_id: str) -> bool:
        return message_id in self._ids

    def find(self, ref: str) -> Entry | None:
        """The entry whose message has id ``ref``, or whose content fingerprint is ``ref``."""
        index = self._ids.get(ref)
        if index is None and ref.startswith("sha1:"):
            self._index_fingerprints()
            index = self._fingerprints.get(ref)
        return None if index is None else self.entries[index]

    def _index_fingerprints(self) -> None:
        # Provenance names a message without an id by its content fingerprint; our stored
        # messages all have ids, so we fingerprint them as they were before we assigned one.
        for i in range(self._fingerprinted, len(self.entries)):
            m = self.entries[i].message
            self._fingerprints.setdefault(message_ref(m.replace(id=None, tokens=m.tokens)), i)
        self._fingerprinted = len(self.entries)


def assign_ids(
    session: str,
    history: History,
    messages: Sequence[Message],
    first: int,
    at: datetime,
    taken: Collection[str] = (),
) -> list[Entry]:
    """Entries for ``messages`` from seq ``first`` on; an id already in ``history`` (or twice
    in the batch) is refused before anything is written.

    A message without an id gets ``"<session>-<seq>"``, or, when a caller already stored a
    message under that id (ids are free-form, and copying a session's tail keeps its ids),
    ``"<session>-<seq>.<k>"`` for the smallest free ``k``: an automatic id must never collide,
    or every later ``add`` would be refused for good. ``taken`` lists stored ids that
    ``history`` does not hold (a backend that checks ids in the database instead).
    """
    entries: list[Entry] = []
    chosen = {m.id for m in messages if m.id is not None}
    seen: set[str] = set()

    def free(candidate: str) -> bool:
        return not (
            candidate in chosen
            or candidate in seen
            or candidate in taken
            or history.has_id(candidate)
        )

    seq = first
    for message in messages:
        message_id = message.id
        if message_id is None:
            message_id = f"{session}-{seq}"
            k = 0
            while not free(message_id):
                k += 1
                message_id = f"{session}-{seq}.{k}"
            message = message.replace(id=message_id, tokens=message.tokens)
        if history.has_id(message_id) or message_id in seen:
            raise ValueError(
                f"message id {message_id!r} is already in session {session!r}: ids name "
                "one message each, so recall stays unambiguous"
            )
        seen.add(message_id)
        entries.append(Entry(seq, at, message))
        seq += 1
    return entries
