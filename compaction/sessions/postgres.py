"""The PostgreSQL backend: one database serving many workers on many hosts (psycopg 3).

    compaction_schema     (version)                   the layout version, one row
    compaction_sessions   (name, created, first_seq, next_seq, epoch, token)
    compaction_messages   (session, seq, ts, msg_key, batch, body)   the raw history
    compaction_documents  (session, kind, token, body)               context/state/metadata/view
    compaction_search     (session, seq, part, words)                the full-text index

Concurrency is the database's: an append locks its session's row (``SELECT … FOR NO KEY
UPDATE``; pgrows.lock_row says what waits for what), so appends to one session serialise
across processes and hosts while other sessions go on, and the rows of a batch commit
together or not at all. Messages and documents are stored as our own JSON text with every NUL
and lone surrogate escaped (``\\u0000``), never as ``jsonb`` (which refuses both), so any
string a Message holds comes back exactly. Names and ids are always bound parameters, never
SQL text.

A connection lost mid-call (a server restart, a failover) is retried for up to
``retry_seconds``; every write carries a random token that is checked first on a retry, so a
commit whose acknowledgement was lost is found, not made twice. Past the deadline the error
is raised: a write never returns without being committed. Any other failure (credentials, a
missing database, a timeout, a value out of range) is a StoreError at once (see pgpool.py).

This module holds the operations, one transaction each; the statements they share (creating
and locking a session row, reading its messages, writing a document) and the decoding of rows
into Entries are in pgrows.py; whole-session snapshot and restore (export and import) are in
pgarchive.py; search over the history, with PostgreSQL's full-text search, in pgsearch.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import psycopg

from ..memory.search import SearchHit
from ..messages import Message
from . import pgarchive, pgrows, pgsearch
from .archive import Archive
from .backend import Backend, check_epoch, check_view_update
from .codec import check_view, encode_message, format_ts, loads, now, parse_ts
from .errors import (
    SessionFormatError,
    SessionNotFoundError,
)
from .history import Entry, History, assign_ids
from .pgconn import MAX_VALUE_BYTES, SCHEMA_VERSION, Connections, key, redact, text, valid

__all__ = ["SCHEMA_VERSION", "PostgresBackend", "redact"]

T = TypeVar("T")


class PostgresBackend(Backend):
    """Sessions in a PostgreSQL database (``url``: a libpq URL, ``postgresql://…``).

    ``max_size`` bounds the connections kept per process and ``min_size`` how many are kept
    open once the first call has opened the pool (psycopg_pool; see pgpool.py); ``max_idle``
    closes connections beyond ``min_size`` left unused that long. ``retry_seconds`` bounds a
    whole call: connecting, waiting for a free connection, retrying while the server is
    unreachable, and a call the server stops answering (cut off then); ``connect_timeout``
    bounds one connection attempt. ``on_retry``, when given, is called with a one-line notice
    (what failed, and for how long it is retried) the first time a call retries.
    """

    #: The largest value stored in one field (PostgreSQL's limit is 1 GB).
    max_value_bytes: int = MAX_VALUE_BYTES

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        retry_seconds: float = 30.0,
        connect_timeout: float = 10.0,
        max_idle: float = 60.0,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self._indexed = pgsearch.Progress()
        self._db = Connections(
            url,
            min_size=min_size,
            max_size=max_size,
            retry_seconds=retry_seconds,
            connect_timeout=connect_timeout,
            max_idle=max_idle,
            on_retry=on_retry,
        )
        self.url = url
        self.location = self._db.location

    def close(self) -> None:
        self._db.close()

    def _run(self, work: Callable[[psycopg.Connection[Any]], T], *, what: str) -> T:
        return self._db.run(work, what=what)

    # -- sessions -----------------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        def work(conn: psycopg.Connection[Any]) -> bool:
            row = conn.execute("SELECT 1 FROM compaction_sessions WHERE name = %s", (name,))
            return row.fetchone() is not None

        return self._run(work, what="exists")

    def names(self) -> list[str]:
        def work(conn: psycopg.Connection[Any]) -> list[str]:
            rows = conn.execute("SELECT name FROM compaction_sessions").fetchall()
            return sorted(r[0] for r in rows if valid(r[0]))

        return self._run(work, what="list")

    def create(self, name: str) -> None:
        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                pgrows.create_row(conn, name)

        self._run(work, what="create")

    # -- the raw history ----------------------------------------------------------------------

    def read(self, name: str, history: History) -> None:
        def work(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            return self._rows_since(conn, name, history)

        self._apply(name, history, self._run(work, what="read"))

    @staticmethod
    def _rows_since(
        conn: psycopg.Connection[Any], name: str, history: History
    ) -> list[tuple[Any, ...]]:
        """The rows ``history`` lacks: those after its end, or every row when the session was
        replaced or cleared since it was read (a new epoch)."""
        start = history.next_seq if history.cursor is not None else 0
        rows = pgrows.fetch(conn, name, start)
        if rows and history.cursor != rows[0][3] and start > rows[0][1]:
            rows = pgrows.fetch(conn, name, rows[0][1])  # read from the wrong place
        return rows

    def _apply(self, name: str, history: History, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            history.reset()
            return
        created, first_seq, _next, epoch = rows[0][:4]
        if history.cursor != epoch:
            history.reset(epoch, first_seq, parse_ts(created, self._bad(name)), str(epoch))
        entries = [self._entry(name, r[4], r[5], r[6]) for r in rows if r[4] is not None]
        history.extend(e for e in entries if e.seq >= history.next_seq)

    def _bad(self, name: str) -> Callable[[str], SessionFormatError]:
        return pgrows.failure(self.location, name)

    def _entry(self, name: str, seq: int, ts: str, body: str) -> Entry:
        return pgrows.entry(self.location, name, seq, ts, body)

    def append(
        self, name: str, history: History, messages: Sequence[Message], at: datetime
    ) -> list[Entry]:
        batch = uuid.uuid4()
        stamp = format_ts(at)
        attempts = 0

        def work(conn: psycopg.Connection[Any]) -> tuple[list[Entry], list[tuple[Any, ...]]]:
            nonlocal attempts
            attempts += 1
            with conn.transaction():
                row = pgrows.lock_row(conn, name, create=True)
                assert row is not None
                if attempts > 1:
                    done = conn.execute(
                        "SELECT seq, ts, body FROM compaction_messages"
                        " WHERE session = %s AND batch = %s ORDER BY seq",
                        (name, batch),
                    ).fetchall()
                    if done:  # committed by an attempt whose acknowledgement was lost
                        written = [self._entry(name, *r) for r in done]
                        return written, self._rows_since(conn, name, history)
                next_seq = row[2]
                entries = pgrows.fresh_ids(conn, name, messages, next_seq, at)
                rows = [
                    (
                        name,
                        e.seq,
                        stamp,
                        key(e.message.id or ""),
                        batch,
                        self._text(encode_message(e.message), f"message seq {e.seq}"),
                    )
                    for e in entries
                ]
                try:
                    pgrows.insert_messages(conn, rows)
                except psycopg.errors.UniqueViolation:
                    raise ValueError(
                        f"a message id in this batch is already in session {name!r}: ids name "
                        "one message each, so recall stays unambiguous"
                    ) from None
                conn.execute(
                    "UPDATE compaction_sessions SET next_seq = %s WHERE name = %s",
                    (next_seq + len(entries), name),
                )
                # The history brought up to date in the same transaction: no call after the
                # commit that could fail, so add() never raises once its batch is stored.
                return entries, self._rows_since(conn, name, history)

        # Duplicate ids within the batch are refused before any round trip.
        assign_ids(name, History(), messages, 0, at)
        entries, rows = self._run(work, what="append")
        try:
            self._apply(name, history, rows)
        except SessionFormatError:
            history.reset()  # another writer's unreadable row: the next read says so
        return entries

    # -- the documents ------------------------------------------------------------------------

    def read_document(self, name: str, kind: str) -> dict[str, Any] | None:
        def work(conn: psycopg.Connection[Any]) -> str | None:
            row = conn.execute(
                "SELECT body FROM compaction_documents WHERE session = %s AND kind = %s",
                (name, kind),
            ).fetchone()
            return None if row is None else row[0]

        body = self._run(work, what="read")
        if body is None:
            return None
        fail = self._bad(name)
        doc = loads(body, lambda r: fail(f"{kind}: {r}"))
        if not isinstance(doc, dict):
            raise fail(f"{kind}: not a JSON object")
        parse_ts(doc.get("updated"), lambda r: fail(f"{kind}.updated: {r}"))
        if kind == "view":
            doc["messages"] = check_view(doc, lambda r: fail(f"view: {r}"))
        elif not isinstance(doc.get("data"), dict):
            raise fail(f"{kind}: 'data' must be a JSON object")
        return doc

    def update_document(
        self, name: str, kind: str, mutate: Callable[[dict[str, Any]], None], updated: str
    ) -> None:
        token = uuid.uuid4()

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                pgrows.lock_row(conn, name, create=True)
                row = conn.execute(
                    "SELECT token, body FROM compaction_documents"
                    " WHERE session = %s AND kind = %s FOR UPDATE",
                    (name, kind),
                ).fetchone()
                if row is not None and row[0] == token:
                    return  # this very write committed on an earlier attempt
                doc = loads(row[1], self._bad(name)) if row is not None else {"data": {}}
                data = dict(doc.get("data") or {})
                mutate(data)
                self._put(conn, name, kind, token, {"updated": updated, "data": data})

        self._run(work, what=f"update {kind}")

    def _text(self, value: Any, what: str) -> str:
        return text(value, what, self.max_value_bytes)

    def _put(
        self,
        conn: psycopg.Connection[Any],
        name: str,
        kind: str,
        token: uuid.UUID,
        body: dict[str, Any],
    ) -> None:
        pgrows.put_document(conn, name, kind, token, body, self.max_value_bytes)

    def put_view(
        self, name: str, body: dict[str, Any], min_seq: int | None, epoch: str | None
    ) -> None:
        token = uuid.uuid4()

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                row = pgrows.lock_row(conn, name, create=True)
                assert row is not None
                found = conn.execute(
                    "SELECT token, body FROM compaction_documents"
                    " WHERE session = %s AND kind = 'view'",
                    (name,),
                ).fetchone()
                if found is not None and found[0] == token:
                    return
                check_epoch(name, epoch, str(row[3]))
                stored = None
                if found is not None:
                    stored = loads(found[1], self._bad(name))
                    check_view(stored, self._bad(name))
                check_view_update(name, stored, body, min_seq, row[1])
                self._put(conn, name, "view", token, body)

        self._run(work, what="set_view")

    # -- search -------------------------------------------------------------------------------

    def search(
        self, name: str, history: History, query: str, limit: int, exclude: set[int]
    ) -> list[SearchHit] | None:
        """PostgreSQL's full-text search (pgsearch.py); None when the store could not create
        its index (a role without CREATE on an older database: the Session's own is used)."""
        if not self._db.search_ready:
            return None

        def work(conn: psycopg.Connection[Any]) -> list[SearchHit]:
            return pgsearch.search(conn, name, history, query, limit, exclude)

        hits = self._run(work, what="search")
        self._indexed.record(name, history.epoch, history.next_seq - 1)
        return hits

    def index(self, name: str, history: History) -> bool | None:
        """Index what ``history`` added since this process last indexed the session: one
        statement when it knows how far the index goes (pgsearch.index_since)."""
        if not self._db.search_ready:
            return None
        done = self._indexed.newest(name, history.epoch)

        def work(conn: psycopg.Connection[Any]) -> int | None:
            return pgsearch.index_since(conn, name, history, done)

        newest = self._run(work, what="index")
        if newest is None:
            self._indexed.forget(name)
            return False
        self._indexed.record(name, history.epoch, newest)
        return True

    # -- whole sessions -----------------------------------------------------------------------

    def clear(self, name: str) -> None:
        epoch = uuid.uuid4()
        stamp = format_ts(now())

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                row = pgrows.lock_row(conn, name, create=False, generation=True)
                if row is None or row[3] == epoch:
                    return
                conn.execute("DELETE FROM compaction_messages WHERE session = %s", (name,))
                conn.execute(
                    "DELETE FROM compaction_documents WHERE session = %s AND kind = 'view'",
                    (name,),
                )
                # Sequence numbers carry on after a clear, so an id is never reused.
                conn.execute(
                    "UPDATE compaction_sessions SET first_seq = next_seq, epoch = %s"
                    " WHERE name = %s",
                    (epoch, name),
                )
                # A clear is a change: "updated" must move, though no message carries it.
                found = conn.execute(
                    "SELECT body FROM compaction_documents"
                    " WHERE session = %s AND kind = 'metadata' FOR UPDATE",
                    (name,),
                ).fetchone()
                data = loads(found[0], self._bad(name)).get("data", {}) if found else {}
                self._put(conn, name, "metadata", epoch, {"updated": stamp, "data": data})

        self._run(work, what="clear")

    def delete(self, name: str) -> None:
        attempts = 0

        def work(conn: psycopg.Connection[Any]) -> None:
            nonlocal attempts
            attempts += 1
            with conn.transaction():
                gone = conn.execute(
                    "DELETE FROM compaction_sessions WHERE name = %s RETURNING name", (name,)
                ).fetchone()
            # After a lost acknowledgement the retry finds nothing: the session is gone, which
            # is what was asked.
            if gone is None and attempts == 1:
                raise SessionNotFoundError(name, self.location)

        self._run(work, what="delete")

    def snapshot(self, name: str) -> Archive:
        def work(conn: psycopg.Connection[Any]) -> Archive:
            return pgarchive.snapshot(conn, self.location, name)

        return self._run(work, what="snapshot")

    def restore(self, name: str, archive: Archive) -> None:
        token = uuid.uuid4()

        def work(conn: psycopg.Connection[Any]) -> None:
            pgarchive.restore(conn, self.location, name, archive, token, self.max_value_bytes)

        ids = [e.message.id for e in archive.entries]
        if len(set(ids)) != len(ids):
            raise ValueError(f"the archive for {name!r} has duplicate message ids")
        self._run(work, what="import")
