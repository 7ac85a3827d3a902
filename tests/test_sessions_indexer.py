"""The background indexer: ``SessionStore(..., index_views=True)`` indexes each stored view's
session on a thread of its own, never in the way of the caller's writes, bounded, visible when
it fails, and drained when the store closes.

Real stores only: files, and a real PostgreSQL server (directly and through PgBouncer). The
index is read where it lives (the SQLite file beside the journal, the ``compaction_search``
table), not through ``search``, which would bring it up to date itself.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from compaction.messages import Message, ToolCall
from compaction.sessions import SessionStore
from compaction.sessions.indexer import Indexer
from compaction.sessions.searching import INDEX_FILE

#: Long enough never to be reached by a call that is not blocked; reached only on a hang.
HANG = 60.0


def _fill(session: Any, marker: str, steps: int = 4) -> None:
    session.add([Message("user", f"Task for {marker}: fix the importer.")])
    for i in range(steps):
        call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"pytest tests/test_{marker}_{i}.py"}))
        session.add(
            [
                Message("assistant", f"Step {i}.", tool_calls=(call,)),
                Message("tool", f"FAILED test_{marker}_{i} - ValueError", tool_call_id=f"c{i}"),
            ]
        )


def _view(session: Any) -> list[Message]:
    messages = session.messages
    return [messages[0], *messages[-2:]]


def _hidden(session: Any, added: int = 0) -> set[int]:
    """What an indexer brings into the index for ``_view(session)`` (``added``: messages
    appended since): the history through the newest message the view hides. The two it
    shows whole are in front of the model still, left to a later compaction or a search."""
    return {e.seq for e in session.entries[: len(session.entries) - 2 - added]}


def _indexed(store_url: str, name: str) -> set[int]:
    """The ``seq`` numbers of session ``name`` the store's index holds, read where it lives."""
    if "://" not in store_url:
        path = Path(store_url) / name / INDEX_FILE
        if not path.is_file():
            return set()
        with sqlite3.connect(path) as db:
            return {row[0] for row in db.execute("SELECT seq FROM docs")}
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT seq FROM compaction_search WHERE session = %s", (name,)
        ).fetchall()
    return {row[0] for row in rows}


def _in_thread(work: Any) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def test_a_stored_view_is_indexed_without_a_search(store_url: str) -> None:
    store = SessionStore.from_url(store_url, index_views=True)
    plain = SessionStore.from_url(store_url)
    try:
        session, other = store.open("agent"), plain.open("other")
        _fill(session, "alpha")
        _fill(other, "beta")
        assert _indexed(store_url, "agent") == set()  # appends alone index nothing
        session.set_view(_view(session))
        other.set_view(_view(other))
        assert store.indexer is not None and store.indexer.wait(HANG)
        assert _indexed(store_url, "agent") == _hidden(session) != set()
        # A store made without index_views leaves indexing to the next search, as before.
        assert _indexed(store_url, "other") == set()
        assert store.indexer.failed == store.indexer.skipped == 0
    finally:
        store.close()
        plain.close()


def _block_the_index(store_url: str, session: Any) -> Any:
    """Hold what writing ``session``'s index needs (searched once, so it exists), from
    outside the session; answer the function that lets it go."""
    if "://" not in store_url:
        lock = session._search._lock
        taken = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with lock:
                taken.set()
                release.wait(HANG)

        _in_thread(hold)
        assert taken.wait(HANG)
        return release.set
    import psycopg

    conn = psycopg.connect(store_url)
    conn.execute("LOCK TABLE compaction_search IN EXCLUSIVE MODE")

    def let_go() -> None:
        conn.rollback()
        conn.close()

    return let_go


@pytest.mark.parametrize("backend", ["file", "postgres"])
def test_the_caller_s_writes_never_wait_for_the_index(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = str(tmp_path / "s") if backend == "file" else request.getfixturevalue("postgres_url")
    store = SessionStore.from_url(url, index_views=True)
    try:
        session = store.open("agent")
        _fill(session, "alpha")
        session.search("importer")  # the index exists, up to here
        _fill(session, "gamma", steps=1)  # what the indexer will have to write
        let_go = _block_the_index(url, session)
        try:
            session.set_view(_view(session))  # queued: the indexer now waits on the index
            added: list[Any] = []
            writer = _in_thread(lambda: added.append(session.add_user("And the exporter too.")))
            writer.join(HANG)
            assert not writer.is_alive() and added  # the append did not queue behind it
            assert session.messages[-1].content == "And the exporter too."
            assert not store.indexer.wait(0.2)  # type: ignore[union-attr]  # still held
        finally:
            let_go()
        assert store.indexer.wait(HANG)  # type: ignore[union-attr]
        assert _indexed(url, "agent") == _hidden(session, added=1)
    finally:
        store.close()


def test_the_queue_is_bounded_and_what_it_skips_is_found_by_the_next_search(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path, index_views=True)
    store.indexer = Indexer(limit=1)  # before any session is opened: each takes it then
    try:
        first, second, third = (store.open(n) for n in ("first", "second", "third"))
        for session in (first, second, third):
            _fill(session, session.name)
        first.search("importer")
        _fill(first, "more", steps=1)
        let_go = _block_the_index(str(tmp_path), first)
        try:
            first.set_view(_view(first))  # taken by the indexer, which now waits on the lock
            while store.indexer._pending:  # the thread has taken it off the queue
                threading.Event().wait(0.01)
            second.set_view(_view(second))  # the one place in the queue
            second.set_view(_view(second))  # already waiting: not queued twice
            third.set_view(_view(third))  # no room: skipped, and counted
            assert store.indexer.skipped == 1
        finally:
            let_go()
        assert store.indexer.wait(HANG)
        assert _indexed(str(tmp_path), "second") == _hidden(second)
        assert _indexed(str(tmp_path), "third") == set()
        hits = third.search("test_third_2", include_view=True)  # the search catches up
        assert hits and "test_third_2" in hits[0].snippet
    finally:
        store.close()


def test_close_indexes_what_is_queued_then_refuses_more(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, index_views=True)
    session = store.open("agent")
    _fill(session, "alpha")
    session.set_view(_view(session))
    store.close()  # waits for the queue
    assert _indexed(str(tmp_path), "agent") == _hidden(session)
    assert store.indexer is not None and store.indexer.submit(session) is False
    _fill(session, "beta", steps=1)
    session.set_view(_view(session))  # still stored; indexed by the next search
    assert session.view()[-1].content == "FAILED test_beta_0 - ValueError"
    assert len(_indexed(str(tmp_path), "agent")) < len(session.entries)


def test_a_failed_pass_is_logged_and_the_next_search_catches_up(postgres_url: str) -> None:
    import psycopg

    store = SessionStore.from_url(postgres_url, index_views=True, retry_seconds=0)
    try:
        session = store.open("agent")
        _fill(session, "alpha")
        session.search("importer")
        _fill(session, "gamma", steps=1)
        let_go = _block_the_index(postgres_url, session)
        with structlog.testing.capture_logs() as logs:
            try:
                session.set_view(_view(session))
                # The indexer's statement waits on the lock; end its connection under it.
                with psycopg.connect(postgres_url, autocommit=True) as admin:
                    for _ in range(int(HANG / 0.05)):
                        killed = admin.execute(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                        ).fetchall()
                        if killed:
                            break
                        threading.Event().wait(0.05)
                    assert killed
                assert store.indexer is not None and store.indexer.wait(HANG)
            finally:
                let_go()
        assert store.indexer.failed == 1
        failed = [e for e in logs if e["event"] == "session.index_failed"]
        assert len(failed) == 1 and failed[0]["session"] == "agent"
        newest = session.entries[-1].seq
        assert newest not in _indexed(postgres_url, "agent")  # the pass wrote nothing
        hits = session.search("test_gamma_0", include_view=True)
        assert hits and hits[0].seq > newest - 3 and "[gamma]" in hits[0].snippet
    finally:
        store.close()


def test_limit_must_be_a_positive_whole_number() -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="limit must be a positive int"):
            Indexer(limit=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_indexes_with_a_thread_of_its_own(tmp_path: Path) -> None:
    """The parent's indexer thread does not run in a child: the child's first view starts
    its own, so its queue is indexed and close does not wait out its timeout."""
    store = SessionStore(tmp_path, index_views=True)
    parent = store.open("parent")
    _fill(parent, "alpha")
    parent.set_view(_view(parent))
    assert store.indexer is not None and store.indexer.wait(HANG)  # the thread runs here
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 only when its view was indexed in time
        code = 1
        try:
            child = store.open("child")
            _fill(child, "beta")
            child.set_view(_view(child))
            indexed = store.indexer.wait(HANG / 2)
            code = 0 if indexed and _indexed(str(tmp_path), "child") else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert _indexed(str(tmp_path), "child") == _hidden(store.open("child"))
    store.close()


def test_update_index_indexes_through_the_newest_message_the_view_hides(store_url: str) -> None:
    """A real ladder's view (old tool results cut, the newest steps whole): indexing ahead of a
    search takes the history through the newest message the view no longer shows as it is,
    and no further, whether the Session stored that view itself or another one did."""
    from compaction import ApproximateCounter, default_pipeline
    from compaction.sessions.searching import update_index

    store = SessionStore.from_url(store_url)
    try:
        session = store.open("agent")
        _fill(session, "alpha", steps=6)
        messages = session.messages
        counter = ApproximateCounter()
        target = counter.count_messages(messages) * 2 // 3
        view = default_pipeline(counter=counter).compact(messages, target=target).messages
        whole = {(m.id, m.content, m.tool_calls) for m in view}
        hidden = [
            e.seq
            for e in session.entries
            if (e.message.id, e.message.content, e.message.tool_calls) not in whole
        ]
        assert hidden and hidden[-1] < session.entries[-1].seq  # a cut, and a tail kept whole
        session.set_view(view)
        update_index(session)
        expected = {e.seq for e in session.entries if e.seq <= hidden[-1]}
        assert _indexed(store_url, "agent") == expected
        # Another Session (another process) reads how far from the stored view.
        elsewhere = SessionStore.from_url(store_url)
        try:
            update_index(elsewhere.open("agent"))
        finally:
            elsewhere.close()
        assert _indexed(store_url, "agent") == expected
        # What the view shows whole is still found: a search brings the index up to date.
        newest = session.entries[-1]
        assert newest.seq not in _indexed(store_url, "agent")
        hits = session.search("test_alpha_5", include_view=True)
        assert newest.seq in {h.seq for h in hits}
    finally:
        store.close()


def test_update_index_without_a_view_indexes_nothing_yet(store_url: str) -> None:
    from compaction.memory.search import searchable_text
    from compaction.sessions.searching import update_index

    store = SessionStore.from_url(store_url)
    try:
        session = store.open("agent")
        _fill(session, "alpha")
        update_index(session)  # nothing is hidden from the model: nothing to index ahead
        assert _indexed(store_url, "agent") == set()
        hits = session.search("test_alpha_1", include_view=True)
        assert hits and "test_alpha_1" in searchable_text(session.recall(hits[0].ref))
    finally:
        store.close()


def test_an_append_does_not_wait_for_an_indexer_holding_the_session(postgres_url: str) -> None:
    """The indexer's statement holds the session's row (so a clear waits for it) while it
    parses and inserts; an append to the same session goes on meanwhile, and a clear waits.
    The statement is stopped where it holds the row: in its check that each indexed message
    exists, on a message row another transaction has locked."""
    import psycopg

    store = SessionStore.from_url(postgres_url, index_views=True)
    try:
        session = store.open("agent")
        _fill(session, "alpha")
        session.search("importer")  # indexed up to here: the next pass is one statement
        _fill(session, "gamma", steps=2)
        first_new = session.entries[-4].seq
        holder = psycopg.connect(postgres_url)
        holder.execute(
            "SELECT 1 FROM compaction_messages WHERE session = %s AND seq = %s FOR UPDATE",
            ("agent", first_new),
        )
        try:
            session.set_view(_view(session))  # the indexer's statement now waits on that row
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                for _ in range(int(HANG / 0.05)):
                    waiting = admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname ="
                        " current_database() AND wait_event_type = 'Lock'"
                        " AND query LIKE '%compaction_search%'"
                    ).fetchone()
                    if waiting and waiting[0]:
                        break
                    threading.Event().wait(0.05)
                assert waiting and waiting[0]
            added: list[Any] = []
            writer = _in_thread(lambda: added.append(session.add_user("And the exporter too.")))
            writer.join(HANG)
            assert not writer.is_alive() and added
            cleared = threading.Event()
            clearer = _in_thread(lambda: (store.open("agent").clear(), cleared.set()))
            assert not cleared.wait(0.5)  # a new generation waits for the indexer
        finally:
            holder.rollback()
            holder.close()
        clearer.join(HANG)
        assert cleared.is_set() and store.indexer is not None and store.indexer.wait(HANG)
        assert _indexed(postgres_url, "agent") == set()  # the clear took the index with it
    finally:
        store.close()


@given(st.lists(st.sampled_from(["whole", "cut", "gone"]), max_size=30), st.integers(0, 5))
def test_hidden_through_is_the_newest_message_not_shown_whole(fates: list[str], first: int) -> None:
    """Against a plain reading of the rule: each message of the history kept whole, cut
    (the same id, other text) or gone from the view; messages from ``later`` on count as
    shown (the view was taken before them)."""
    from datetime import datetime, timezone

    from compaction.sessions.history import Entry, History
    from compaction.sessions.searching import hidden_through

    history = History()
    history.reset(first_seq=first)
    at = datetime.now(timezone.utc)
    history.extend(
        Entry(first + i, at, Message("user", f"message {i}", id=f"m{i}")) for i in range(len(fates))
    )
    view = []
    for entry, fate in zip(history.entries, fates, strict=True):
        if fate == "whole":
            view.append(entry.message)
        elif fate == "cut":
            view.append(entry.message.replace(content="[cut]"))
    hidden = [e.seq for e, fate in zip(history.entries, fates, strict=True) if fate != "whole"]
    assert hidden_through(view, history) == (hidden[-1] if hidden else first - 1)
    later = first + len(fates) // 2
    before = [seq for seq in hidden if seq < later]
    assert hidden_through(view, history, later) == (before[-1] if before else first - 1)
