"""Persistent named sessions (seed 001): conversations that survive CLI runs and lose nothing.

    store = SessionStore()                    # or SessionStore("/some/dir")
    session = store.open("chat")
    session.add_user("Hello")
    session.global_context["stage"] = "planning"
    view = pipeline.compact(session.view(), target=...).messages
    session.set_view(view)                    # the raw history stays; recall() finds any of it

Every write is stored, atomically, when the call returns; several processes (and, on
PostgreSQL, several hosts) may append to the same session at once. The store is chosen by a
path or URL (``SessionStore.from_url("postgresql://…")``, ``file:///dir``, or
``$COMPACTION_SESSIONS_URL``); the backend-neutral [`Session`][] is the same on each.

Layers, importing downwards only: ``store`` → ``session`` → (``mapping``, ``recall``,
``searching``, ``formatting``, ``archive``, ``backend``) →
``history``/``codec``/``files``/``names``/``errors``;
the backends (``filestore`` + ``journal``; ``postgres`` + ``pgarchive``/``pgrows`` +
``pgsearch`` + ``pgconn`` + ``pgpool``) sit beside ``session``, below ``store``;
tests/test_sessions_hardening.py checks there is no cycle.
"""

from __future__ import annotations

from .backend import Backend
from .errors import (
    InvalidSessionName,
    SessionError,
    SessionExistsError,
    SessionFormatError,
    SessionNotFoundError,
    StaleViewError,
    StoreError,
    StoreSchemaError,
    StoreUnavailableError,
)
from .files import UnsafeLocationError
from .history import Entry
from .mapping import SessionMapping
from .names import validate_name
from .recall import RecallTool
from .session import Session
from .store import ENV_VAR, URL_ENV_VAR, SessionStore, default_root

__all__ = [
    "ENV_VAR",
    "URL_ENV_VAR",
    "Backend",
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
    "StaleViewError",
    "StoreError",
    "StoreSchemaError",
    "StoreUnavailableError",
    "UnsafeLocationError",
    "default_root",
    "validate_name",
]
