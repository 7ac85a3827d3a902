"""A small per-process pool of PostgreSQL connections, and which failures are worth a retry.

Why not psycopg_pool: its connections are made by a background worker that retries with a
growing back-off and only *logs* why a connection failed. A caller then waits for a
connection it cannot get: a wrong password took the whole retry budget and ended in
"couldn't get a connection", the cause only in a dozen warnings on stderr, and after an
outage the back-off kept the pool empty for up to ~10 s after the server was back. Here each
call connects itself, when it needs a connection, so it sees libpq's own error at once: a
failure the server *answered* (wrong password, no such role or database) is final, and one
it did not (refused, timed out, reset) is retried at once until the caller's deadline.

A forked child inherits its parent's sockets. It must neither use them nor close them
cleanly (closing sends PostgreSQL a Terminate message on the parent's session): after a
fork each inherited socket is pointed at the null device, so whatever the child does with
them, the parent's connections are untouched, and the child connects afresh.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Final

import psycopg

__all__ = ["Pool", "is_transient"]

# SQLSTATEs of failures that say nothing about the request: the connection or the server
# went away (class 08, admin/crash shutdown, not accepting connections yet), too many
# clients for now, or a transaction that lost a race (serialization failure, deadlock).
_TRANSIENT_STATES: Final = frozenset({"57P01", "57P02", "57P03", "53300", "40001", "40P01"})
# What libpq says when the server answered a connection attempt with a transient refusal.
_TRANSIENT_FATAL: Final = (
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "too many clients",
    "remaining connection slots are reserved",
)


# What libpq says, without a server error, when the settings or credentials are wrong: a bad
# option value, no password, TLS or GSSAPI the server cannot do. Asking again cannot help.
_CLIENT_SIDE_FINAL: Final = (
    "invalid ",
    "fe_sendauth",
    "password",
    "does not support SSL",
    "GSSAPI",
    "certificate",
    "SCRAM",
    "not supported",
)


def is_transient(exc: BaseException) -> bool:
    """True for a failure of the connection or the server (retry), False for one of the request
    or the credentials (retrying sends the same request to the same answer)."""
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is not None:
        return state.startswith("08") or state in _TRANSIENT_STATES
    if not isinstance(exc, psycopg.OperationalError):
        return False
    text = str(exc)
    # A connection attempt the server answered with an error (libpq prefixes it FATAL):
    # a wrong password or a missing role or database is final; a server starting up is not.
    if "FATAL:" in text:
        return any(reason in text for reason in _TRANSIENT_FATAL)
    # Refused, unreachable, timed out, reset, closed: the network's or the server's doing.
    return not any(reason in text for reason in _CLIENT_SIDE_FINAL)


_POOLS: weakref.WeakSet[Pool] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):
        pool.forget_inherited()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Pool:
    """Up to ``max_size`` connections to ``url``, kept between calls, made on demand."""

    def __init__(self, url: str, *, max_size: int, connect_timeout: float) -> None:
        self.url = url
        self.max_size = max_size
        self.connect_timeout = connect_timeout
        self._idle: list[psycopg.Connection[Any]] = []
        self._slots = threading.BoundedSemaphore(max_size)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        _POOLS.add(self)

    def _connect(self, seconds: float) -> psycopg.Connection[Any]:
        # libpq takes whole seconds, at least 2: the caller's deadline is kept to within that.
        timeout = max(2, math.ceil(min(self.connect_timeout, seconds)))
        return psycopg.connect(self.url, connect_timeout=timeout)

    @contextlib.contextmanager
    def connection(self, seconds: float) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one call (waiting at most ``seconds`` for a free one); a
        connection that failed, or is left mid-transaction, is closed, not reused."""
        if not self._slots.acquire(timeout=max(0.0, seconds)):
            raise psycopg.OperationalError(
                f"all {self.max_size} connections of this process stayed busy"
            )
        conn: psycopg.Connection[Any] | None = None
        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None or conn.closed:
                conn = self._connect(seconds)
            yield conn
        finally:
            if conn is not None:
                self._give_back(conn)
            self._slots.release()

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        # A read leaves its implicit transaction open, and a failed call may leave one
        # aborted: rolled back here (writes commit in their own transaction blocks). A
        # connection that is broken, or cannot be brought back to idle, is closed.
        with contextlib.suppress(Exception):
            if not conn.closed and not conn.broken:
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.rollback()
                if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                    with self._lock:
                        if self._pid == os.getpid() and len(self._idle) < self.max_size:
                            self._idle.append(conn)
                            return
        with contextlib.suppress(Exception):
            conn.close()

    def forget_inherited(self) -> None:
        """In a forked child: let go of the parent's connections without touching them."""
        with self._lock:
            inherited, self._idle = self._idle, []
            self._pid = os.getpid()
            self._slots = threading.BoundedSemaphore(self.max_size)
        for conn in inherited:
            with contextlib.suppress(Exception):
                fd = conn.fileno()
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, fd)  # this process's descriptor only: the parent's stays open
                os.close(null)
            _KEPT.append(conn)  # never finalised here, so nothing is sent on its behalf

    def close(self) -> None:
        """Close the idle connections (those of this process only)."""
        with self._lock:
            idle, self._idle = self._idle, []
            mine = self._pid == os.getpid()
        if mine:
            for conn in idle:
                with contextlib.suppress(Exception):
                    conn.close()


# Connections a forked child inherited: kept referenced so that the child never finalises
# (and so never closes) them; their descriptors already point at the null device.
_KEPT: list[psycopg.Connection[Any]] = []
