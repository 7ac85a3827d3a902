"""The turn lease: which run may extend a session's conversation right now, kept in the store.

Two runs of an agent on one session (two workers that took the same message, a client that
retried while the first run was still going) would otherwise both take the newest prompt
as theirs: a paid tool runs twice, and two calls with one id wedge the history. So a run
takes the session's lease before it touches the history, renews it while it runs, and gives
it back at the end; a run that finds a live lease another holds is refused. The lease lives
in the session's metadata (``turn_lease``: holder and expiry, in seconds since the epoch),
written under the session's own lock, so every process and host on the store sees it; a
holder that died stops renewing, and its lease lapses after ``seconds`` (at once for a
process of this host that is gone).
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Final, Protocol

__all__ = ["KEY", "release", "take"]

KEY: Final = "turn_lease"


class _Documents(Protocol):
    def _update_data(self, kind: str, mutate: Any) -> None: ...


def _dead(held: dict[str, Any]) -> bool:
    """True when the holder ran on this host in a process that is gone (killed, crashed):
    its lease need not lapse first. Only where asking costs nothing (POSIX signal 0)."""
    pid = held.get("pid")
    if os.name != "posix" or held.get("host") != socket.gethostname():
        return False
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False


def take(session: _Documents, holder: str, seconds: float) -> dict[str, Any] | None:
    """Take or renew ``holder``'s lease for ``seconds``; None when taken, else the live lease
    another holder has (nothing is changed then). A lease whose holder's process is gone
    from this host counts as lapsed."""
    other: dict[str, Any] = {}

    def mutate(data: dict[str, Any]) -> None:
        held = data.get(KEY)
        now = time.time()
        if (
            isinstance(held, dict)
            and held.get("holder") != holder
            and isinstance(held.get("until"), int | float)
            and held["until"] > now
            and not _dead(held)
        ):
            other.update(held)
            return
        data[KEY] = {
            "holder": holder,
            "until": now + seconds,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }

    session._update_data("metadata", mutate)
    return other or None


def release(session: _Documents, holder: str) -> None:
    """Give ``holder``'s lease back (a lease another holder took since is left alone)."""

    def mutate(data: dict[str, Any]) -> None:
        held = data.get(KEY)
        if isinstance(held, dict) and held.get("holder") == holder:
            del data[KEY]

    session._update_data("metadata", mutate)
