"""``Session.search``: which index answers, and which messages it may answer.

A backend with an index of its own answers from it (PostgreSQL's full-text search, see
pgsearch.py). Otherwise the Session keeps a SQLite FTS5 index
([`compaction.memory.search`][]): a file beside the journal for a store on files (brought up
to date with each search, rebuilt when missing, torn or of another generation of the history;
never a link or anything but a regular file), in memory for any other store. Either way the
index holds the one session's messages, and by default the messages the current view shows
whole are not answered: the model can read those already. For the same reason indexing ahead
of a search ([`update_index`][], the store's background indexer) indexes only through the
newest message the view no longer shows whole, what compaction took out of the model's sight:
the messages after it are indexed when a later compaction takes them, or by the next search.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from ..memory.search import SearchHit, SearchIndex
from ..messages import Message
from .backend import Backend
from .history import History


class Session(Protocol):
    """What searching needs of a [`Session`][compaction.sessions.session.Session] (which
    imports this module, so it is not imported here)."""

    name: str
    backend: Backend
    _mutex: threading.RLock
    _search: SearchIndex | None
    _history: History
    _stored_view: tuple[str | None, Sequence[Message], int] | None

    def _refresh(self) -> History: ...

    def view(self) -> Any: ...


__all__ = ["INDEX_FILE", "hidden_through", "search_session", "update_index"]

T = TypeVar("T")

#: The file store's index, in the session's directory beside the journal.
INDEX_FILE = "search.sqlite"


def search_session(session: Session, query: str, limit: int, include_view: bool) -> list[SearchHit]:
    """[`Session.search`][compaction.sessions.session.Session.search]."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive int, got {limit!r}")
    with session._mutex:
        history = session._refresh()
        entries = history.entries
        shown: set[int] = set()
        if not include_view:
            whole = _whole(session.view())
            shown = {e.seq for e in entries if _key(e.message) in whole}
        hits = session.backend.search(session.name, history, query, limit, shown)
        if hits is not None:
            return hits
        index = _index(session, history)
        return _synced(index, history, lambda index: index.search(query, limit, exclude=shown))


def _key(message: Message) -> tuple[Any, ...]:
    return (message.id, message.content, message.tool_calls)


def _whole(view: Iterable[Message]) -> set[tuple[Any, ...]]:
    """What ``view`` shows whole: the same message, not a cut or placeholder standing for it
    (what a compaction cut is searchable too)."""
    return {_key(m) for m in view}


def hidden_through(view: Sequence[Message], history: History, later: int | None = None) -> int:
    """The ``seq`` of the newest message of ``history`` that ``view`` does not show whole
    (``first_seq - 1`` when it shows them all); messages from ``seq`` ``later`` on (added
    after the view was taken: the view shows them as they are) count as shown. A walk back
    from the newest message that stops at the first one hidden."""
    whole = _whole(view)
    entries = history.entries
    end = len(entries) if later is None else max(0, min(len(entries), later - history.first_seq))
    for i in range(end - 1, -1, -1):
        if _key(entries[i].message) not in whole:
            return entries[i].seq
    return history.first_seq - 1


def _synced(index: SearchIndex, history: History, then: Callable[[SearchIndex], T]) -> T:
    """``then`` of ``index``, brought up to date with ``history`` first. An index torn in a
    way the check on opening did not see is rebuilt from the history, once."""
    messages = [e.message for e in history.entries]
    try:
        index.sync(messages, history.first_seq)
        return then(index)
    except sqlite3.DatabaseError:
        if index.path is None:
            raise
        index.rebuild()
        index.sync(messages, history.first_seq)
        return then(index)


def _index(session: Session, history: History) -> SearchIndex:
    generation = history.epoch or ""
    index = session._search
    if index is None or index.generation != generation:
        if index is not None:
            index.close()
        folder = session.backend.path(session.name)
        path = folder / INDEX_FILE if folder is not None and folder.is_dir() else None
        index = SearchIndex(path, generation=generation)
        session._search = index
    return index


def update_index(session: Session) -> None:
    """Index now, instead of at the next search (after a compaction, say, off the turn's
    path), what of ``session``'s history a search answers by default: through the newest
    message its view no longer shows whole. The messages after it are still in front of the
    model; a later compaction that takes them, or the next search, indexes them.

    A backend with an index of its own (PostgreSQL) indexes what this Session has read, its
    own writes included, without reading the history again first: messages another writer
    added since are indexed by the next search, which reads the history first, and a session
    cleared or made again meanwhile gets nothing of the old one (the backend checks its
    generation). The Session's own index reads the history first, as a search does. Either
    way the Session's lock is held only to read and copy the history, never while the index
    is written (the backend's statement, or the Session's own index, which has a lock of its
    own: a search waits for it, an append does not), so writes from another thread (the
    store's background indexer's caller, say) never queue behind it."""
    with session._mutex:
        history = session._history
        if history.cursor is None:  # never read: read it now
            history = session._refresh()
        history = _copy(history, _through(session, history))
    if session.backend.index(session.name, history) is not None:
        return
    with session._mutex:
        history = session._refresh()
        history = _copy(history, _through(session, history))
        index = _index(session, history)
    _synced(index, history, lambda index: None)


def _through(session: Session, history: History) -> int:
    """How far ahead of a search to index: through the newest message the view hides (the
    view this Session stored, else the stored one, read)."""
    known = session._stored_view
    if known is not None and known[0] == history.epoch:
        return hidden_through(known[1], history, known[2])
    return hidden_through(session.view(), history)


def _copy(history: History, through: int) -> History:
    """What ``history`` holds now through ``seq`` ``through``, apart from it: the Session may
    read or clear it meanwhile (``reset`` starts a new list; an append extends the one
    copied)."""
    copy = History()
    copy.reset(history.cursor, history.first_seq, history.created, history.epoch)
    copy.entries = history.entries[: max(0, through + 1 - history.first_seq)]
    return copy
