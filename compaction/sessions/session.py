"""One named, persistent conversation: raw history, global context, state, metadata, view.

The Session is backend-neutral: it reads and writes through a
[`Backend`][compaction.sessions.backend.Backend] (files by default, or PostgreSQL for fleets of
workers; see ``SessionStore.from_url``), and every guarantee below holds on each:

- every change is stored when the call returns (there is nothing to forget to save);
  ``save()`` exists to create the session before anything is written;
- ``add`` of several messages is one unit: all of them are committed, or none;
- appends from many processes (and hosts) serialise per session: nothing lost, nothing
  doubled, each writer's order kept;
- ``set_view`` is compare-and-set against the history the view was computed from.

The async methods (``aadd``, ``aview``, ``aset_view``, ...) run the same call in a worker
thread, so a session used from async code never blocks the event loop on disk or network.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .._atomic import write_atomic
from ..memory.search import SearchHit, SearchIndex
from ..messages import Message
from . import lease
from .archive import dump_archive
from .backend import Backend, check_epoch
from .codec import check_json, format_ts, now, parse_ts
from .errors import SessionFormatError
from .formatting import format_history
from .history import Entry, History
from .mapping import SessionMapping
from .recall import RecallTool, SearchTool
from .searching import search_session
from .views import repaired, view_document

if TYPE_CHECKING:
    from .indexer import Indexer

__all__ = ["Session"]


class Session:
    """A named conversation context in a session store (get one with ``store.open``).

    Opening does not create anything: ``exists()`` stays False, and ``messages`` is empty,
    until the first write or ``save()``.
    """

    def __init__(
        self, backend: Backend, name: str, *, store: object = None, indexer: Indexer | None = None
    ) -> None:
        self.backend = backend
        self.store = store
        # Set by a store made with index_views=True: each stored view queues the session there.
        self._indexer = indexer
        self.name = name
        self._history = History()
        # The generation of the history last handed to the caller: the one a view it stores
        # was computed from (see set_view).
        self._seen: str | None = None
        self._mutex = threading.RLock()
        # The search index, opened on the first search (see search()).
        self._search: SearchIndex | None = None
        # The view this Session stored last, its generation and the seq it covers up to: how
        # far ahead of a search the index is brought is read from it (searching.update_index).
        self._stored_view: tuple[str | None, Sequence[Message], int] | None = None
        self.global_context = SessionMapping(self, "context", "global context")
        self.state = SessionMapping(self, "state", "state")
        self.metadata = SessionMapping(self, "metadata", "metadata")

    @property
    def path(self) -> Path | None:
        """The session's directory (file store), or None (a database has no path)."""
        return self.backend.path(self.name)

    @property
    def location(self) -> str:
        """Where the session lives, for people: a directory, or ``<database URL>#<name>``."""
        path = self.path
        return str(path) if path is not None else f"{self.backend.location}#{self.name}"

    def __repr__(self) -> str:
        return f"<Session {self.name!r} at {self.location}>"

    def exists(self) -> bool:
        """True once the session has been written (and until it is deleted)."""
        return self.backend.exists(self.name)

    def save(self) -> Session:
        """Make sure the session exists. Every change is already saved when made."""
        self.backend.create(self.name)
        return self

    # -- the JSON documents ------------------------------------------------------------------

    def _read_data(self, kind: str) -> dict[str, Any]:
        doc = self.backend.read_document(self.name, kind)
        return {} if doc is None else doc["data"]

    def _update_data(self, kind: str, mutate: Callable[[dict[str, Any]], None]) -> None:
        self.backend.update_document(self.name, kind, mutate, format_ts(now()))

    def take_turn(self, holder: str, seconds: float) -> dict[str, Any] | None:
        """Take (or renew) the turn lease for ``holder``; None when taken, else the live lease
        another run holds (see `compaction.sessions.lease`)."""
        return lease.take(self, holder, seconds)

    def release_turn(self, holder: str) -> None:
        """Give back ``holder``'s turn lease."""
        lease.release(self, holder)

    def _refresh(self) -> History:
        with self._mutex:
            self.backend.read(self.name, self._history)
            return self._history

    # -- the raw history ---------------------------------------------------------------------

    @property
    def entries(self) -> tuple[Entry, ...]:
        """The raw history with each message's sequence number and timestamp."""
        with self._mutex:
            history = self._refresh()
            self._seen = history.epoch
            return tuple(history.entries)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The full raw history, oldest first (empty for a session not written yet)."""
        return tuple(entry.message for entry in self.entries)

    def last(self, n: int) -> tuple[Message, ...]:
        """The ``n`` most recent messages, oldest first."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"last(n) needs a non-negative int, got {n!r}")
        messages = self.messages
        return messages[len(messages) - n :] if n else ()

    def add(
        self,
        message: Message | Iterable[Message],
        /,
        *more: Message,
        at: datetime | None = None,
    ) -> tuple[Message, ...]:
        """Append messages to the raw history; return them as stored (with their ids).

        A message without an ``id`` gets ``"<session>-<seq>"``. ``at`` sets the timestamp
        (default: now). The batch is one write: all of it is committed, or none.
        """
        batch = [message] if isinstance(message, Message) else list(message)
        batch.extend(more)
        for i, item in enumerate(batch):
            if not isinstance(item, Message):
                raise TypeError(f"add() takes Message objects; item {i} is {type(item).__name__}")
            if item.meta:
                # Stored as JSON: hand back (and keep) what a fresh process will read.
                meta = check_json(dict(item.meta), f"meta of message {i}")
                if meta != dict(item.meta):
                    batch[i] = attrs.evolve(item, meta=meta)
        if not batch:
            return ()
        with self._mutex:
            entries = self.backend.append(self.name, self._history, batch, at or now())
        return tuple(entry.message for entry in entries)

    def add_user(self, text: str, *, at: datetime | None = None, **fields: Any) -> Message:
        """Append a user message (``fields`` as for Message); return it as stored."""
        return self.add(Message("user", text, **fields), at=at)[0]

    def add_assistant(
        self, text: str = "", *, at: datetime | None = None, **fields: Any
    ) -> Message:
        """Append an assistant message (``fields`` as for Message); return it as stored."""
        return self.add(Message("assistant", text, **fields), at=at)[0]

    def clear(self) -> None:
        """Empty the history (and the view). Global context, state and metadata stay.

        Unlike compaction, which never loses a message, this is deletion on request: the
        raw history is gone, so [`recall`][] of an id from before the clear answers None.
        Ids are never reused (sequence numbers carry on), so an old id never names a newer
        message. Export the session first to keep a copy.
        """
        with self._mutex:
            self.backend.clear(self.name)
            self._history.reset()
            self._seen = None

    def delete(self) -> None:
        """Delete the session and everything in it (the store's ``delete``)."""
        self.backend.delete(self.name)
        with self._mutex:
            self._history.reset()
            self._seen = None

    @property
    def created(self) -> datetime | None:
        """When the session was first written (None before that)."""
        with self._mutex:
            return self._refresh().created

    @property
    def updated(self) -> datetime | None:
        """When anything in the session last changed (None before it exists)."""
        moments: list[datetime] = []
        with self._mutex:
            history = self._refresh()
            if history.created is not None:
                moments.append(history.created)
            if history.entries:
                moments.append(history.entries[-1].timestamp)
        if moments:
            for kind in ("context", "state", "metadata", "view"):
                doc = self.backend.read_document(self.name, kind)
                if doc is not None:
                    moments.append(parse_ts(doc["updated"], self._bad))
        return max(moments) if moments else None

    # -- the compacted view and recall -------------------------------------------------------

    def _bad(self, reason: str) -> SessionFormatError:
        return SessionFormatError(self.location, reason)

    def set_view(self, messages: Sequence[Message], *, based_on: int | None = None) -> None:
        """Store ``messages`` (a compacted view of the history) beside the raw history.

        Every message a view stands in for (``meta["compaction"]["replaces"]``) must be in the
        raw history, so that it can be recalled: a view that would lose a message is refused.

        Compare-and-set: ``based_on`` is how much history the view was computed from (the
        ``next_seq`` the caller saw, i.e. the number of messages ever added when it read
        them; by default, through the newest message the view covers). A view is refused with
        [`StaleViewError`][] when the stored one was computed from more history, or when
        the history was cleared under it, so a worker that fell behind never rolls the
        session back.

        Generations: the view is taken to be computed from the history this Session object
        last read (``messages``, ``entries``, ``view()``, ...). If the session was cleared, or
        deleted and created again, since then, the view is refused with
        [`StaleViewError`][] even without ``based_on``: ids start again at ``<name>-0``
        after a re-create, so they alone cannot tell the old conversation from the new.
        """
        view = list(messages)
        for i, item in enumerate(view):
            if not isinstance(item, Message):
                raise TypeError(
                    f"set_view() takes Message objects; item {i} is {type(item).__name__}"
                )
        with self._mutex:
            expected = self._seen
            history = self._refresh()
            check_epoch(self.name, expected, history.epoch)
            expected = history.epoch
            body, oldest, through = view_document(self.name, view, history, based_on)
            self.backend.put_view(self.name, body, oldest, expected)
            self._stored_view = (expected, view, through)
        if self._indexer is not None:
            self._indexer.submit(self)

    save_view = set_view

    def view(self) -> tuple[Message, ...]:
        """The messages to send: the stored view plus anything added after it was taken.

        Without a stored view, the raw history. A conversation a provider would refuse (a
        tool call whose result was never stored, say a process killed mid-tool before
        batches were atomic) is repaired visibly, as the transcript readers do: the call gets
        an explicit "no result recorded" answer marked ``meta["repair"]``; the raw history
        itself is left as it is.
        """
        with self._mutex:
            entries = self.entries
            doc = self.backend.read_document(self.name, "view")
        if doc is None:
            messages = tuple(e.message for e in entries)
        else:
            through = doc["through_seq"]
            later = tuple(e.message for e in entries if e.seq >= through)
            messages = tuple(doc["messages"]) + later
        return repaired(self.name, messages)

    def recall(self, ref: str) -> Message | None:
        """The original message ``ref`` names (an id, or a ``sha1:`` fingerprint), or None
        (never stored, or emptied by [`clear`][])."""
        with self._mutex:
            entry = self._refresh().find(ref)
        return None if entry is None else entry.message

    def recall_tool(self) -> RecallTool:
        """``recall`` as a tool for the model: ``.spec``/``.openai()`` and a callable."""
        return RecallTool(self)

    def search(self, query: str, limit: int = 5, *, include_view: bool = False) -> list[SearchHit]:
        """The messages of this session's raw history that match ``query`` (words, any of
        them), best first, each with a snippet and the id [`recall`][] takes. By default only
        what the current view no longer shows whole (what a compaction took out of view, or
        cut): the model can read the rest already. ``include_view=True`` searches it all.

        The index is the store's own where it has one (PostgreSQL's full-text search),
        else SQLite FTS5 beside the journal (files) or in memory; it holds this session's
        messages only (see [`compaction.sessions.searching`][])."""
        return search_session(self, query, limit, include_view)

    def search_tool(self) -> SearchTool:
        """``search`` as a tool for the model, beside [`recall_tool`][]."""
        return SearchTool(self)

    # -- presentation and export -------------------------------------------------------------

    def format_history(self, with_metadata: bool = False) -> str:
        """The history as text, one message per line: timestamp, role, content.

        ``with_metadata`` adds a header with the session's timestamps, metadata, global
        context and state, and each message's id, token count and meta.
        """
        return format_history(self, with_metadata)

    def snapshot(self) -> dict[str, Any]:
        """Everything in the session as JSON-ready data (what ``export`` writes)."""
        return self.backend.snapshot(self.name).to_json()

    def export_bytes(self) -> bytes:
        """The export file's bytes: the whole session, as ``export`` writes it."""
        return dump_archive(self.backend.snapshot(self.name))

    def export(self, path: str | os.PathLike[str]) -> Path:
        """Write the whole session to one JSON file (owner-only, atomically); return its path.

        The file imports unchanged into any store, file or database (``store.import_``). Only a
        regular file is ever replaced: a symlink, FIFO or device at ``path`` is refused
        (``NotRegularFileError``), never written through or swapped out.
        """
        target = Path(path)
        write_atomic(target, self.export_bytes(), mode=0o600)
        return target

    # -- async: the same calls, off the event loop ---------------------------------------------

    async def aadd(
        self, message: Message | Iterable[Message], /, *more: Message, at: datetime | None = None
    ) -> tuple[Message, ...]:
        """[`add`][] from async code (runs in a worker thread)."""
        return await asyncio.to_thread(self.add, message, *more, at=at)

    async def aview(self) -> tuple[Message, ...]:
        """[`view`][] from async code (runs in a worker thread)."""
        return await asyncio.to_thread(self.view)

    async def aset_view(self, messages: Sequence[Message], *, based_on: int | None = None) -> None:
        """[`set_view`][] from async code (runs in a worker thread)."""
        await asyncio.to_thread(self.set_view, messages, based_on=based_on)

    async def amessages(self) -> tuple[Message, ...]:
        """[`messages`][] from async code (runs in a worker thread)."""
        return await asyncio.to_thread(lambda: self.messages)

    async def arecall(self, ref: str) -> Message | None:
        """[`recall`][] from async code (runs in a worker thread)."""
        return await asyncio.to_thread(self.recall, ref)
