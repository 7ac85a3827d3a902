"""The append-only message log of a session: ``messages.jsonl``.

Line 1 is a header (``{"format": "compaction.session", "version": 1, ...}``); every other
line is one record ``{"seq": n, "ts": "...", "message": {...}}`` with consecutive ``seq``.

A record is *committed* once its terminating newline is in the file. Appends happen under
the session lock, each batch in one write of whole lines, and are fsynced before ``add``
returns. So:

- a reader (which takes no lock) that meets an unterminated last line treats it as not yet
  written: it is either another process's append in progress or an append torn by a crash,
  and in both cases ``add`` has not returned for it;
- the next writer, holding the lock, knows no append is in progress, so an unterminated
  tail is a torn one: it moves those bytes to ``messages.jsonl.torn`` (kept, never thrown
  away) and truncates the log back to its last complete line before appending;
- a *complete* line that does not parse, or a ``seq`` out of order, is corruption and raises
  :class:`SessionFormatError` naming the file and line; nothing is skipped silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import attrs

from .._log import log
from ..messages import Message
from ..transcript import message_ref
from .codec import (
    FORMAT_VERSION,
    PREFIX,
    check_header,
    decode_message,
    encode_json,
    encode_message,
    format_ts,
    loads,
    parse_ts,
)
from .errors import SessionFormatError
from .files import append_bytes, atomic_write

__all__ = ["Entry", "Journal", "TORN_SUFFIX"]

TORN_SUFFIX: Final = ".torn"
_RECORD_FIELDS: Final = frozenset({"seq", "ts", "message"})


@attrs.frozen(slots=True)
class Entry:
    """One message of a session's raw history, with its sequence number and when it was added."""

    seq: int
    timestamp: datetime
    message: Message


def _line(data: dict[str, Any]) -> bytes:
    # json.dumps escapes newlines inside strings, so one record is exactly one line.
    return encode_json(data)


def header_line(session: str, created: datetime, first_seq: int) -> bytes:
    """The first line of a log."""
    return _line(
        {
            "format": PREFIX,
            "version": FORMAT_VERSION,
            "session": session,
            "created": format_ts(created),
            "first_seq": first_seq,
        }
    )


def record_line(entry: Entry) -> bytes:
    """The line storing ``entry``."""
    return _line(
        {
            "seq": entry.seq,
            "ts": format_ts(entry.timestamp),
            "message": encode_message(entry.message),
        }
    )


class Journal:
    """Reads ``messages.jsonl`` incrementally and appends to it (callers hold the lock to write)."""

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        self.path = path
        self.durable = durable
        self._reset(None)

    def _reset(self, identity: tuple[int, int] | None) -> None:
        self._identity = identity
        self._offset = 0
        self._lines = 0
        self._first_seq = 0
        self._created: datetime | None = None
        self._entries: list[Entry] = []
        self._ids: dict[str, int] = {}
        self._fingerprints: dict[str, int] = {}
        self._fingerprinted = 0

    # -- reading ----------------------------------------------------------------------------

    @property
    def entries(self) -> Sequence[Entry]:
        return self._entries

    @property
    def created(self) -> datetime | None:
        return self._created

    @property
    def first_seq(self) -> int:
        return self._first_seq

    @property
    def next_seq(self) -> int:
        return self._first_seq + len(self._entries)

    def exists(self) -> bool:
        return self.path.exists()

    def refresh(self) -> bytes:
        """Read whatever was committed since the last call; return the unterminated tail."""
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - closed below, after fstat
        except FileNotFoundError:
            self._reset(None)
            return b""
        with f:
            st = os.fstat(f.fileno())
            identity = (st.st_dev, st.st_ino)
            # clear() replaces the file (new inode); anything else only ever grows it.
            if identity != self._identity or st.st_size < self._offset:
                self._reset(identity)
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        if end:
            self._parse(data[:end])
        return data[end:]

    def _parse(self, block: bytes) -> None:
        lines = block.split(b"\n")[:-1]
        line_no = self._lines
        first_seq, created = self._first_seq, self._created
        entries: list[Entry] = []
        for raw in lines:
            line_no += 1

            def fail(reason: str, line_no: int = line_no) -> SessionFormatError:
                return SessionFormatError(self.path, reason, line=line_no)

            if not raw.strip():
                raise fail("empty line (expected one JSON record per line)")
            doc = loads(raw, fail)
            if line_no == 1:
                check_header(doc, PREFIX, fail)
                first_seq = doc.get("first_seq", 0)
                if not isinstance(first_seq, int) or isinstance(first_seq, bool) or first_seq < 0:
                    raise fail("header 'first_seq' must be a non-negative integer")
                created = parse_ts(doc.get("created"), fail)
                continue
            if not isinstance(doc, dict) or set(doc) != _RECORD_FIELDS:
                raise fail("a record must be an object with exactly seq, ts and message")
            expected = first_seq + len(self._entries) + len(entries)
            if doc["seq"] != expected:
                raise fail(
                    f"record seq {doc['seq']!r} out of order (expected {expected}): the log "
                    "was edited or two logs were concatenated"
                )
            entries.append(
                Entry(expected, parse_ts(doc["ts"], fail), decode_message(doc["message"], fail))
            )
        if self._lines == 0 and line_no == 0:
            return
        self._first_seq, self._created = first_seq, created
        base = len(self._entries)
        for i, entry in enumerate(entries):
            if entry.message.id is not None:
                self._ids.setdefault(entry.message.id, base + i)
        self._entries.extend(entries)
        self._lines = line_no
        self._offset += len(block)

    def find(self, ref: str) -> Entry | None:
        """The entry whose message has id ``ref``, or whose content fingerprint is ``ref``."""
        index = self._ids.get(ref)
        if index is None and ref.startswith("sha1:"):
            self._index_fingerprints()
            index = self._fingerprints.get(ref)
        return None if index is None else self._entries[index]

    def _index_fingerprints(self) -> None:
        # Provenance names a message without an id by its content fingerprint; our stored
        # messages all have ids, so we fingerprint them as they were before we assigned one.
        for i in range(self._fingerprinted, len(self._entries)):
            m = self._entries[i].message
            self._fingerprints.setdefault(message_ref(m.replace(id=None, tokens=m.tokens)), i)
        self._fingerprinted = len(self._entries)

    # -- writing (the caller holds the session lock) -----------------------------------------

    @staticmethod
    def create(
        path: Path,
        session: str,
        created: datetime,
        first_seq: int = 0,
        entries: Iterable[Entry] = (),
        *,
        durable: bool = True,
    ) -> None:
        """Atomically (re)place the log at ``path`` with a header and ``entries``."""
        data = header_line(session, created, first_seq) + b"".join(record_line(e) for e in entries)
        atomic_write(path, data, durable=durable)

    def append(self, session: str, messages: Sequence[Message], at: datetime) -> list[Entry]:
        """Append ``messages`` (ids assigned where missing); return the stored entries."""
        tail = self.refresh()
        if self._lines == 0:
            raise SessionFormatError(self.path, "the log has no header line")
        if tail:
            self._repair(tail)
        seq = self.next_seq
        entries: list[Entry] = []
        seen: set[str] = set()
        for message in messages:
            message_id = message.id
            if message_id is None:
                message_id = f"{session}-{seq}"
                message = message.replace(id=message_id, tokens=message.tokens)
            if message_id in self._ids or message_id in seen:
                raise ValueError(
                    f"message id {message_id!r} is already in session {session!r}: ids name "
                    "one message each, so recall stays unambiguous"
                )
            seen.add(message_id)
            entries.append(Entry(seq, at, message))
            seq += 1
        data = b"".join(record_line(e) for e in entries)
        append_bytes(self.path, data, durable=self.durable)
        base = len(self._entries)
        for i, entry in enumerate(entries):
            self._ids[entry.message.id] = base + i  # type: ignore[index]
        self._entries.extend(entries)
        self._lines += len(entries)
        self._offset += len(data)
        return entries

    def _repair(self, tail: bytes) -> None:
        torn = self.path.with_name(self.path.name + TORN_SUFFIX)
        append_bytes(torn, tail + b"\n", durable=self.durable)
        with open(self.path, "r+b") as f:
            f.truncate(self._offset)
            if self.durable:
                os.fsync(f.fileno())
        log.warning(
            "session.torn_line_repaired",
            path=str(self.path),
            kept_in=str(torn),
            bytes=len(tail),
        )
