"""This process's PostgreSQL connections (psycopg_pool), and which failures are worth a retry.

psycopg_pool makes connections in background workers and queues waiting callers first come,
first served (no thread is starved while others call back to back). Left at its defaults it
has the failings of any pool for a store that promises a bounded, honest call; each is
configured away here:

- **A failure the server answered is final at once.** The workers only *log* why a
  connection failed, so a caller would wait its whole budget for a wrong password and then
  read "couldn't get a connection". Here a failed connection attempt is handed to every
  waiting caller as their error: one a retry cannot change (see `is_transient`) is final
  at once, and the caller retries any other itself, saying so.
- **Bounded waits.** A caller waits for a connection at most until its own deadline; every
  connection carries TCP keepalives and ``tcp_user_timeout`` (a partition is noticed by the
  kernel), and a watchdog shuts the socket of a call still running at its deadline (a frozen
  server, or a proxy that stops forwarding, which TCP cannot notice), so the call fails
  instead of waiting for ever.
- **Reconnect promptly.** Reconnection attempts back off to at most half a second apart, so a
  server back from a restart is used within that, not after a back-off of many seconds.
- **`check` without a round trip.** A connection is checked as it is handed out: an idle
  connection whose socket is readable was ended by the server (a restart, an
  ``idle_session_timeout``, a pooler's idle limit); it is closed, with every other idle one
  the same wave ended, instead of failing the caller's call.
- **`max_idle`.** Connections beyond ``min_size`` unused for ``max_idle`` seconds are closed.
- **No server-side prepared statements** (``prepare_threshold=None``), so the store works
  behind a transaction-pooling PgBouncer, where consecutive transactions land on different
  server connections.
- **Fork safety.** Nothing runs at fork time (an after-fork hook can deadlock on a lock another
  thread held). A process uses only a pool it made itself: a forked child finds its parent's
  pool by process id, never touches it, never closes or finalises its connections (which
  would end the parent's sessions), and opens its own.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import math
import os
import select
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Final

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

__all__ = ["Pool", "is_transient"]

# psycopg_pool logs each failed attempt as a warning; with no logging configured Python would
# print them on stderr. Our own error (and one retry warning per call) says it better.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

# SQLSTATEs of failures that say nothing about the request: the connection or the server
# went away (class 08, admin/crash shutdown, not accepting connections yet, an idle session
# ended by idle_session_timeout), too many clients for now, or a transaction that lost a
# race (serialization failure, deadlock).
_TRANSIENT_STATES: Final = frozenset(
    {"57P01", "57P02", "57P03", "57P05", "53300", "40001", "40P01"}
)
# What libpq says when the server (or a pooler) answered a connection attempt with a
# refusal that passes: starting or stopping, or a connection limit reached for now.
_TRANSIENT_FATAL: Final = (
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "too many clients",
    "too many connections for role",
    "too many connections for database",
    "remaining connection slots are reserved",
    "idle-session timeout",
    "no more connections allowed",  # PgBouncer: max_client_conn
    "pgbouncer cannot connect to server",
    "query_wait_timeout",
    "server conn crashed",
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
    if isinstance(exc, psycopg.InternalError):
        # psycopg's own protocol surprise (no SQLSTATE): a reply cut short or doubled by a
        # connection lost mid-command, behind a pooler say. The connection is dropped, and
        # every write is safe to retry (its token is checked first).
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    text = str(exc)
    # A connection attempt the server answered with an error (libpq prefixes it FATAL, and
    # PgBouncer ERROR): a wrong password or a missing role or database is final; a server
    # starting up, or a connection limit reached, is not.
    if "FATAL:" in text or "ERROR:" in text:
        return any(reason in text for reason in _TRANSIENT_FATAL)
    # Refused, unreachable, timed out, reset, closed: the network's or the server's doing.
    return not any(reason in text for reason in _CLIENT_SIDE_FINAL)


# -- the watchdog: a call still running at its deadline has its socket shut ------------------


class _Watchdog:
    """One thread per process that shuts the socket of each call still running at its
    deadline; ``disarm`` returns only once that can no longer happen to the call."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, psycopg.Connection[Any]] = {}
        self._ids = itertools.count()
        threading.Thread(target=self._run, name="compaction-pg-watchdog", daemon=True).start()

    def arm(self, conn: psycopg.Connection[Any], deadline: float) -> int:
        with self._cond:
            token = next(self._ids)
            self._armed[token] = conn
            heapq.heappush(self._heap, (deadline, token))
            if self._heap[0][1] == token:
                self._cond.notify()
            return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._armed.pop(token, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, token = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                conn = self._armed.pop(token)
                _shut(conn)  # under the lock: the call cannot have given it back meanwhile


def _shut(conn: psycopg.Connection[Any]) -> None:
    # shutdown() acts on the socket, not on the descriptor: a blocked read or write of libpq
    # returns at once with an error, and the connection is broken (the pool drops it).
    with contextlib.suppress(Exception):
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()


_WATCHDOGS: dict[int, _Watchdog] = {}


def _watchdog() -> _Watchdog:
    # Keyed by process: a forked child has no watchdog thread, so it starts its own.
    pid = os.getpid()
    found = _WATCHDOGS.get(pid)
    if found is None:
        found = _WATCHDOGS.setdefault(pid, _Watchdog())
    return found


# -- the pool --------------------------------------------------------------------------------

# How far apart reconnection attempts may back off (psycopg_pool doubles from 1 s).
_MAX_BACKOFF: Final = 0.5


def _ended_while_idle(conn: psycopg.Connection[Any]) -> bool:
    """True when the server has sent something to, or closed, a connection that is idle: it
    only does so to end it (an admin shutdown, an idle-session timeout, a pooler's limit)."""
    if conn.closed or conn.broken:
        return True
    try:
        fd = conn.fileno()
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


class _Pool(ConnectionPool[psycopg.Connection[Any]]):
    """psycopg_pool's pool, with the failure of a connection attempt passed to the callers."""

    def __init__(self, url: str, kwargs: dict[str, Any], **options: Any) -> None:
        self._pid = os.getpid()
        self.last_error: BaseException | None = None
        super().__init__(url, kwargs=kwargs, check=self._check_out, open=False, **options)

    def _connect(self, timeout: float | None = None) -> psycopg.Connection[Any]:
        try:
            conn = super()._connect(timeout)
        except Exception as exc:
            self.last_error = exc
            self._fail_waiting(exc)
            raise
        self.last_error = None
        return conn

    def _fail_waiting(self, exc: Exception) -> None:
        # The callers waiting for a connection get the failure now, instead of a timeout at
        # their deadline: a final one is final at once, and a passing one is retried by the
        # caller (pgconn.py), saying so, while its deadline lasts.
        waiting = getattr(self, "_waiting", None)
        if waiting is None:  # a psycopg_pool without it: callers see it at their deadline
            return
        with self._lock:
            clients = list(waiting)
            waiting.clear()
        for client in clients:
            client.fail(exc)

    def schedule_task(self, task: Any, delay: float) -> None:
        if type(task).__name__ == "AddConnection":
            delay = min(delay, _MAX_BACKOFF)
        super().schedule_task(task, delay)

    def _check_out(self, conn: psycopg.Connection[Any]) -> None:
        if _ended_while_idle(conn):
            self.check()  # the others the same restart or timeout ended go too
            self.check_connection(conn)

    @staticmethod
    def check_connection(conn: psycopg.Connection[Any]) -> None:
        if _ended_while_idle(conn):
            with contextlib.suppress(Exception):
                conn.close()
            raise psycopg.OperationalError("the server ended this idle connection")

    def __del__(self) -> None:
        # In a forked child the parent's pool is never finalised: that would take locks
        # another thread of the parent may have held at the fork.
        if getattr(self, "_pid", None) == os.getpid():
            super().__del__()


def _connection_kwargs(url: str, connect_timeout: float, retry_seconds: float) -> dict[str, Any]:
    """What every connection is made with; a setting the URL gives itself is kept."""
    given = conninfo_to_dict(url)
    defaults: dict[str, Any] = {
        # libpq takes whole seconds, at least 2: the caller's deadline is kept to within that.
        "connect_timeout": max(2, math.ceil(connect_timeout)),
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
        "tcp_user_timeout": int(1000 * min(max(retry_seconds, 1.0), 30.0)),
    }
    kwargs = {k: v for k, v in defaults.items() if k not in given}
    # Not libpq parameters, so not in the URL: psycopg's own.
    kwargs["prepare_threshold"] = None
    kwargs["autocommit"] = True
    return kwargs


class Pool:
    """Up to ``max_size`` connections to ``url`` in this process (a forked child opens its own)."""

    def __init__(
        self,
        url: str,
        *,
        min_size: int,
        max_size: int,
        connect_timeout: float,
        retry_seconds: float,
        max_idle: float,
    ) -> None:
        self.url = url
        self.max_size = max_size
        self._kwargs = _connection_kwargs(url, connect_timeout, retry_seconds)
        self._options = {
            "min_size": min(min_size, max_size),
            "max_size": max_size,
            "max_idle": max_idle,
            "reconnect_timeout": max(retry_seconds, 1.0),
            "num_workers": min(3, max_size),
        }
        self._pools: dict[int, _Pool] = {}

    def _pool(self) -> _Pool:
        pid = os.getpid()
        pool = self._pools.get(pid)
        if pool is None:
            # No lock: one another thread of the parent held at a fork would never be let go.
            pool = self._pools.setdefault(pid, _Pool(self.url, self._kwargs, **self._options))
        if pool.closed:
            pool.open()
        return pool

    @property
    def last_error(self) -> BaseException | None:
        """Why the last attempt to connect failed (None once one succeeded)."""
        pool = self._pools.get(os.getpid())
        return None if pool is None else pool.last_error

    @contextlib.contextmanager
    def connection(self, deadline: float) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one call, waiting for it at most until ``deadline`` (monotonic
        time), the call's socket shut if it still runs then."""
        pool = self._pool()
        try:
            conn = pool.getconn(timeout=max(0.001, deadline - time.monotonic()))
        except PoolTimeout as exc:
            cause = pool.last_error
            if isinstance(cause, psycopg.Error):
                raise cause from exc
            raise
        watchdog = _watchdog()
        token = watchdog.arm(conn, deadline)
        try:
            yield conn
        except psycopg.Error as exc:
            if is_transient(exc):  # whatever state it is in, it is not handed out again
                with contextlib.suppress(Exception):
                    conn.close()
            raise
        finally:
            watchdog.disarm(token)
            with contextlib.suppress(Exception):
                if not conn.closed and conn.info.transaction_status not in (
                    psycopg.pq.TransactionStatus.IDLE,
                    psycopg.pq.TransactionStatus.UNKNOWN,
                ):
                    conn.rollback()
            pool.putconn(conn)

    def close(self) -> None:
        """Close this process's connections (a forked child's parent's are left alone)."""
        pool = self._pools.pop(os.getpid(), None)
        if pool is not None:
            # Workers still in a connection attempt are not waited for beyond a second.
            pool.close(timeout=1.0)
