"""The PostgreSQL backend: one database serving many workers on many hosts (psycopg 3).

    compaction_schema     (version)                   the layout version, one row
    compaction_sessions   (name, created, first_seq, next_seq, epoch, token)
    compaction_messages   (session, seq, ts, msg_key, batch, body)   the raw history
    compaction_documents  (session, kind, token, body)               context/state/metadata/view

Concurrency is the database's: an append locks its session's row (``SELECT … FOR UPDATE``),
so appends to one session serialise across processes and hosts while other sessions go on,
and the rows of a batch commit together or not at all. Messages and documents are stored as
our own JSON text with every NUL and lone surrogate escaped (``\\u0000``), never as ``jsonb``
(which refuses both), so any string a Message holds comes back exactly. Names and ids are
always bound parameters, never SQL text.

A connection lost mid-call (a server restart, a failover) is retried for up to
``retry_seconds``; every write carries a random token that is checked first on a retry, so a
commit whose acknowledgement was lost is found, not made twice. Past the deadline the error
is raised: a write never returns without being committed. Any other failure (credentials, a
missing database, a timeout, a value out of range) is a StoreError at once (see pgpool.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import psycopg

from ..messages import Message
from .archive import Archive
from .backend import MAPPINGS, Backend, check_epoch, check_view_update, encoded_view
from .codec import (
    check_view,
    decode_message,
    encode_message,
    format_ts,
    loads,
    now,
    parse_ts,
)
from .errors import (
    SessionExistsError,
    SessionFormatError,
    SessionNotFoundError,
)
from .history import Entry, History, assign_ids
from .pgconn import MAX_VALUE_BYTES, SCHEMA_VERSION, Connections, key, redact, text, valid

__all__ = ["SCHEMA_VERSION", "PostgresBackend", "redact"]

T = TypeVar("T")


class PostgresBackend(Backend):
    """Sessions in a PostgreSQL database (``url``: a libpq URL, ``postgresql://…``).

    ``max_size`` bounds the connections kept per process (``min_size`` is accepted for
    compatibility: connections are made when first needed); ``retry_seconds`` bounds how long
    a call keeps retrying while the server is unreachable, connecting included;
    ``connect_timeout`` bounds one connection attempt.
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
    ) -> None:
        self._db = Connections(
            url,
            min_size=min_size,
            max_size=max_size,
            retry_seconds=retry_seconds,
            connect_timeout=connect_timeout,
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

    def _create_row(self, conn: psycopg.Connection[Any], name: str) -> None:
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
                "INSERT INTO compaction_documents (session, kind, token, body)"
                " VALUES (%s, %s, %s, %s)",
                (name, kind, token, text({"updated": stamp, "data": data})),
            )

    def create(self, name: str) -> None:
        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                self._create_row(conn, name)

        self._run(work, what="create")

    def _lock_row(
        self, conn: psycopg.Connection[Any], name: str, create: bool
    ) -> tuple[Any, ...] | None:
        query = (
            "SELECT created, first_seq, next_seq, epoch, token FROM compaction_sessions"
            " WHERE name = %s FOR UPDATE"
        )
        row = conn.execute(query, (name,)).fetchone()
        if row is None and create:
            self._create_row(conn, name)
            row = conn.execute(query, (name,)).fetchone()
        return row

    # -- the raw history ----------------------------------------------------------------------

    def read(self, name: str, history: History) -> None:
        def work(conn: psycopg.Connection[Any]) -> None:
            start = history.next_seq if history.cursor is not None else 0
            rows = self._fetch(conn, name, start)
            if not rows:
                history.reset()
                return
            created, first_seq, _next, epoch = rows[0][:4]
            if history.cursor != epoch:
                history.reset(epoch, first_seq, parse_ts(created, self._bad(name)), str(epoch))
                if start > first_seq:  # read from the wrong place: the session was replaced
                    rows = self._fetch(conn, name, first_seq)
            entries = [self._entry(name, r[4], r[5], r[6]) for r in rows if r[4] is not None]
            history.extend(e for e in entries if e.seq >= history.next_seq)

        self._run(work, what="read")

    @staticmethod
    def _fetch(conn: psycopg.Connection[Any], name: str, start: int) -> list[tuple[Any, ...]]:
        # One statement, so one snapshot: the session row and its messages agree.
        return conn.execute(
            "SELECT s.created, s.first_seq, s.next_seq, s.epoch, m.seq, m.ts, m.body"
            " FROM compaction_sessions s LEFT JOIN compaction_messages m"
            " ON m.session = s.name AND m.seq >= %s"
            " WHERE s.name = %s ORDER BY m.seq",
            (start, name),
        ).fetchall()

    def _bad(self, name: str) -> Callable[[str], SessionFormatError]:
        def fail(reason: str) -> SessionFormatError:
            return SessionFormatError(f"{self.location}#{name}", reason)

        return fail

    def _entry(self, name: str, seq: int, ts: str, body: str) -> Entry:
        def fail(reason: str) -> SessionFormatError:
            return SessionFormatError(f"{self.location}#{name}", f"message seq {seq}: {reason}")

        return Entry(seq, parse_ts(ts, fail), decode_message(loads(body, fail), fail))

    def append(
        self, name: str, history: History, messages: Sequence[Message], at: datetime
    ) -> list[Entry]:
        batch = uuid.uuid4()
        stamp = format_ts(at)
        attempts = 0

        def work(conn: psycopg.Connection[Any]) -> list[Entry]:
            nonlocal attempts
            attempts += 1
            with conn.transaction():
                row = self._lock_row(conn, name, create=True)
                assert row is not None
                if attempts > 1:
                    done = conn.execute(
                        "SELECT seq, ts, body FROM compaction_messages"
                        " WHERE session = %s AND batch = %s ORDER BY seq",
                        (name, batch),
                    ).fetchall()
                    if done:  # committed by an attempt whose acknowledgement was lost
                        return [self._entry(name, *r) for r in done]
                next_seq = row[2]
                entries = self._fresh_ids(conn, name, messages, next_seq, at)
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
                    with conn.cursor() as cur:
                        cur.executemany(
                            "INSERT INTO compaction_messages"
                            " (session, seq, ts, msg_key, batch, body)"
                            " VALUES (%s, %s, %s, %s, %s, %s)",
                            rows,
                        )
                except psycopg.errors.UniqueViolation:
                    raise ValueError(
                        f"a message id in this batch is already in session {name!r}: ids name "
                        "one message each, so recall stays unambiguous"
                    ) from None
                conn.execute(
                    "UPDATE compaction_sessions SET next_seq = %s WHERE name = %s",
                    (next_seq + len(entries), name),
                )
                return entries

        # Duplicate ids within the batch are refused before any round trip.
        assign_ids(name, History(), messages, 0, at)
        entries = self._run(work, what="append")
        self.read(name, history)
        return entries

    @staticmethod
    def _fresh_ids(
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
                self._lock_row(conn, name, create=True)
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
        limit = self.max_value_bytes
        conn.execute(
            "INSERT INTO compaction_documents (session, kind, token, body)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (session, kind)"
            " DO UPDATE SET token = EXCLUDED.token, body = EXCLUDED.body",
            (name, kind, token, text(body, f"the {kind} document", limit)),
        )

    def put_view(
        self, name: str, body: dict[str, Any], min_seq: int | None, epoch: str | None
    ) -> None:
        token = uuid.uuid4()

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                row = self._lock_row(conn, name, create=True)
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

    # -- whole sessions -----------------------------------------------------------------------

    def clear(self, name: str) -> None:
        epoch = uuid.uuid4()
        stamp = format_ts(now())

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                row = self._lock_row(conn, name, create=False)
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
            with conn.transaction():
                # One snapshot for the row, the messages and the documents.
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                rows = self._fetch(conn, name, 0)
                if not rows:
                    raise SessionNotFoundError(name, self.location)
                docs = dict(
                    conn.execute(
                        "SELECT kind, body FROM compaction_documents WHERE session = %s", (name,)
                    ).fetchall()
                )
            created, first_seq = rows[0][0], rows[0][1]
            entries = tuple(self._entry(name, r[4], r[5], r[6]) for r in rows if r[4] is not None)
            fail = self._bad(name)
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

        return self._run(work, what="snapshot")

    def restore(self, name: str, archive: Archive) -> None:
        token = uuid.uuid4()
        next_seq = archive.first_seq + len(archive.entries)

        def work(conn: psycopg.Connection[Any]) -> None:
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
                    raise SessionExistsError(name, self.location)
                with (
                    conn.cursor() as cur,
                    cur.copy(
                        "COPY compaction_messages (session, seq, ts, msg_key, batch, body)"
                        " FROM STDIN"
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
                                self._text(encode_message(e.message), f"message seq {e.seq}"),
                            )
                        )
                for kind, body in archive.documents.items():
                    self._put(conn, name, kind, token, body)
                if archive.view is not None:
                    self._put(conn, name, "view", token, archive.view)

        ids = [e.message.id for e in archive.entries]
        if len(set(ids)) != len(ids):
            raise ValueError(f"the archive for {name!r} has duplicate message ids")
        self._run(work, what="import")
