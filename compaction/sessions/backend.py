"""The store interface: what a backend (files, PostgreSQL) does for the backend-neutral Session.

A backend stores, per session name: an append-only raw history with consecutive sequence
numbers, and four JSON documents (global context, state, metadata; the view). Every method
is atomic on its own and safe across processes and hosts: the [`Session`][] on top never
holds a lock across calls, so each guarantee (a batch all or nothing, a read-modify-write that
loses no concurrent change, a view stored only against the history it was computed from) is
the backend's to keep.

Documents are plain dicts: ``{"updated": <ISO 8601>, "data": {...}}`` for the mappings and
``{"updated", "through_seq", "based_on", "messages": [<encoded message>, ...]}`` for the view.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ..memory.search import SearchHit
from ..messages import Message
from .archive import Archive
from .codec import encode_message
from .errors import StaleViewError
from .history import Entry, History

__all__ = ["DOCUMENTS", "MAPPINGS", "Backend", "check_epoch", "check_view_update", "encoded_view"]

MAPPINGS: Final = ("context", "state", "metadata")
DOCUMENTS: Final = (*MAPPINGS, "view")


class Backend(abc.ABC):
    """Where sessions live. ``location`` names it in messages (a path, a URL without password)."""

    location: str

    def path(self, name: str) -> Path | None:
        """The session's directory, for a backend that has one."""
        return None

    @abc.abstractmethod
    def exists(self, name: str) -> bool:
        """True when session ``name`` has been written and not deleted."""

    @abc.abstractmethod
    def names(self) -> list[str]:
        """Every session's name, sorted."""

    @abc.abstractmethod
    def create(self, name: str) -> None:
        """Write an empty session ``name`` (nothing happens if it exists)."""

    @abc.abstractmethod
    def read(self, name: str, history: History) -> None:
        """Bring ``history`` up to date with what is committed (reset it if the session was
        cleared, deleted or replaced since)."""

    @abc.abstractmethod
    def append(
        self, name: str, history: History, messages: Sequence[Message], at: datetime
    ) -> list[Entry]:
        """Append ``messages`` as one unit (creating the session); return the stored entries.

        Ids are assigned where missing (``"<name>-<seq>"``); an id already in the session is
        a ValueError and nothing is written. ``history`` is brought up to date on the way.
        """

    @abc.abstractmethod
    def read_document(self, name: str, kind: str) -> dict[str, Any] | None:
        """The document ``kind`` of session ``name`` (None: no such document)."""

    @abc.abstractmethod
    def update_document(
        self, name: str, kind: str, mutate: Callable[[dict[str, Any]], None], updated: str
    ) -> None:
        """Atomically apply ``mutate`` to the ``data`` of mapping document ``kind``."""

    @abc.abstractmethod
    def put_view(
        self, name: str, body: dict[str, Any], min_seq: int | None, epoch: str | None
    ) -> None:
        """Store the view ``body`` unless it is stale: StaleViewError when the stored view was
        computed from a newer history (a larger ``based_on``), when the history was cleared
        past ``min_seq`` (the oldest message the view stands on), or when the session's
        generation is no longer ``epoch`` (the one the view was computed from; None: not
        checked). Refuses to replace a view written in a newer format."""

    @abc.abstractmethod
    def clear(self, name: str) -> None:
        """Empty the history and drop the view (sequence numbers carry on)."""

    @abc.abstractmethod
    def delete(self, name: str) -> None:
        """Delete the session (SessionNotFoundError if there is none)."""

    @abc.abstractmethod
    def snapshot(self, name: str) -> Archive:
        """A consistent copy of everything in the session (the export layout)."""

    @abc.abstractmethod
    def restore(self, name: str, archive: Archive) -> None:
        """Create session ``name`` holding ``archive`` (SessionExistsError if it exists), whole
        or not at all."""

    def search(
        self, name: str, history: History, query: str, limit: int, exclude: set[int]
    ) -> list[SearchHit] | None:
        """The messages of ``history`` (session ``name``, just read) matching ``query``, best
        first, at most ``limit``, none whose ``seq`` is in ``exclude``; None when the backend
        has no index of its own (the Session then keeps a SQLite FTS5 one: see searching.py).
        """
        return None

    def index(self, name: str, history: History) -> bool | None:
        """Bring the backend's own search index of session ``name`` up to date with
        ``history`` (just read): True when done, False when ``history`` is no longer the
        session's generation, None when the backend has no index of its own (the Session
        then keeps a SQLite FTS5 one: see searching.py)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional: only backends holding connections
        """Release connections (a no-op for backends without any)."""


def encoded_view(view: dict[str, Any]) -> dict[str, Any]:
    """A decoded view document back in its stored (export) shape."""
    return {
        "updated": view["updated"],
        "through_seq": view["through_seq"],
        "based_on": view["based_on"],
        "messages": [encode_message(m) for m in view["messages"]],
    }


def check_epoch(name: str, expected: str | None, current: str | None) -> None:
    """StaleViewError unless the session is still in generation ``expected``.

    Sequence numbers carry on after a clear but start again at 0 when a session is deleted
    and created anew, so ids ("<name>-<seq>") repeat across generations: only the epoch tells
    a view of the old conversation from one of the new.
    """
    if expected is not None and expected != current:
        raise StaleViewError(
            f"session {name!r} was cleared, or deleted and re-created, after this view was "
            "computed: storing it would bring back deleted messages (or hide new ones). "
            "Recompute it from session.view() and store that."
        )


def check_view_update(
    name: str, stored: dict[str, Any] | None, body: dict[str, Any], min_seq: int | None, first: int
) -> None:
    """The compare-and-set rule every backend applies before storing a view (StaleViewError)."""
    if stored is not None and stored["based_on"] > body["based_on"]:
        raise StaleViewError(
            f"session {name!r} already has a view computed from {stored['based_on']} messages "
            f"of history; this one was computed from {body['based_on']}: storing it would roll "
            "the session back. Recompute it from session.view() and store that."
        )
    if min_seq is not None and min_seq < first:
        raise StaleViewError(
            f"session {name!r} was cleared after this view was computed (it stands on message "
            f"seq {min_seq}; the history now starts at {first}): it would bring back deleted "
            "messages"
        )
