"""Connections for the PostgreSQL session store: retries, URLs for people, the versioned schema.

A connection lost mid-call (a server restart, a failover) is retried for up to
``retry_seconds`` with a fresh connection; past that, [`StoreUnavailableError`][]. A
failure a retry cannot change is [`StoreError`][] at once (pgpool.py tells them apart).
Callers
make their writes safe to retry (see postgres.py: every write carries a token checked first on
a retry). The schema is created by the first process to need it (under an advisory lock, so
two processes never race) and carries a version: a newer one is refused, never rewritten.
Additions an older release can ignore (the full-text index, pgsearch.py) are made in place in
an existing database without a new version, so workers of both releases can share it during
an upgrade; a role that may not create them leaves search to the Session's own index.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar
from urllib.parse import quote, urlencode

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .._log import log
from .codec import encode_json
from .errors import StoreError, StoreSchemaError, StoreUnavailableError
from .names import validate_name
from .pgpool import Pool, is_transient
from .pgsearch import SCHEMA as SEARCH_SCHEMA
from .pgsearch import TABLE as SEARCH_TABLE

__all__ = ["SCHEMA_VERSION", "Connections", "check_url", "key", "redact", "text", "valid"]

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


# Connection parameters whose values are secrets: never shown, whichever way they were given.
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_SECRETS: Final = frozenset({"password", "sslpassword"})
# Shown in the URL's own places (user-info, host, port, path); every other one in the query.
_PLACED: Final = frozenset({"user", "host", "port", "dbname"})


def check_url(url: str) -> None:
    """ValueError, naming no part of ``url`` that could be a secret, unless libpq can parse it.

    libpq's own parse error quotes the offending token (a password with a bad ``%`` escape,
    say), so it is never passed on: only its gist, with every quoted part cut out. A user
    name or password holding a raw ``/`` or ``?`` ends the host part early for libpq: its
    start becomes a host and a "port", the rest the database name or the query, secret and
    all; a raw ``@`` makes the tail of the password the host. So a second ``@`` before the
    host, an ``@`` in the path, or a port that is not a number, is refused outright.
    """
    rest = url.split("://", 1)[1] if "://" in url else ""
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    path = rest[cut:].split("?", 1)[0]
    hosts = rest[:cut].rsplit("@", 1)[-1]
    ports = [h.rsplit("]", 1)[-1].rpartition(":")[2] for h in hosts.split(",") if ":" in h]
    # A second '@' before the host: libpq splits at the first, so a password's tail would
    # become the host (looked up, retried, and shown wherever the host is).
    if "@" in path or rest[:cut].count("@") > 1 or any(p and not p.isdigit() for p in ports):
        raise ValueError(
            "not a valid PostgreSQL URL: its user name or password holds a raw '@', '/', '?' "
            "or '#' (percent-encode them: %40, %2F, %3F, %23), or its database name a raw "
            "'@' (%40)"
        )
    try:
        conninfo_to_dict(url)
        return
    except psycopg.ProgrammingError as exc:
        reason = re.sub(r'"[^"]*"?', "(...)", " ".join(str(exc).split()))
    # Raised out here, so that libpq's error (quoting the token) is not even its context.
    raise ValueError(f"not a valid PostgreSQL URL: {reason}")


def redact(url: str) -> str:
    """``url`` for people: rebuilt from libpq's own parse of it, every password left out.

    Built from what libpq reads, not from the text, so a password however it was given (in
    the user-info, as ``?password=``, with raw ``#`` or bad escapes) never shows; ``***``
    says one was given. Without a password the result is the same connection, as a URL.
    """
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(an invalid URL)"
    secret = any(info.get(k) for k in _SECRETS)
    user = info.get("user")
    auth = ""
    if user is not None or secret:
        auth = quote(str(user or ""), safe="") + (":***" if secret else "") + "@"
    hosts = str(info.get("host") or "").split(",")
    ports = str(info.get("port") or "").split(",")
    netloc: list[str] = []
    query: dict[str, str] = {}
    for i, host in enumerate(hosts):
        port = ports[i] if i < len(ports) else (ports[0] if len(ports) == 1 else "")
        if host.startswith("/"):  # a Unix socket directory: only as a parameter
            query["host"] = str(info["host"])
            netloc = []
            break
        shown = f"[{host}]" if ":" in host else quote(host, safe=".-_")
        netloc.append(shown + (f":{port}" if port else ""))
    else:
        if not any(netloc) and info.get("port"):
            query["port"] = str(info["port"])
    path = "/" + quote(str(info["dbname"]), safe="") if info.get("dbname") else "/"
    for k, v in info.items():
        if k not in _PLACED and k not in _SECRETS:
            query[k] = str(v)
    tail = "?" + urlencode(query, quote_via=quote) if query else ""
    return f"postgresql://{auth}{','.join(netloc)}{path}{tail}"


def _reason(exc: BaseException) -> str:
    """PostgreSQL's reason for ``exc`` in one line, without libpq's "connection to server at
    ... failed: FATAL:" preamble, and with the SQLSTATE when the server sent one."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "FATAL:" in text:
        text = text.split("FATAL:", 1)[1]
    text = " ".join(text.split())
    state = getattr(exc, "sqlstate", None)
    return f"{text} (SQLSTATE {state})" if state else text


def valid(name: str) -> bool:
    # Rows written by other tools may hold names we would refuse to open: we do not list them.
    try:
        validate_name(name)
    except ValueError:
        return False
    return True


def key(message_id: str) -> str:
    # ASCII JSON of the id: valid PostgreSQL text whatever the id holds. An id holding
    # surrogate code points gets our exact escaping under a prefix no JSON string starts
    # with: json.dumps would give "\ud83d\ude00" both to two surrogates and to one emoji.
    if _SURROGATE.search(message_id):
        return "s:" + encode_json(message_id).decode("utf-8").rstrip("\n")
    return json.dumps(message_id)


# PostgreSQL stores at most 1 GB in one field; a larger value fails only once it is sent (and
# a connection-level failure would send it again), so it is refused before.
MAX_VALUE_BYTES: Final = (1 << 30) - 1


def text(value: Any, what: str = "a value", limit: int = MAX_VALUE_BYTES) -> str:
    # encode_json escapes NUL (as JSON always does) and falls back to ASCII escapes for lone
    # surrogates: the result is valid UTF-8 without NUL, which PostgreSQL text accepts.
    data = encode_json(value)
    if len(data) > limit:
        raise StoreError(
            f"{what} is {len(data):,} bytes once stored: more than a PostgreSQL field holds "
            f"({limit:,} bytes). Nothing was written."
        )
    return data.decode("utf-8").rstrip("\n")


# How long the first attempt of a call may take at least, whatever retry_seconds says.
_FIRST_ATTEMPT: Final = 5.0


class Connections:
    """This process's connections to ``url`` (see pgpool.py), and calls run with retries."""

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
        check_url(url)
        if not (isinstance(max_size, int) and max_size >= 1):
            raise ValueError(f"max_size must be a whole number of at least 1, got {max_size!r}")
        if not (isinstance(min_size, int) and min_size >= 0):
            raise ValueError(f"min_size must be a whole number of at least 0, got {min_size!r}")
        for option, value in (
            ("retry_seconds", retry_seconds),
            ("connect_timeout", connect_timeout),
            ("max_idle", max_idle),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"{option} must be a number of seconds (0 or more), got {value!r}")
        self.url = url
        self.location = redact(url)
        self.min_size, self.max_size = min_size, max_size
        self.retry_seconds = float(retry_seconds)
        self.connect_timeout = connect_timeout
        self._pool = Pool(
            url,
            min_size=min_size,
            max_size=max_size,
            connect_timeout=connect_timeout,
            retry_seconds=self.retry_seconds,
            max_idle=max(max_idle, 1.0),
        )
        self._on_retry = on_retry
        self._schema_checked = False
        #: True once the full-text index exists (see _ensure_schema).
        self.search_ready = False

    def close(self) -> None:
        self._pool.close()

    def run(self, work: Callable[[psycopg.Connection[Any]], T], *, what: str) -> T:
        """``work`` in one transaction. A failure of the connection or the server is retried
        until ``retry_seconds`` after the call began (connecting included, and a call still
        running then is cut off); any other failure is raised at once as [`StoreError`][],
        naming PostgreSQL's reason."""
        began = time.monotonic()
        deadline = began + self.retry_seconds
        # The first attempt always has a chance (retry_seconds=0: one attempt, no retry).
        first = max(deadline, began + min(self.connect_timeout, _FIRST_ATTEMPT))
        delay = 0.05
        retried = False
        while True:
            try:
                with self._pool.connection(first if not retried else deadline) as conn:
                    if not self._schema_checked:
                        self._ensure_schema(conn)
                    return work(conn)
            except psycopg.Error as exc:
                reason = _reason(exc)
                if not is_transient(exc):
                    raise StoreError(
                        f"session store {self.location}: {what} failed: {reason}",
                        sqlstate=exc.sqlstate,
                    ) from exc
                left = deadline - time.monotonic()
                if left <= delay:
                    raise StoreUnavailableError(
                        f"session store {self.location}: {what} failed and the server did not "
                        f"come back within {self.retry_seconds:g} s (retry_seconds): {reason}"
                    ) from exc
                if not retried:  # one line per call, not one per attempt
                    notice = (
                        f"session store {self.location}: {what} failed ({reason}); retrying "
                        f"for up to {left:.0f} s more (retry_seconds={self.retry_seconds:g})"
                    )
                    log.warning(
                        "session.store_retry",
                        store=self.location,
                        op=what,
                        error=reason,
                        retrying_for_seconds=round(left, 1),
                    )
                    if self._on_retry is not None:
                        self._on_retry(notice)
                    retried = True
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _ensure_schema(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            # The common case, without a lock: the tables are there, at our version.
            exists = conn.execute(
                "SELECT to_regclass('compaction_schema') IS NOT NULL, to_regclass(%s) IS NOT NULL",
                (SEARCH_TABLE,),
            ).fetchone()
            if exists is not None and exists[0]:
                row = conn.execute("SELECT version FROM compaction_schema").fetchone()
                if row is not None and row[0] == SCHEMA_VERSION and exists[1]:
                    self._schema_checked = self.search_ready = True
                    return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            made = conn.execute("SELECT to_regclass('compaction_schema') IS NOT NULL")
            if made.fetchone() != (True,):  # CREATE needs a privilege even when nothing is made
                # IF NOT EXISTS all the same: to_regclass can answer from a catalog cache that
                # has not yet seen the table another process created while we waited for the
                # lock; CREATE looks again, with the lock on the namespace that makes it current.
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
            self.search_ready = self._add_search(conn)
        self._schema_checked = True

    def _add_search(self, conn: psycopg.Connection[Any]) -> bool:
        """Create the full-text index where it is missing (a database made by an older
        release): True once it exists. A role that may not create tables keeps the store
        working, searched through the Session's own index, and is told so once."""
        try:
            with conn.transaction():  # a savepoint: a refusal leaves the schema check whole
                for statement in SEARCH_SCHEMA:
                    conn.execute(statement)
        except psycopg.errors.InsufficientPrivilege as exc:
            log.warning(
                "session.search_index_unavailable",
                store=self.location,
                error=_reason(exc),
                fallback="an in-memory index per Session",
            )
            return False
        return True
