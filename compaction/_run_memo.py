"""What one compaction run keeps while it lasts: readings of the views its layers hand down.

A ladder's layers each read the conversation they are handed, and each hands the next one a
view that is mostly the same message objects (a layer rewrites a stretch and keeps the
rest). A reading that can be brought up to date from the previous view's (its shape, for
one) is kept here for the next layer, so the part that did not change is not read again.
The engine opens a memo when a run starts and drops it when the run ends: nothing outlives
the run, so no conversation is held after it, and a call outside a run finds no memo and
reads everything, as it always did.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

__all__ = ["close", "memo", "open_memo"]

_memo: ContextVar[dict[str, Any] | None] = ContextVar("compaction_run_memo", default=None)


def open_memo() -> Token[dict[str, Any] | None]:
    """Start an empty memo for the run in progress (the engine calls it)."""
    return _memo.set({})


def close(token: Token[dict[str, Any] | None]) -> None:
    """Drop the memo [`open_memo`][] started (the end of a run)."""
    _memo.reset(token)


def memo() -> dict[str, Any] | None:
    """The memo of the run in progress, or None outside a run."""
    return _memo.get()
