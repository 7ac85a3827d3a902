"""Search a session's history with PostgreSQL's own full-text search.

    compaction_search (session, seq, part, words)   the index: a tsvector per part of a message

One row per part of a message (a message longer than ``PART_CHARS`` is split at whitespace,
so no ``tsvector`` reaches PostgreSQL's 1 MB limit and word positions stay exact for phrases);
``words`` has a GIN index. A row references its message (``ON DELETE CASCADE``), so clearing
or deleting a session takes its index with it, and a search can only ever answer the
session's own rows: every statement names the session, and the tables resolve through the
store's ``search_path``, as the rest of the store does (one schema, one store).

The rows are written the way the file store's SQLite index is: brought up to date with the
history at each search (the messages added since the last one), so an append pays nothing
and a database written by an older release (or imported) is indexed at its first search.
The text indexed is the words of the message (its content and tool calls), every run of
letters and digits joined by one space and nothing else: PostgreSQL's parser would read
``/testbed/src/app.py`` or ``foo.bar.Baz`` as one token, so a search for ``src/app.py`` or
``bar`` would miss it; as bare words, each is its own lexeme, as in SQLite's ``unicode61``,
and the parser (the costly part of indexing) reads nothing but words and single spaces.
Positions then count only words a query can name (the parser would also count a
symbol such as ``●`` as a word), so a phrase matches across punctuation. Only the
``tsvector`` is stored (the history holds the text): ``ts_headline`` cuts the snippets of the
hits from the same part of the text with each run of punctuation set off by ``\\x1f``, so it
reads the same words, and ``\\x1f`` is removed from the snippets again, so they show the
text as it was.

The ``simple`` configuration (no stemming, no stop words, any language) matches the file
store's tokenizer. Ranking is the file store's: the query's words as one phrase first
(``phraseto_tsquery``), then all of them (``plainto_tsquery``), then any of them
(``websearch_to_tsquery`` with ``or``), each by ``ts_rank``, newest first on a tie.

No statement is prepared and nothing outlives a transaction, so search works behind a
transaction-pooling PgBouncer. The session's row is key-share-locked while its index is
brought up to date and read, so a concurrent clear or re-create (which waits for that lock)
never mixes two generations, while appends (which do not) go on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

import psycopg

from ..memory.search import MAX_HITS, MAX_QUERY_CHARS, SearchHit, searchable_text
from ..memory.transcript import message_ref
from .history import Entry, History

__all__ = [
    "PART_CHARS",
    "SCHEMA",
    "Progress",
    "TABLE",
    "index_since",
    "indexed_text",
    "indexed_words",
    "parts",
    "search",
]

TABLE: Final = "compaction_search"
#: The text-search configuration: no stemming, no stop words (as SQLite's unicode61).
CONFIG: Final = "simple"
#: The longest part of a message indexed as one row (characters).
PART_CHARS: Final = 16_000
SCHEMA: Final = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        session text NOT NULL,
        seq bigint NOT NULL,
        part integer NOT NULL,
        words tsvector NOT NULL,
        PRIMARY KEY (session, seq, part),
        FOREIGN KEY (session, seq) REFERENCES compaction_messages (session, seq)
            ON DELETE CASCADE
    )""",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_words ON {TABLE} USING gin (words)",
)

_WORD: Final = re.compile(r"\w+")
# What is not a letter or digit: the parser splits at an underscore too.
_NOT_ALNUM: Final = re.compile(r"[\W_]+")
# The same for ASCII bytes: a letter or digit stays, anything else becomes a space.
_ASCII_WORDS: Final = bytes(
    b if chr(b).isascii() and chr(b).isalnum() else 0x20 for b in range(256)
)
_UNSTORABLE: Final = re.compile("[\x00\x1f\ud800-\udfff]")
_MARK: Final = "\x1f"
# Captured, so that split() keeps the runs between the words.
_PUNCTUATION: Final = re.compile(r"([^\w\s]+)")
# Rows per statement: bounds what one statement holds (the arrays are sent whole).
_ROWS_PER_INSERT: Final = 500
_HEADLINE: Final = (
    "StartSel=[, StopSel=], MaxWords=24, MinWords=8, ShortWord=1, MaxFragments=2,"
    ' FragmentDelimiter=" ... "'
)


def _storable(text: str) -> str:
    """NUL, ``\\x1f`` and lone surrogates (which PostgreSQL text cannot hold, or which we
    use) made spaces. ASCII text (no surrogate can be in it) is looked at by ``in``, which is
    several times the speed of a regular expression's search."""
    if text.isascii():
        if _MARK in text or "\x00" in text:
            return text.replace("\x00", " ").replace(_MARK, " ")
        return text
    return _UNSTORABLE.sub(" ", text) if _UNSTORABLE.search(text) is not None else text


def indexed_text(text: str) -> str:
    """A part of a message as its snippets are cut: each run of punctuation set off by
    ``\\x1f`` (split and joined: one pass in C, not a replacement per match)."""
    return _MARK.join(_PUNCTUATION.split(_storable(text)))


def indexed_words(text: str) -> str:
    """A part of a message as it is indexed: its runs of letters and digits, one space apart.

    ASCII text (most tool output) goes through a byte table, in C, at several times the speed
    of the regular expression the rest needs (Unicode letters and digits)."""
    if text.isascii():
        return " ".join(text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split())
    # NUL, ``\x1f`` and lone surrogates are not letters or digits: they go with the rest.
    return _NOT_ALNUM.sub(" ", text).strip()


def parts(text: str, size: int = PART_CHARS) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut at whitespace where there is
    some in the last tenth of a piece (a word is then never split); at least one piece."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = max(text.rfind(" ", end - size // 10, end), text.rfind("\n", end - size // 10, end))
        end = cut + 1 if cut > start else end
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


def _rows(name: str, entries: Iterable[Entry]) -> list[tuple[Any, ...]]:
    return [
        (name, e.seq, k, indexed_words(piece))
        for e in entries
        for k, piece in enumerate(parts(_storable(searchable_text(e.message))))
    ]


def _columns(rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """``rows`` as three texts (seq, part and words, a line per row), split again by the
    server: one statement text whatever the number of rows, so neither the driver nor the
    server parses a new one each time, and no array for the driver to quote element by
    element. The words are letters, digits and single spaces (``indexed_words``), never a
    line break. ``string_to_array`` reads an empty text as no element at all, so one row
    with no words is sent as a space (which ``to_tsvector`` reads as no word, as it would
    the empty text)."""
    return [
        "\n".join(str(r[1]) for r in rows),
        "\n".join(str(r[2]) for r in rows),
        "\n".join(r[3] for r in rows) or " ",
    ]


#: The rows of the three texts (see ``_columns``), each text made a ``tsvector`` by the
#: server (the text itself is not kept: the history holds it, and snippets are cut from it
#: for the hits alone).
_NEW_ROWS: Final = (
    f"SELECT %s, v.q::bigint, v.p::integer, to_tsvector('{CONFIG}', v.b) FROM unnest("
    "string_to_array(%s, E'\\n'), string_to_array(%s, E'\\n'), string_to_array(%s, E'\\n')"
    ") AS v (q, p, b)"
)


def _insert(conn: psycopg.Connection[Any], name: str, rows: Sequence[tuple[Any, ...]]) -> None:
    # Never executemany (which prepares): see pgrows.insert_messages.
    for start in range(0, len(rows), _ROWS_PER_INSERT):
        conn.execute(
            f"INSERT INTO {TABLE} (session, seq, part, words) {_NEW_ROWS} ON CONFLICT DO NOTHING",
            [name, *_columns(rows[start : start + _ROWS_PER_INSERT])],
            prepare=False,
        )


class Progress:
    """How far this process indexed each session, and in which generation: what the next
    [`index_since`][] need not ask the server. A guess only (the statement checks the
    generation, and rows another process indexed are skipped), kept for the most recent
    ``size`` sessions: one the process forgot asks the server again, no more."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._newest: dict[str, tuple[str | None, int]] = {}

    def newest(self, name: str, epoch: str | None) -> int | None:
        known = self._newest.get(name)
        return known[1] if known is not None and known[0] == epoch else None

    def record(self, name: str, epoch: str | None, newest: int) -> None:
        self._newest.pop(name, None)  # the newest last: the oldest is the first to go
        self._newest[name] = (epoch, newest)
        if len(self._newest) > self._size:
            self._newest.pop(next(iter(self._newest)), None)

    def forget(self, name: str) -> None:
        self._newest.pop(name, None)


def index_since(
    conn: psycopg.Connection[Any], name: str, history: History, done: int | None
) -> int | None:
    """Index the messages of ``history`` after ``seq`` ``done`` (the newest this process
    indexed, None when it does not know) and answer the newest ``seq`` indexed now, or None
    when the session is no longer ``history``'s generation.

    When ``done`` is known and the rows fit one statement, that statement is the whole call:
    it key-share-locks the session's row only if it is still ``history``'s generation (so a clear
    or re-create waits, and a newer generation gets nothing), inserts, and commits without
    waiting for the disk (the index is derived from the history). An index another process
    brought further is no harm: its rows are skipped (``ON CONFLICT DO NOTHING``). Otherwise,
    one transaction that first reads how far the index goes (see ``search``)."""
    start = max(history.first_seq, done + 1) if done is not None else None
    if start is not None and history.epoch is not None:
        rows = _rows(name, history.entries[start - history.first_seq :])
        if not rows:
            return done
        if len(rows) <= _ROWS_PER_INSERT:
            inserted = conn.execute(
                "WITH g AS (SELECT set_config('synchronous_commit', 'off', true)"
                " FROM compaction_sessions WHERE name = %s AND epoch::text = %s FOR KEY SHARE)"
                f" INSERT INTO {TABLE} (session, seq, part, words) {_NEW_ROWS}, g"
                " ON CONFLICT DO NOTHING RETURNING seq",
                [name, history.epoch, name, *_columns(rows)],
                prepare=False,
            ).fetchall()
            if inserted:
                return int(rows[-1][1])
            # Nothing inserted: another generation, or rows another process indexed first;
            # the transaction below tells which.
    with conn.transaction():
        if not _catch_up(conn, name, history):
            return None
    return history.next_seq - 1


def _catch_up(conn: psycopg.Connection[Any], name: str, history: History) -> bool:
    """In the caller's transaction: key-share-lock the session's row, and index what the index
    lacks of ``history``; False when the session is no longer ``history``'s generation."""
    # One statement: the session's generation (key-share-locked, so a clear or re-create waits
    # for this transaction), how far its index goes, and no wait for the disk at commit (the
    # index is derived from the history and brought up to date again from it;
    # set_config(..., true) ends with the transaction, so nothing is left on a pooled
    # connection).
    row = conn.execute(
        f"SELECT s.epoch, (SELECT max(seq) FROM {TABLE} WHERE session = s.name),"
        " set_config('synchronous_commit', 'off', true)"
        " FROM compaction_sessions s WHERE s.name = %s FOR KEY SHARE OF s",
        (name,),
        prepare=False,
    ).fetchone()
    if row is None or str(row[0]) != history.epoch:
        return False
    start = history.first_seq if row[1] is None else row[1] + 1
    _insert(conn, name, _rows(name, history.entries[max(0, start - history.first_seq) :]))
    return True


def _queries(query: str) -> tuple[str, str] | None:
    """The query's words (for the phrase and all-words forms) and the any-word form."""
    words = _WORD.findall(_UNSTORABLE.sub(" ", query[:MAX_QUERY_CHARS]))[:32]
    if not words:
        return None
    # websearch_to_tsquery reads a bare "or" as the operator: a word that is "or" is left
    # out of the any-word form only (the phrase and all-words forms keep it).
    either = " or ".join(w for w in dict.fromkeys(words) if w.lower() != "or")
    return " ".join(words), either or " ".join(words)


_SEARCH: Final = f"""
WITH q AS (
    SELECT phraseto_tsquery('{CONFIG}', %(words)s) AS phrase,
           plainto_tsquery('{CONFIG}', %(words)s) AS every,
           websearch_to_tsquery('{CONFIG}', %(either)s) AS anyone
), found AS (
    SELECT DISTINCT ON (s.seq) s.seq, s.part,
           CASE WHEN s.words @@ q.phrase THEN 2 WHEN s.words @@ q.every THEN 1 ELSE 0 END
               AS tier,
           ts_rank(s.words, q.anyone, 32) AS rank
    FROM {TABLE} s, q
    WHERE s.session = %(name)s AND s.words @@ q.anyone AND NOT (s.seq = ANY(%(skip)s))
    ORDER BY s.seq, tier DESC, rank DESC, s.part
), best AS (
    SELECT * FROM found ORDER BY tier DESC, rank DESC, seq DESC LIMIT %(limit)s
)
SELECT b.seq, b.part, b.tier + b.rank FROM best b ORDER BY b.tier DESC, b.rank DESC, b.seq DESC
"""
_HEADLINES: Final = f"""
SELECT ts_headline('{CONFIG}', t.doc, websearch_to_tsquery('{CONFIG}', %s), %s)
FROM unnest(%s::text[]) WITH ORDINALITY AS t (doc, n) ORDER BY t.n
"""


def search(
    conn: psycopg.Connection[Any],
    name: str,
    history: History,
    query: str,
    limit: int,
    exclude: Iterable[int],
) -> list[SearchHit]:
    """Bring session ``name``'s index up to date with ``history`` and answer ``query``
    (``exclude``: the ``seq`` numbers not to answer). The body of one backend call: one
    transaction. Nothing is answered when the session is no longer the generation
    ``history`` holds (it was cleared or re-created since it was read)."""
    forms = _queries(query) if isinstance(query, str) else None
    with conn.transaction():
        if not _catch_up(conn, name, history):
            return []
        if forms is None:
            return []
        found = conn.execute(
            _SEARCH,
            {
                "words": forms[0],
                "either": forms[1],
                "name": name,
                "skip": sorted(set(exclude)),
                "limit": min(limit, MAX_HITS),
            },
            prepare=False,
        ).fetchall()
        kept = []
        entries = history.entries
        for seq, part, score in found:
            index = seq - history.first_seq
            if 0 <= index < len(entries):  # else indexed by a newer reader: not read here yet
                pieces = parts(_storable(searchable_text(entries[index].message)))
                doc = indexed_text(pieces[min(part, len(pieces) - 1)])
                kept.append((entries[index].message, seq, doc, score))
        if not kept:
            return []
        snippets = conn.execute(
            _HEADLINES, (forms[1], _HEADLINE, [k[2] for k in kept]), prepare=False
        ).fetchall()
    return [
        SearchHit(
            message_ref(message),
            seq,
            message.role,
            " ".join(snip.replace(_MARK, "").split()),
            -float(score),
        )
        for (message, seq, _doc, score), (snip,) in zip(kept, snippets, strict=True)
    ]
