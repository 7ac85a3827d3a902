"""Search on PostgreSQL is PostgreSQL's own full-text search, and it stays in its conversation.

A real server (tests/postgres_server.py), and PgBouncer in transaction pooling mode through the
``session_store`` fixture: the index table and its GIN index are made by the store in a new
database and in place in one an older release made; every statement names the session, so
no hit comes from another conversation, another schema or another database; what a role may
not create leaves search working on the Session's own index.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compaction.messages import Message, ToolCall
from compaction.sessions import SessionStore
from compaction.sessions.history import Entry, History


def _fill(session: Any, marker: str, n: int = 6) -> None:
    session.add([Message("user", f"Task for {marker}: fix the importer.")])
    for i in range(n):
        call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"pytest tests/test_{marker}_{i}.py"}))
        session.add(
            [
                Message("assistant", f"Step {i}.", tool_calls=(call,)),
                Message(
                    "tool",
                    f"FAILED /testbed/tests/test_{marker}_{i}.py::test_case - "
                    f"ValueError: shared words {marker}{i}\n" + "noise\n" * 30,
                    tool_call_id=f"c{i}",
                ),
            ]
        )


def _rows(url: str, *statements: str) -> list[tuple[Any, ...]]:
    """The rows of the last of ``statements``, run in order on one connection."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for sql in statements[:-1]:
            conn.execute(sql)
        return conn.execute(statements[-1]).fetchall()


def test_the_index_is_postgresql_s_own_table_and_gin_index(postgres_url: str) -> None:
    store = SessionStore.from_url(postgres_url)
    session = store.open("agent")
    _fill(session, "alpha")
    session.set_view([session.messages[0], *session.messages[-2:]])
    hits = session.search("tests/test_alpha_2.py::test_case")
    assert hits and hits[0].seq == 6 and "[test]" in hits[0].snippet
    # Every message is indexed in the table, and the words column has a GIN index.
    assert _rows(postgres_url, "SELECT count(DISTINCT seq) FROM compaction_search") == [(13,)]
    found = _rows(
        postgres_url,
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'compaction_search'"
        " AND indexdef LIKE '%gin%'",
    )
    assert len(found) == 1 and "words" in found[0][0]
    # The search a query makes uses the GIN index once the table is large enough to matter.
    plan = _rows(
        postgres_url,
        "SET enable_seqscan = off",
        "EXPLAIN SELECT seq FROM compaction_search"
        " WHERE words @@ plainto_tsquery('simple', 'valueerror')",
    )
    assert any("compaction_search_words" in line[0] for line in plan)
    store.close()


def test_an_older_database_is_upgraded_in_place(postgres_url: str) -> None:
    store = SessionStore.from_url(postgres_url)
    session = store.open("agent")
    _fill(session, "beta")
    store.close()
    # The layout an older release made: no index table (its rows never written).
    _rows(postgres_url, "DROP TABLE compaction_search", "SELECT 1")
    assert _rows(postgres_url, "SELECT to_regclass('compaction_search')") == [(None,)]

    again = SessionStore.from_url(postgres_url).open("agent")
    assert len(again.messages) == 13  # nothing lost, nothing rewritten
    hits = again.search("ValueError beta3", include_view=True)
    assert hits[0].seq == 8 and again.recall(hits[0].ref) == again.messages[8]
    assert _rows(postgres_url, "SELECT version FROM compaction_schema") == [(1,)]
    assert _rows(postgres_url, "SELECT count(DISTINCT seq) FROM compaction_search") == [(13,)]


def test_a_role_that_may_not_create_the_index_still_searches(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    SessionStore.from_url(postgres_url).open("agent").add([Message("user", "made by the owner")])
    _rows(
        postgres_url,
        "DROP TABLE compaction_search",
        "DROP ROLE IF EXISTS limited",
        "CREATE ROLE limited LOGIN",
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO limited",
        "SELECT 1",
    )
    url = postgres_url.replace("://compaction@", "://limited@")
    session = SessionStore.from_url(url).open("agent")
    _fill(session, "gamma", 3)
    hits = session.search("gamma2", include_view=True)
    assert [h.seq for h in hits] == [7]  # after the owner's message
    assert session.recall(hits[0].ref) == session.messages[7]
    assert _rows(postgres_url, "SELECT to_regclass('compaction_search')") == [(None,)]
    assert "search_index_unavailable" in caplog.text  # said once, not silently


def test_another_schema_is_another_store(postgres_url: str) -> None:
    _rows(postgres_url, "CREATE SCHEMA other", "SELECT 1")
    other_url = postgres_url + "?options=-csearch_path%3Dother"
    mine = SessionStore.from_url(postgres_url).open("agent")
    theirs = SessionStore.from_url(other_url).open("agent")  # the same name, elsewhere
    _fill(mine, "delta")
    _fill(theirs, "epsilon")
    assert mine.search("epsilon3", include_view=True) == []
    assert theirs.search("delta3", include_view=True) == []
    assert [h.seq for h in theirs.search("epsilon3", include_view=True)] == [8]
    assert _rows(postgres_url, "SELECT count(*) FROM other.compaction_search") != [(0,)]


def test_no_hit_from_another_conversation_with_the_same_words(session_store: SessionStore) -> None:
    """Two conversations holding the same words, both compacted: each search answers only
    its own messages, whichever store and however many sessions share the index."""
    sessions = {name: session_store.open(name) for name in ("one", "two", "three")}
    for name, session in sessions.items():
        _fill(session, name)
        session.set_view([session.messages[0], *session.messages[-2:]])
    for name, session in sessions.items():
        own = {m.id: m for m in session.messages}
        for query in ("ValueError shared words", "test_case", "noise", "fix the importer"):
            hits = session.search(query, limit=20, include_view=True)
            assert hits, (name, query)
            for hit in hits:
                assert hit.ref in own and own[hit.ref] == session.recall(hit.ref)
                assert all(other not in hit.snippet for other in sessions if other != name)


def test_long_messages_nul_and_surrogates_are_searchable(session_store: SessionStore) -> None:
    session = session_store.open("odd")
    long_output = "head line\n" + "filler word\n" * 8000 + "the last line: FarAwayError here\n"
    session.add(
        [
            Message("user", "Task: read the logs."),
            Message("user", "a NUL \x00 between NulNeighbour words and a lone \ud800 surrogate"),
            Message("user", long_output),
            Message("assistant", "ok"),
        ]
    )
    far = session.search("FarAwayError", include_view=True)
    assert [h.seq for h in far] == [2] and "FarAwayError" in far[0].snippet
    odd = session.search("NulNeighbour", include_view=True)
    assert [h.seq for h in odd] == [1]
    assert session.recall(odd[0].ref) == session.messages[1]  # the history is untouched


def test_a_deleted_and_re_created_session_answers_only_its_new_history(
    session_store: SessionStore,
) -> None:
    session = session_store.open("again")
    _fill(session, "old", 2)
    assert session.search("old1", include_view=True)
    session_store.delete("again")
    fresh = session_store.open("again")
    fresh.add([Message("user", "new words only"), Message("assistant", "fine")])
    assert fresh.search("old1", include_view=True) == []
    assert session.search("old1", include_view=True) == []  # the old object too
    assert [h.seq for h in fresh.search("new words", include_view=True)] == [0]


@pytest.mark.transcripts
@pytest.mark.parametrize(
    "name",
    [
        "swe-agent/BabyEncryption.traj",
        "swe-agent/BabyTimeCapsule.traj",
    ],
)
def test_hidden_probe_facts_of_real_runs_are_found_on_every_store(
    session_store: SessionStore, name: str
) -> None:
    """A real run written call by call through the trigger, then compacted to a quarter: each
    probe fact the requests no longer show is found in the first three hits."""
    from benchmarks.search.suite import SHARE, hidden_found, replay_into
    from compaction import TiktokenCounter, default_pipeline
    from compaction.check import log_facts
    from compaction.formats import load

    from .conftest import TRANSCRIPTS

    path = TRANSCRIPTS / name
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    messages = load(path).messages
    facts = log_facts(path, messages).asked
    counter = TiktokenCounter()
    session = session_store.open("run")
    done = replay_into(session, messages, counter, counter.count_messages(messages))
    stored = done["stored"]
    assert done["compactions"] >= 1 and len(stored) == len(messages)
    results = hidden_found(session, stored, done["request"], facts)
    quarter = default_pipeline(counter=counter).compact(
        stored, target=int(counter.count_messages(stored) * SHARE)
    )
    session.set_view(quarter.messages)
    results += hidden_found(session, stored, quarter.messages, facts)
    assert len(results) >= 3  # enough facts were hidden to mean something
    assert [f.answer for f, ok in results if not ok] == []


def test_the_file_index_survives_being_cut_short_anywhere(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, durable=False)
    session = store.open("agent")
    _fill(session, "zeta", 30)
    queries = ("zeta3", "ValueError zeta29", "fix the importer", "tests/test_zeta_7.py")
    first = [session.search(q, include_view=True) for q in queries]
    index = tmp_path / "agent" / "search.sqlite"
    whole = index.read_bytes()
    for cut in sorted({0, 1, 100, 512, 4096, len(whole) // 3, len(whole) // 2, len(whole) - 1}):
        index.write_bytes(whole[:cut])
        fresh = SessionStore(tmp_path, durable=False).open("agent")
        assert [fresh.search(q, include_view=True) for q in queries] == first, cut


_INDEXER = """
import sys
from compaction.messages import Message
from compaction.sessions import SessionStore
from compaction.sessions.searching import update_index

background = sys.argv[3] == "background"
session = SessionStore.from_url(sys.argv[1], index_views=background).open("indexed")
print("ready", flush=True)
i = int(sys.argv[2]) * 100_000
while True:
    session.add([Message("user", f"marker{i + k} " + "filler words " * 300) for k in range(20)])
    i += 20
    if background:  # each stored view queues the session for the store's indexer thread
        session.set_view(session.messages[-2:])
    else:
        update_index(session)
"""


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")
@pytest.mark.parametrize("mode", ["eager", "background"])
def test_kill_9_while_indexing_loses_nothing_and_answers_right(store_url: str, mode: str) -> None:
    """A writer that indexes after every batch (on its own thread, or through the store's
    background indexer after every stored view), killed at random: every committed message is
    still there, and a fresh store finds each one by its own marker, first."""
    rng = random.Random(7)
    for iteration in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _INDEXER, store_url, str(iteration), mode],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.2, 1.0))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        session = SessionStore.from_url(store_url).open("indexed")
        messages = session.messages
        assert messages, "the writer committed nothing before the kill"
        picked = {*rng.sample(range(len(messages)), min(25, len(messages))), len(messages) - 1}
        for i in sorted(picked):
            marker = messages[i].content.split()[0]
            hits = session.search(marker, limit=1, include_view=True)
            assert [h.ref for h in hits] == [messages[i].id], (iteration, marker)


def test_the_file_index_is_owner_only(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).open("private")
    _fill(session, "eta", 2)
    assert session.search("eta1", include_view=True)
    index = tmp_path / "private" / "search.sqlite"
    found = [p for p in index.parent.iterdir() if p.name.startswith("search.sqlite")]
    assert index in found
    for path in found:  # the index and its write-ahead log hold the messages' text
        assert path.stat().st_mode & 0o077 == 0, path
    index.unlink()  # made again, owner-only again
    assert SessionStore(tmp_path).open("private").search("eta1", include_view=True)
    assert index.stat().st_mode & 0o077 == 0


def test_indexing_after_each_batch_keeps_to_its_generation_and_to_other_writers(
    store_url: str,
) -> None:
    """Indexing after every batch (what a long-horizon agent does after each compaction):
    a store that indexed before remembers how far, yet never writes an older generation's
    messages into a re-created session's index, and rows another writer indexed first are
    neither lost nor doubled."""
    from compaction.sessions.searching import update_index

    mine = SessionStore.from_url(store_url).open("shared")
    other_store = SessionStore.from_url(store_url)
    for i in range(4):
        mine.add([Message("user", f"batch{i} words"), Message("assistant", "seen")])
        update_index(mine)
    theirs = other_store.open("shared")
    theirs.add([Message("user", "batch4 words from the other writer")])
    assert [h.seq for h in theirs.search("batch4", include_view=True)] == [8]  # indexed there
    mine.add([Message("user", "batch5 words")])
    update_index(mine)  # what the other writer indexed is skipped, the rest indexed
    for i in (0, 3, 4, 5):
        hits = mine.search(f"batch{i}", limit=5, include_view=True)
        holding = [m.id for m in mine.messages if f"batch{i} " in m.content]
        assert hits and hits[0].ref in holding, (i, hits)
    if not store_url.startswith(("postgres", "postgresql")):
        return
    rows = _rows(store_url, "SELECT count(*), count(DISTINCT (seq, part)) FROM compaction_search")
    assert rows[0][0] == rows[0][1] == 10

    # A history read before the session was deleted and made again: its rows must not land
    # in the new generation's index, however sure this store was of how far it had indexed.
    stale = History()
    stale.reset(mine._history.cursor, mine._history.first_seq, None, mine._history.epoch)
    stale.extend(mine.entries)
    stale.extend([Entry(stale.next_seq, stale.entries[-1].timestamp, Message("user", "late"))])
    other_store.delete("shared")
    fresh = other_store.open("shared")
    fresh.add([Message("user", "only the new conversation")])
    assert mine.backend.index("shared", stale) is False
    assert fresh.search("batch0", include_view=True) == []
    assert fresh.search("late", include_view=True) == []
    assert [h.seq for h in fresh.search("new conversation", include_view=True)] == [0]


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_text_is_indexed_as_the_general_reading_would(text: str) -> None:
    """The byte-table reading of ASCII text finds the same words, in the same order, as the
    regular expression every other text goes through (letters and digits; an underscore
    and anything else parts them)."""
    from compaction.sessions import pgsearch

    assert pgsearch.indexed_words(text) == " ".join(re.findall(r"[^\W_]+", text))


def test_words_joined_by_any_punctuation_are_found_alone_and_as_a_phrase(
    session_store: SessionStore,
) -> None:
    session = session_store.open("punct")
    session.add(
        [
            Message("user", "see /testbed/src/app.py:12 and foo_bar.Baz"),
            Message("user", "the naïve—résumé parser · ● bullet"),
            Message("assistant", "app src py noise"),
        ]
    )
    assert [h.seq for h in session.search("src/app.py", include_view=True)][:1] == [0]
    assert [h.seq for h in session.search("Baz", include_view=True)] == [0]
    assert [h.seq for h in session.search("résumé", include_view=True)] == [1]
    assert [h.seq for h in session.search("naïve résumé parser", include_view=True)][:1] == [1]


def test_how_far_a_process_indexed_is_kept_for_a_bounded_number_of_sessions() -> None:
    """A long-lived process serving many conversations remembers the newest few (a forgotten
    one asks the server again), and never takes one generation's progress for another's."""
    from compaction.sessions.pgsearch import Progress

    progress = Progress(size=3)
    for i in range(5):
        progress.record(f"s{i}", "epoch-a", i)
    assert [progress.newest(f"s{i}", "epoch-a") for i in range(5)] == [None, None, 2, 3, 4]
    assert progress.newest("s4", "epoch-b") is None
    progress.record("s2", "epoch-a", 9)  # used again: now the newest, so s3 goes first
    progress.record("s5", "epoch-a", 5)
    assert progress.newest("s3", "epoch-a") is None and progress.newest("s2", "epoch-a") == 9
    progress.forget("s2")
    assert progress.newest("s2", "epoch-a") is None
