"""Connections for the PostgreSQL session store: a pool, retries, and the versioned schema.

A connection lost mid-call (a server restart, a failover) is retried for up to
``retry_seconds`` with a fresh connection; past that, :class:`StoreUnavailableError`. Callers
make their writes safe to retry (see postgres.py: every write carries a token checked first on
a retry). The schema is created by the first process to need it (under an advisory lock, so
two processes never race) and carries a version: a newer one is refused, never rewritten.
"""

from __future__ import annotations

import json
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from .._log import log
from .codec import encode_json
from .errors import StoreSchemaError, StoreUnavailableError
from .names import validate_name

__all__ = ["SCHEMA_VERSION", "Connections", "key", "redact", "text", "valid"]

T = TypeVar("T")

SCHEMA_VERSION: Final = 1
# pg_advisory_xact_lock key taken while creating or checking the schema ("compact" in hex).
_SCHEMA_LOCK: Final = 0x636F6D70616374

_SCHEMA: Final = (
    """CREATE TABLE compaction_sessions (
        name text PRIMARY KEY,
        created text NOT NULL,
        first_seq bigint NOT NULL,
        next_seq bigint NOT NULL,
        epoch uuid NOT NULL,
        token uuid NOT NULL
    )""",
    """CREATE TABLE compaction_messages (
        session text NOT NULL REFERENCES compaction_sessions (name) ON DELETE CASCADE,
        seq bigint NOT NULL,
        ts text NOT NULL,
        msg_key text NOT NULL,
        batch uuid NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (session, seq),
        UNIQUE (session, msg_key)
    )""",
    "CREATE INDEX compaction_messages_batch ON compaction_messages (session, batch)",
    """CREATE TABLE compaction_documents (
        session text NOT NULL REFERENCES compaction_sessions (name) ON DELETE CASCADE,
        kind text NOT NULL,
        token uuid NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (session, kind)
    )""",
)


def redact(url: str) -> str:
    """``url`` without its password (for messages and ``location``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def valid(name: str) -> bool:
    # Rows written by other tools may hold names we would refuse to open: we do not list them.
    try:
        validate_name(name)
    except ValueError:
        return False
    return True


def key(message_id: str) -> str:
    # ASCII JSON of the id: unique per id, and valid PostgreSQL text whatever the id holds.
    return json.dumps(message_id)


def text(value: Any) -> str:
    # encode_json escapes NUL (as JSON always does) and falls back to ASCII escapes for lone
    # surrogates: the result is valid UTF-8 without NUL, which PostgreSQL text accepts.
    return encode_json(value).decode("utf-8").rstrip("\n")


class Connections:
    """A per-process connection pool to ``url``, opened on first use, with retries."""

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        retry_seconds: float = 30.0,
        connect_timeout: float = 10.0,
    ) -> None:
        try:
            conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            reason = " ".join(str(exc).split())
            raise ValueError(f"not a valid PostgreSQL URL {redact(url)!r}: {reason}") from None
        self.url = url
        self.location = redact(url)
        self.min_size, self.max_size = min_size, max_size
        self.retry_seconds = retry_seconds
        self.connect_timeout = connect_timeout
        self._pool: ConnectionPool | None = None
        self._pid = 0
        self._lock = threading.Lock()
        self._schema_checked = False

    def _get_pool(self) -> ConnectionPool:
        with self._lock:
            # A forked child must not share its parent's sockets: it gets a pool of its own.
            if self._pool is None or self._pid != os.getpid():
                pool: ConnectionPool = ConnectionPool(
                    self.url,
                    min_size=self.min_size,
                    max_size=self.max_size,
                    kwargs={"connect_timeout": max(1, int(self.connect_timeout))},
                    # No check on checkout (a round trip per call): a connection a server
                    # restart broke fails its first statement, and _run retries on a new one.
                    timeout=self.connect_timeout,
                    name=f"compaction-sessions-{os.getpid()}",
                    num_workers=1,
                    open=True,
                )
                self._pool, self._pid = pool, os.getpid()
                weakref.finalize(self, pool.close)
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.close()

    def run(self, work: Callable[[psycopg.Connection[Any]], T], *, what: str) -> T:
        """``work`` in one transaction, retried while the server is unreachable."""
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.05
        while True:
            try:
                with self._get_pool().connection() as conn:
                    if not self._schema_checked:
                        self._ensure_schema(conn)
                    return work(conn)
            except psycopg.OperationalError as exc:
                if time.monotonic() + delay > deadline:
                    raise StoreUnavailableError(
                        f"session store {self.location}: {what} failed and the server did not "
                        f"come back within {self.retry_seconds:g} s: {exc}"
                    ) from exc
                log.warning("session.store_retry", store=self.location, op=what, error=str(exc))
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def _ensure_schema(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            # The common case, without a lock: the tables are there, at our version.
            exists = conn.execute("SELECT to_regclass('compaction_schema') IS NOT NULL")
            if exists.fetchone() == (True,):
                row = conn.execute("SELECT version FROM compaction_schema").fetchone()
                if row is not None and row[0] == SCHEMA_VERSION:
                    self._schema_checked = True
                    return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS compaction_schema ("
                " singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),"
                " version integer NOT NULL)"
            )
            row = conn.execute("SELECT version FROM compaction_schema").fetchone()
            if row is None:
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO compaction_schema (version) VALUES (%s)", (SCHEMA_VERSION,)
                )
            elif row[0] != SCHEMA_VERSION:
                raise StoreSchemaError(
                    f"session store {self.location}: its tables are at schema version {row[0]}, "
                    f"and this compaction knows version {SCHEMA_VERSION}"
                    + (
                        ": it was set up by a newer compaction. Upgrade compaction; the tables "
                        "are left as they are."
                        if row[0] > SCHEMA_VERSION
                        else "."
                    )
                )
        self._schema_checked = True
