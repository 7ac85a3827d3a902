"""Whole sessions in and out of PostgreSQL: the snapshot ``export`` writes, and ``import_``.

Each function is the body of one backend call (postgres.py runs it in a transaction, with
retries): a snapshot reads the session row, its messages and its documents at one moment; a
restore writes a whole session, messages by ``COPY``, under one token, so a retry after a
lost acknowledgement finds its own commit instead of reporting the session as existing.
Apart from postgres.py because these two move every row of a session at once, while the
backend's other calls touch a few: they share only the row helpers of pgrows.py.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from . import pgrows
from .archive import Archive
from .backend import MAPPINGS, encoded_view
from .codec import check_view, encode_message, format_ts, loads, parse_ts
from .errors import SessionExistsError, SessionNotFoundError
from .pgconn import key, text

__all__ = ["restore", "snapshot"]


def snapshot(conn: psycopg.Connection[Any], location: str, name: str) -> Archive:
    with conn.transaction():
        # One snapshot for the row, the messages and the documents.
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        rows = pgrows.fetch(conn, name, 0)
        if not rows:
            raise SessionNotFoundError(name, location)
        docs = dict(
            conn.execute(
                "SELECT kind, body FROM compaction_documents WHERE session = %s", (name,)
            ).fetchall()
        )
    created, first_seq = rows[0][0], rows[0][1]
    entries = tuple(
        pgrows.entry(location, name, r[4], r[5], r[6]) for r in rows if r[4] is not None
    )
    fail = pgrows.failure(location, name)
    documents = {}
    for kind in MAPPINGS:
        doc = loads(docs[kind], fail) if kind in docs else {"updated": created, "data": {}}
        documents[kind] = {"updated": doc["updated"], "data": doc["data"]}
    view = None
    if "view" in docs:
        stored = loads(docs["view"], fail)
        stored["messages"] = check_view(stored, fail)
        view = encoded_view(stored)
    return Archive(name, parse_ts(created, fail), first_seq, entries, documents, view)


def restore(
    conn: psycopg.Connection[Any],
    location: str,
    name: str,
    archive: Archive,
    token: uuid.UUID,
    limit: int,
) -> None:
    next_seq = archive.first_seq + len(archive.entries)
    with conn.transaction():
        inserted = conn.execute(
            "INSERT INTO compaction_sessions"
            " (name, created, first_seq, next_seq, epoch, token)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING"
            " RETURNING name",
            (name, format_ts(archive.created), archive.first_seq, next_seq, token, token),
        ).fetchone()
        if inserted is None:
            row = conn.execute(
                "SELECT token FROM compaction_sessions WHERE name = %s", (name,)
            ).fetchone()
            if row is not None and row[0] == token:
                return  # this import committed on an earlier attempt
            raise SessionExistsError(name, location)
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY compaction_messages (session, seq, ts, msg_key, batch, body) FROM STDIN"
            ) as copy,
        ):
            for e in archive.entries:
                copy.write_row(
                    (
                        name,
                        e.seq,
                        format_ts(e.timestamp),
                        key(e.message.id or ""),
                        token,
                        text(encode_message(e.message), f"message seq {e.seq}", limit),
                    )
                )
        for kind, body in archive.documents.items():
            pgrows.put_document(conn, name, kind, token, body, limit)
        if archive.view is not None:
            pgrows.put_document(conn, name, "view", token, archive.view, limit)
