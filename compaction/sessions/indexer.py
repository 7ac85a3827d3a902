"""Index sessions off the caller's thread: ``SessionStore(..., index_views=True)``.

A search brings a session's index up to date with its history, so nothing needs indexing
ahead of it; but the first search after a long stretch then pays for all of it, inside a
model's tool call. With ``index_views=True`` each stored view (each compaction) hands its
session to the store's indexer, one thread that brings the index up to date while the agent
goes on: the caller's ``set_view`` only queues the session, and the indexing happens while
the agent waits for its model. It moves the work, it does not make it cheaper: writes made
while a pass runs share the disk (PostgreSQL flushes the index's log with the next commit)
and the interpreter with it (the search section of ``benchmarks/RESULTS.md``).

The rules it keeps, and why:

- **Bounded.** One entry per session object, however many views it stores while waiting
  (the indexer brings the newest history in, so one pass serves them all), and at most
  ``limit`` sessions waiting: past that a view is not queued (logged as
  ``session.index_skipped``); its messages are indexed by the next pass or the next search.
  Nothing is lost either way: the index is derived from the history.
- **Never in the caller's way for longer than a read.** The indexer holds the session's lock
  only while it reads and copies the history, never while the index is written (PostgreSQL's
  statement, or the Session's own SQLite index, which has a lock of its own: a search waits
  for it, an append does not).
- **Failures are visible, not raised.** A pass that fails (the server went away, say) is
  logged as ``session.index_failed``; the next search indexes what it missed.
- **Fork-safe.** A child process does not inherit the parent's thread (nor a lock it may have
  held at the fork): the first call in the child starts afresh, with an empty queue.
- **Closed with the store.** ``SessionStore.close()`` waits up to ``timeout`` seconds for
  what is queued (``wait`` does the same without closing), then stops the thread.

A thread of our own rather than a ``concurrent.futures`` executor: an executor queues one
task per call, and what is wanted is one pending entry per session, the newest history
indexed once.
"""

from __future__ import annotations

import os
import threading
from typing import Final

from .._log import log
from .searching import Session, update_index

__all__ = ["DEFAULT_LIMIT", "Indexer"]

#: Sessions that may wait for the indexer at once (see the module docstring).
DEFAULT_LIMIT: Final = 1024


class Indexer:
    """Brings session search indexes up to date on a thread of its own (started on first
    use). ``submit`` queues a session; ``wait`` blocks until everything queued is indexed;
    ``close`` waits (bounded) and stops the thread."""

    def __init__(self, *, limit: int = DEFAULT_LIMIT) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, got {limit!r}")
        self.limit = limit
        #: Passes that failed, and sessions not queued because ``limit`` were waiting.
        self.failed = self.skipped = 0
        self._closed = False
        self._fresh()

    def _fresh(self) -> None:
        """An empty queue and no thread, for this process."""
        self._pid = os.getpid()
        self._pending: dict[int, Session] = {}  # in the order they came; one per object
        self._running = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def _here(self) -> threading.Condition:
        """The condition to take, after starting afresh in a forked child (its copy of the
        parent's thread does not run, and the parent's lock may have been held at the fork)."""
        if self._pid != os.getpid():
            self._fresh()
        return self._cond

    def submit(self, session: Session) -> bool:
        """Queue ``session`` to be indexed; False when it was not (closed, or ``limit``
        sessions already waiting: the next search indexes it)."""
        with self._here():
            if self._closed:
                return False
            if id(session) in self._pending:
                return True
            if len(self._pending) >= self.limit:
                self.skipped += 1
                log.warning("session.index_skipped", session=session.name, waiting=self.limit)
                return False
            self._pending[id(session)] = session
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="compaction-indexer", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()
            return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until everything queued so far is indexed (or failed); False when
        ``timeout`` seconds passed first."""
        with self._here():
            return self._cond.wait_for(lambda: not self._pending and not self._running, timeout)

    def close(self, timeout: float | None = 30.0) -> bool:
        """Index what is queued (waiting at most ``timeout`` seconds), then stop the thread;
        True when everything queued was indexed. What is left is indexed by a later search."""
        with self._here():
            self._closed = True
            done = self._cond.wait_for(lambda: not self._pending and not self._running, timeout)
            self._pending.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return done

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._closed)
                if not self._pending:
                    return
                session = self._pending.pop(next(iter(self._pending)))
                self._running += 1
            try:
                update_index(session)
            except Exception as exc:  # any failure: the next search catches up
                self.failed += 1
                log.warning(
                    "session.index_failed",
                    session=session.name,
                    error=f"{type(exc).__name__}: {exc}",
                )
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()
