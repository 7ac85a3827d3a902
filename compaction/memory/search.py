"""Full-text search over a conversation's history: find what a compaction took out of view.

A long-horizon agent works for hours; its notes say *that* something happened (a failing test,
an error, a file edited) and recall gives a message back by its id, but the model has to know
the id. Search closes the gap: ``search("ImportError plugins")`` answers the messages that
mention it, best first, each with a snippet and the id ``recall`` takes.

The index is SQLite's FTS5 (in the standard library's ``sqlite3``; BM25 ranking, snippets,
a tokenizer that splits ``tests/test_api.py::test_login`` into searchable words): a maintained
engine rather than a ranking of our own. It is either in memory (built from the messages a
caller hands it) or a file the caller names, which is brought up to date incrementally and
rebuilt whole when it is missing, torn, or describes another generation of the history (a
session that was cleared). A file that is a link or not a regular file is never opened: the
index is then kept in memory, and nothing is lost but the time to build it.

One index holds one conversation: a search can only ever answer that conversation's messages.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

import attrs

from ..messages import Message
from .transcript import message_ref

__all__ = [
    "MAX_QUERY_CHARS",
    "SearchHit",
    "SearchIndex",
    "fts_queries",
    "fts_query",
    "render_hits",
    "searchable_text",
]

#: A query longer than this is cut: a model that pastes a whole file as its query is asking
#: nothing a few words would not, and the FTS5 parser's work grows with the query.
MAX_QUERY_CHARS: Final = 500
#: The most hits one search answers, whatever ``limit`` asks.
MAX_HITS: Final = 50
_WORD: Final = re.compile(r"\w+", re.UNICODE)
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS docs(seq INTEGER PRIMARY KEY, ref TEXT NOT NULL, "
    "role TEXT NOT NULL, body TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, content='docs', "
    "content_rowid='seq', tokenize='unicode61')",
    "CREATE TRIGGER IF NOT EXISTS docs_ai AFTER INSERT ON docs BEGIN "
    "INSERT INTO fts(rowid, body) VALUES (new.seq, new.body); END",
    "CREATE TABLE IF NOT EXISTS about(key TEXT PRIMARY KEY, value TEXT)",
)


@attrs.frozen(slots=True)
class SearchHit:
    """One message found: ``ref`` the id ``recall`` takes, ``seq`` its place in the history,
    ``role``, a ``snippet`` around the words found (marked ``[...]``), and its ``score``
    (lower is better: SQLite's BM25 as it reports it; on PostgreSQL, minus the match tier
    plus ``ts_rank``). Scores order the hits of one search; they do not compare across
    stores."""

    ref: str
    seq: int
    role: str
    snippet: str
    score: float


def searchable_text(message: Message) -> str:
    """What is indexed of a message: its content, and each tool call's name and arguments
    (every store indexes the same text, so both answer the same words)."""
    parts = [message.content] if message.content else []
    parts.extend(f"{c.name} {c.arguments}" for c in message.tool_calls)
    return "\n".join(parts)


_text = searchable_text
_UNENCODABLE: Final = re.compile("[\x00\ud800-\udfff]")


def _clean(text: str) -> str:
    # SQLite text is UTF-8 (a lone surrogate cannot be written) and its functions stop at NUL.
    return _UNENCODABLE.sub(" ", text)


def _ref_in(ref: str) -> str | bytes:
    # An id is given back exactly (recall takes it), lone surrogates and all: such an id is
    # kept as bytes.
    return ref if _UNENCODABLE.search(ref) is None else ref.encode("utf-8", "surrogatepass")


def _ref_out(ref: str | bytes) -> str:
    return ref.decode("utf-8", "surrogatepass") if isinstance(ref, bytes) else ref


def fts_queries(query: str) -> list[str]:
    """The FTS5 queries for what a model typed, strictest first: its words as one phrase (a
    test id, a command, a path match whole), then all of them anywhere, then any of them
    (ranked by how many and how rare). Every word is quoted, so no input is FTS5 syntax;
    empty when it has no word."""
    words = [w.lower() for w in _WORD.findall(query[:MAX_QUERY_CHARS])][:32]
    if not words:
        return []
    unique = list(dict.fromkeys(words))
    queries = [" OR ".join(f'"{w}"' for w in unique)]
    if len(unique) > 1:
        queries.insert(0, " AND ".join(f'"{w}"' for w in unique))
    if len(words) > 1:
        queries.insert(0, '"' + " ".join(words) + '"')
    return queries


def fts_query(query: str) -> str | None:
    """The loosest of [`fts_queries`][] (any word), or None when ``query`` has no word."""
    queries = fts_queries(query)
    return queries[-1] if queries else None


def _create_private(path: Path) -> None:
    """Create the index file owner-only (it holds the messages' text; SQLite gives its
    write-ahead log the same mode), never through a link; one that exists is left alone."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600))


class SearchIndex:
    """The index of one conversation (see the module docstring).

    ``path`` is the index file (None: in memory); ``generation`` names the history it
    indexes (a file made for another generation is rebuilt).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, generation: str = "") -> None:
        self._lock = threading.RLock()
        self.generation = generation
        self.path = None if path is None else Path(path)
        self._db = self._open()

    # -- opening ----------------------------------------------------------------------------

    def _usable_file(self) -> bool:
        assert self.path is not None
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode)

    def _open(self) -> sqlite3.Connection:
        if self.path is not None and not self._usable_file():
            self.path = None  # a link or a device where the index should be: not ours
        if self.path is None:
            return self._prepare(sqlite3.connect(":memory:", check_same_thread=False))
        try:
            _create_private(self.path)
            db = sqlite3.connect(self.path, check_same_thread=False, timeout=5)
            # A torn file (cut short, pages lost) fails the structural check: rebuilt.
            if db.execute("PRAGMA quick_check").fetchone() != ("ok",):
                db.close()
                return self._rebuild()
            db = self._prepare(db)
            row = db.execute("SELECT value FROM about WHERE key = 'generation'").fetchone()
            if row is not None and row[0] != self.generation:
                db.close()
                return self._rebuild()
            if row is None:
                db.execute(
                    "INSERT OR REPLACE INTO about VALUES ('generation', ?)", (self.generation,)
                )
                db.commit()
            return db
        except sqlite3.DatabaseError:
            return self._rebuild()

    def _rebuild(self) -> sqlite3.Connection:
        """A fresh file in place of a torn or outdated one (the history rebuilds it)."""
        assert self.path is not None
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{self.path}{suffix}").unlink()
        _create_private(self.path)
        db = self._prepare(sqlite3.connect(self.path, check_same_thread=False, timeout=5))
        db.execute("INSERT OR REPLACE INTO about VALUES ('generation', ?)", (self.generation,))
        db.commit()
        return db

    @staticmethod
    def _prepare(db: sqlite3.Connection) -> sqlite3.Connection:
        # Derived data, rebuilt from the history when lost: a write-ahead log with no fsync
        # per commit (a power cut may lose the newest rows, never the file's consistency;
        # the lost tail is indexed again, as "indexed" then says).
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        for statement in _SCHEMA:
            db.execute(statement)
        db.commit()
        return db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def rebuild(self) -> None:
        """Start the index afresh, empty (a file found torn while it was read or written);
        the caller indexes the history again."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            if self.path is None:
                self._db = self._prepare(sqlite3.connect(":memory:", check_same_thread=False))
            else:
                self._db = self._rebuild()

    # -- writing ----------------------------------------------------------------------------

    @property
    def indexed(self) -> int:
        """How many messages are indexed (the next ``seq`` to add, for a history from 0)."""
        with self._lock:
            row = self._db.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM docs").fetchone()
        return int(row[0])

    def add(self, messages: Iterable[tuple[int, Message]]) -> int:
        """Index ``(seq, message)`` pairs not indexed yet; answers how many were added. A
        message already indexed under its ``seq`` is left as it is (another process, or an
        earlier call, indexed it)."""
        rows = [(seq, _ref_in(message_ref(m)), m.role, _clean(_text(m))) for seq, m in messages]
        if not rows:
            return 0
        with self._lock:
            # A torn file raises sqlite3.DatabaseError: rebuilding here would keep only these
            # rows, so the caller rebuilds and indexes the whole history (see rebuild()).
            before = self._db.total_changes
            self._db.executemany("INSERT OR IGNORE INTO docs VALUES (?, ?, ?, ?)", rows)
            self._db.commit()
            return (self._db.total_changes - before) // 2  # a row and its fts row

    def sync(self, messages: Sequence[Message], first_seq: int = 0) -> int:
        """Index whatever of the whole history ``messages`` (numbered from ``first_seq``) is
        not indexed yet: the history only grows, so that is its tail."""
        start = max(0, self.indexed - first_seq)
        return self.add((first_seq + i, m) for i, m in enumerate(messages[start:], start))

    # -- reading ----------------------------------------------------------------------------

    def search(self, query: str, limit: int = 5, *, exclude: Iterable[int] = ()) -> list[SearchHit]:
        """The messages matching ``query``, best first (at most ``limit``, and never more than
        ``MAX_HITS``); ``exclude`` the ``seq`` numbers not to answer (the messages still in
        view, which the model can already read)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, got {limit!r}")
        skip = set(exclude)
        wanted = min(limit, MAX_HITS)
        hits: list[SearchHit] = []
        taken: set[int] = set()
        for match in fts_queries(query) if isinstance(query, str) else []:
            with self._lock:
                rows = self._db.execute(
                    "SELECT docs.seq, docs.ref, docs.role, "
                    "snippet(fts, 0, '[', ']', ' ... ', 24), bm25(fts) "
                    "FROM fts JOIN docs ON docs.seq = fts.rowid WHERE fts MATCH ? "
                    "ORDER BY bm25(fts), docs.seq DESC LIMIT ?",
                    (match, wanted + len(skip) + len(taken)),
                ).fetchall()
            for seq, ref, role, snippet, score in rows:
                if seq not in skip and seq not in taken and len(hits) < wanted:
                    taken.add(seq)
                    hits.append(SearchHit(_ref_out(ref), seq, role, snippet, score))
            if len(hits) >= wanted:
                break
        return hits


def render_hits(query: str, hits: Sequence[SearchHit]) -> str:
    """The text a model gets back for a search: one line per hit with its id for ``recall``."""
    if not hits:
        return f"no earlier message matches {query[:80]!r}"
    lines = [f"{len(hits)} earlier message(s) match {query[:80]!r} (recall an id for the whole):"]
    lines += [f"- id {h.ref} ({h.role}, #{h.seq}): {' '.join(h.snippet.split())}" for h in hits]
    return "\n".join(lines)
