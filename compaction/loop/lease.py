"""One run at a time on a session: the turn lease a run holds while it extends the history.

Two runs on one session (two workers that took the same message, a client retrying while
the first run still goes) would both take the newest prompt as theirs: a paid tool would run
twice, and two calls with one id would wedge the history for every later run. So a run on a
persistent session first takes the session's turn lease, kept in the store (see
`compaction.sessions.lease`) so that runs in other processes and on other hosts see it;
a run that finds it held by another is refused with `TurnHeldError` before it touches
the history. The lease is renewed while the run goes on and given back when it ends; a run
that died stops renewing, and its lease lapses after ``LEASE_SECONDS`` (at once when it ran
on the same host), when a retry may finish its turn.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any, Final

from .._log import log

__all__ = ["LEASE_SECONDS", "TurnHeldError", "turn_lease"]

#: How long a lease lasts unless renewed (it is renewed every third of that).
LEASE_SECONDS: Final = 60.0


class TurnHeldError(RuntimeError):
    """Another run holds the session's turn: running this one too would repeat its tools and
    interleave two turns in one history. Retry once that run has finished (or its lease has
    lapsed, if it died)."""


@contextlib.contextmanager
def turn_lease(session: Any, loop: str, seconds: float = LEASE_SECONDS) -> Iterator[None]:
    """Hold ``session``'s turn lease for the block (nothing for a session without one)."""
    take = getattr(session, "take_turn", None)
    release = getattr(session, "release_turn", None)
    if take is None or release is None:
        yield
        return
    holder = uuid.uuid4().hex
    held = take(holder, seconds)
    if held is not None:
        left = max(0.0, float(held.get("until", 0)) - time.time())
        raise TurnHeldError(
            f"TurnLoop {loop!r}: another run is extending session "
            f"{getattr(session, 'name', '?')!r} now (its lease runs {left:.0f} s more unless "
            "renewed); this run would repeat its tool calls. Retry when it has finished."
        )
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(seconds / 3):
            try:
                take(holder, seconds)
            except Exception as exc:  # the store is away: the lease may lapse, said once
                log.warning("loop.lease_renewal_failed", loop=loop, error=exc)

    renewer = threading.Thread(target=renew, name="compaction-turn-lease", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        try:
            release(holder)
        except Exception as exc:  # it lapses by itself
            log.warning("loop.lease_release_failed", loop=loop, error=exc)
