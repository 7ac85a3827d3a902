"""The rows of one session in PostgreSQL: the statements and decoding the backend's calls share.

postgres.py holds the backend's operations (each one transaction, safe to retry) and
pgarchive.py the whole-session snapshot and restore; this module holds what several of them
are built from: how a session row is created and locked, how its messages are read back in
one statement and decoded into Entries, how automatic ids are kept clear of stored ones, and
how a document row is written. Apart so that the operations read as what they do, and so
that the row layout is written down in one place. The functions given a connection work inside
their caller's transaction and commit nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import psycopg

from ..messages import Message
from .backend import MAPPINGS
from .codec import decode_message, format_ts, loads, now, parse_ts
from .errors import SessionFormatError
from .history import Entry, History, assign_ids
from .pgconn import key, text

__all__ = [
    "create_row",
    "entry",
    "failure",
    "fetch",
    "fresh_ids",
    "insert_messages",
    "lock_row",
    "put_document",
]

# Rows per INSERT statement (6 parameters each; PostgreSQL takes at most 65,535).
_ROWS_PER_INSERT = 1000


def create_row(conn: psycopg.Connection[Any], name: str) -> None:
    stamp = format_ts(now())
    token = uuid.uuid4()
    inserted = conn.execute(
        "INSERT INTO compaction_sessions (name, created, first_seq, next_seq, epoch, token)"
        " VALUES (%s, %s, 0, 0, %s, %s) ON CONFLICT (name) DO NOTHING RETURNING name",
        (name, stamp, uuid.uuid4(), token),
    ).fetchone()
    if inserted is None:
        return
    for kind in MAPPINGS:
        data = {"created": stamp} if kind == "metadata" else {}
        conn.execute(
            "INSERT INTO compaction_documents (session, kind, token, body) VALUES (%s, %s, %s, %s)",
            (name, kind, token, text({"updated": stamp, "data": data})),
        )


def lock_row(
    conn: psycopg.Connection[Any], name: str, create: bool, *, generation: bool = False
) -> tuple[Any, ...] | None:
    """The session's row, locked for this transaction (created first when ``create``).

    Writes within a generation (appends, documents) take ``FOR NO KEY UPDATE``: they exclude
    each other, but not a search or an indexer, which hold ``FOR KEY SHARE`` while they read
    and index one generation (so an append never queues behind the parsing of an index).
    A change of ``generation`` (a clear) takes ``FOR UPDATE``, which waits for those readers:
    they never mix two generations."""
    strength = "UPDATE" if generation else "NO KEY UPDATE"
    query = (
        "SELECT created, first_seq, next_seq, epoch, token FROM compaction_sessions"
        f" WHERE name = %s FOR {strength}"
    )
    row = conn.execute(query, (name,)).fetchone()
    if row is None and create:
        create_row(conn, name)
        row = conn.execute(query, (name,)).fetchone()
    return row


def fetch(conn: psycopg.Connection[Any], name: str, start: int) -> list[tuple[Any, ...]]:
    # One statement, so one snapshot: the session row and its messages agree.
    return conn.execute(
        "SELECT s.created, s.first_seq, s.next_seq, s.epoch, m.seq, m.ts, m.body"
        " FROM compaction_sessions s LEFT JOIN compaction_messages m"
        " ON m.session = s.name AND m.seq >= %s"
        " WHERE s.name = %s ORDER BY m.seq",
        (start, name),
    ).fetchall()


def failure(location: str, name: str) -> Callable[[str], SessionFormatError]:
    def fail(reason: str) -> SessionFormatError:
        return SessionFormatError(f"{location}#{name}", reason)

    return fail


def entry(location: str, name: str, seq: int, ts: str, body: str) -> Entry:
    def fail(reason: str) -> SessionFormatError:
        return SessionFormatError(f"{location}#{name}", f"message seq {seq}: {reason}")

    return Entry(seq, parse_ts(ts, fail), decode_message(loads(body, fail), fail))


def fresh_ids(
    conn: psycopg.Connection[Any],
    name: str,
    messages: Sequence[Message],
    next_seq: int,
    at: datetime,
) -> list[Entry]:
    """The batch's entries, with automatic ids no stored message already has.

    The history is not read here (that would be a round trip of the whole session per
    append): the ids we would give are looked up, and any taken one is given a free
    alternative; each round takes at least one more id off, so this ends.
    """
    taken: set[str] = set()
    while True:
        entries = assign_ids(name, History(), messages, next_seq, at, taken)
        automatic = {
            key(e.message.id or ""): e.message.id or ""
            for e, m in zip(entries, messages, strict=True)
            if m.id is None
        }
        if not automatic:
            return entries
        found = conn.execute(
            "SELECT msg_key FROM compaction_messages WHERE session = %s AND msg_key = ANY(%s)",
            (name, list(automatic)),
        ).fetchall()
        if not found:
            return entries
        taken.update(automatic[r[0]] for r in found)


def put_document(
    conn: psycopg.Connection[Any],
    name: str,
    kind: str,
    token: uuid.UUID,
    body: dict[str, Any],
    limit: int,
) -> None:
    conn.execute(
        "INSERT INTO compaction_documents (session, kind, token, body)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT (session, kind)"
        " DO UPDATE SET token = EXCLUDED.token, body = EXCLUDED.body",
        (name, kind, token, text(body, f"the {kind} document", limit)),
    )


def insert_messages(conn: psycopg.Connection[Any], rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert message rows (session, seq, ts, msg_key, batch, body), many per statement.

    Not ``executemany``: psycopg prepares its statement whatever ``prepare_threshold`` says,
    and behind a transaction pooler (PgBouncer) a prepared statement, or its deallocation,
    lands on another server connection than the one that made it.
    """
    for start in range(0, len(rows), _ROWS_PER_INSERT):
        chunk = rows[start : start + _ROWS_PER_INSERT]
        values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(chunk))
        conn.execute(
            "INSERT INTO compaction_messages (session, seq, ts, msg_key, batch, body) VALUES "
            + values,
            [value for row in chunk for value in row],
            prepare=False,
        )
