"""Persistent named sessions (seed 001): conversations that survive CLI runs and lose nothing.

    store = SessionStore()                    # or SessionStore("/some/dir")
    session = store.open("chat")
    session.add_user("Hello")
    session.global_context["stage"] = "planning"
    view = pipeline.compact(session.view(), target=...).messages
    session.set_view(view)                    # the raw history stays; recall() finds any of it

Every write is on disk, atomically, when the call returns; several processes may append to
the same session at once; files are owner-only and carry a format version.
"""

from __future__ import annotations

from .errors import (
    InvalidSessionName,
    SessionError,
    SessionExistsError,
    SessionFormatError,
    SessionNotFoundError,
)
from .journal import Entry
from .mapping import SessionMapping
from .names import validate_name
from .recall import RecallTool
from .session import Session
from .store import ENV_VAR, SessionStore, default_root

__all__ = [
    "ENV_VAR",
    "Entry",
    "InvalidSessionName",
    "RecallTool",
    "Session",
    "SessionError",
    "SessionExistsError",
    "SessionFormatError",
    "SessionMapping",
    "SessionNotFoundError",
    "SessionStore",
    "default_root",
    "validate_name",
]
