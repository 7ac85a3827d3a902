"""The append-only message log of a file session: ``messages.jsonl``.

Line 1 is a header (``{"format": "compaction.session", "version": 1, ...}``); every other
line is one record: ``{"seq": n, "ts": "...", "message": {...}}`` for one message, or
``{"seq": n, "ts": "...", "messages": [{...}, ...]}`` for a batch added in one call (seq n,
n+1, ...). A batch is one line so that it is committed whole or not at all: a tool call is
never kept without the results that came with it.

A record is *committed* once its terminating newline is in the file. Appends happen under
the session lock, one write per batch, fsynced before ``add`` returns (and cut back off if
the write fails part way). So:

- a reader (which takes no lock) that meets an unterminated last line treats it as not yet
  written: it is either another process's append in progress or an append torn by a crash,
  and in both cases ``add`` has not returned for it;
- the next writer, holding the lock, knows no append is in progress, so an unterminated
  tail is a torn one: it moves those bytes to ``messages.jsonl.torn`` (kept, never thrown
  away) and truncates the log back to its last complete line before appending;
- a *complete* line that does not parse, or a ``seq`` out of order, is corruption and raises
  [`SessionFormatError`][] naming the file and line; nothing is skipped silently.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from .._log import log
from ..messages import Message
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
from .files import NOFOLLOW, append_all_or_nothing, append_bytes, atomic_write
from .history import Entry, History, assign_ids

__all__ = ["TORN_SUFFIX", "append", "create", "refresh"]

TORN_SUFFIX: Final = ".torn"
# What open(O_NOFOLLOW) fails with on a symlink: ELOOP (Linux, macOS), EMLINK (FreeBSD).
_LINK_ERRORS: Final = (errno.ELOOP, errno.EMLINK)
_ONE: Final = frozenset({"seq", "ts", "message"})
_BATCH: Final = frozenset({"seq", "ts", "messages"})


def header_line(session: str, created: datetime, first_seq: int) -> bytes:
    """The first line of a log, with a new ``epoch``: every log written from scratch (a new
    session, a clear, an import) starts a new generation of the session."""
    return encode_json(
        {
            "format": PREFIX,
            "version": FORMAT_VERSION,
            "session": session,
            "created": format_ts(created),
            "first_seq": first_seq,
            "epoch": secrets.token_hex(16),
        }
    )


def record_line(entries: Sequence[Entry]) -> bytes:
    """The one line storing ``entries`` (consecutive, added together)."""
    # json.dumps escapes newlines inside strings, so one record is exactly one line.
    head: dict[str, Any] = {"seq": entries[0].seq, "ts": format_ts(entries[0].timestamp)}
    if len(entries) == 1:
        head["message"] = encode_message(entries[0].message)
    else:
        head["messages"] = [encode_message(e.message) for e in entries]
    return encode_json(head)


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
    data = header_line(session, created, first_seq) + b"".join(record_line([e]) for e in entries)
    atomic_write(path, data, durable=durable)


# The cursor a History keeps for a log: (device, inode), bytes read, lines read.
_Cursor = tuple[tuple[int, int], int, int]


def _not_followed(path: Path, exc: OSError) -> SessionFormatError:
    return SessionFormatError(
        path,
        f"cannot be opened safely ({exc.strerror}): a symbolic link where a session file "
        "should be is never followed; remove it",
    )


def refresh(path: Path, history: History) -> bytes:
    """Read what was committed since ``history`` last read; return the unterminated tail."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | NOFOLLOW)
    except FileNotFoundError:
        history.reset()
        return b""
    except OSError as exc:
        if exc.errno in _LINK_ERRORS:  # a symlink planted in place of the log
            raise _not_followed(path, exc) from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        identity = (st.st_dev, st.st_ino)
        cursor: _Cursor | None = history.cursor
        # clear() replaces the file (new inode); anything else only ever grows it.
        if cursor is None or cursor[0] != identity or st.st_size < cursor[1]:
            history.reset((identity, 0, 0))
            cursor = history.cursor
        assert cursor is not None
        f.seek(cursor[1])
        data = f.read()
    end = data.rfind(b"\n") + 1
    if end:
        _parse(path, history, data[:end])
    return data[end:]


def _parse(path: Path, history: History, block: bytes) -> None:
    identity, offset, line_no = history.cursor
    first_seq, created, epoch = history.first_seq, history.created, history.epoch
    next_seq = history.next_seq
    entries: list[Entry] = []
    for raw in block.split(b"\n")[:-1]:
        line_no += 1

        def fail(reason: str, line_no: int = line_no) -> SessionFormatError:
            return SessionFormatError(path, reason, line=line_no)

        if not raw.strip():
            raise fail("empty line (expected one JSON record per line)")
        doc = loads(raw, fail)
        if line_no == 1:
            check_header(doc, PREFIX, fail)
            first_seq = doc.get("first_seq", 0)
            if not isinstance(first_seq, int) or isinstance(first_seq, bool) or first_seq < 0:
                raise fail("header 'first_seq' must be a non-negative integer")
            created = parse_ts(doc.get("created"), fail)
            epoch = doc.get("epoch")
            if not isinstance(epoch, str):
                # Logs written before epochs existed: their header still differs between
                # generations (a clear rewrites it with a new epoch from then on).
                epoch = f"{doc.get('created')}/{first_seq}"
            next_seq = first_seq
            continue
        if not isinstance(doc, dict) or set(doc) not in (_ONE, _BATCH):
            raise fail("a record must be an object with exactly seq, ts and message (or messages)")
        if doc["seq"] != next_seq:
            raise fail(
                f"record seq {doc['seq']!r} out of order (expected {next_seq}): the log "
                "was edited or two logs were concatenated"
            )
        ts = parse_ts(doc["ts"], fail)
        items = [doc["message"]] if "message" in doc else doc["messages"]
        if not isinstance(items, list) or not items:
            raise fail("'messages' must be a non-empty list")
        for item in items:
            entries.append(Entry(next_seq, ts, decode_message(item, fail)))
            next_seq += 1
    if line_no == 0:
        return
    history.first_seq, history.created, history.epoch = first_seq, created, epoch
    history.extend(entries)
    history.cursor = (identity, offset + len(block), line_no)


def append(
    path: Path,
    session: str,
    history: History,
    messages: Sequence[Message],
    at: datetime,
    *,
    durable: bool,
) -> list[Entry]:
    """Append ``messages`` as one record (the caller holds the session lock)."""
    tail = refresh(path, history)
    if history.cursor is None or history.cursor[2] == 0:
        raise SessionFormatError(path, "the log has no header line")
    if tail:
        _repair(path, history, tail, durable)
    entries = assign_ids(session, history, messages, history.next_seq, at)
    data = record_line(entries)
    identity, offset, lines = history.cursor
    append_all_or_nothing(path, data, offset, durable=durable)
    history.extend(entries)
    history.cursor = (identity, offset + len(data), lines + 1)
    return entries


def _repair(path: Path, history: History, tail: bytes, durable: bool) -> None:
    torn = path.with_name(path.name + TORN_SUFFIX)
    try:
        append_bytes(torn, tail + b"\n", durable=durable)
    except OSError as exc:
        if exc.errno in _LINK_ERRORS:  # a planted symlink, never followed
            raise _not_followed(torn, exc) from None
        raise
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0) | NOFOLLOW)
    try:
        os.ftruncate(fd, history.cursor[1])
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    log.warning("session.torn_line_repaired", path=str(path), kept_in=str(torn), bytes=len(tail))
