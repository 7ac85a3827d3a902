"""Searching what a compaction took out of view: a session's history through SQLite FTS5, on
files (an index beside the journal, rebuilt when missing, torn or outdated) and on PostgreSQL
(the ``session_store`` fixture runs each conformance case on both)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.memory.search import SearchIndex, fts_queries
from compaction.messages import Message, ToolCall
from compaction.sessions import SessionStore


def _run(session: object, n: int = 12) -> None:
    """A task, then steps whose outputs each name their own error and file."""
    session.add([Message("user", "Fix the failing login tests in the auth service.")])  # type: ignore[attr-defined]
    for i in range(n):
        call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"pytest tests/test_mod{i}.py"}))
        session.add(  # type: ignore[attr-defined]
            [
                Message("assistant", f"Running step {i}.", tool_calls=(call,)),
                Message(
                    "tool",
                    f"FAILED tests/test_mod{i}.py::test_case_{i} - Error{i}Kind: bad value {i}\n"
                    + "noise line\n" * 20,
                    tool_call_id=f"c{i}",
                ),
            ]
        )


def _compact_view(session: object, keep: int = 4) -> None:
    """Store a view holding the task and the newest ``keep`` messages only."""
    messages = session.messages  # type: ignore[attr-defined]
    session.set_view([messages[0], *messages[-keep:]])  # type: ignore[attr-defined]


def test_search_finds_what_left_the_view_and_recall_gives_it_back(
    session_store: SessionStore,
) -> None:
    session = session_store.open("agent")
    _run(session)
    _compact_view(session)
    hits = session.search("Error3Kind")
    assert [h.seq for h in hits] == [8]  # the tool output of step 3
    assert "[Error3Kind]" in hits[0].snippet
    original = session.recall(hits[0].ref)
    assert original is not None and "test_case_3" in original.content
    # What is still in view is not answered by default; asked for, it is.
    assert session.search("Error11Kind") == []
    assert [h.seq for h in session.search("Error11Kind", include_view=True)] == [24]
    # A test id is found by its words, best match first.
    ranked = session.search("tests/test_mod5.py::test_case_5", limit=3)
    assert ranked[0].seq in (11, 12)
    tool = session.search_tool()
    answer = tool.invoke({"query": "Error2Kind"})
    assert hits[0].ref not in answer and session.search("Error2Kind")[0].ref in answer


def test_no_hit_crosses_to_another_conversation(
    session_store: SessionStore, store_url: str
) -> None:
    mine, theirs = session_store.open("mine"), session_store.open("theirs")
    _run(mine, 3)
    theirs.add([Message("user", "Secret plan: launch codename BLUEHERON on Friday.")])
    theirs.add([Message("assistant", "Noted.")])
    _compact_view(mine, 2)
    assert mine.search("BLUEHERON", include_view=True) == []
    assert [h.role for h in theirs.search("BLUEHERON", include_view=True)] == ["user"]
    # Another store object on the same storage sees the same, and still only its own.
    again = SessionStore.from_url(store_url).open("mine")
    assert again.search("BLUEHERON", include_view=True) == []
    assert again.search("Error1Kind")


def test_a_cleared_session_answers_nothing_it_had(session_store: SessionStore) -> None:
    session = session_store.open("cleared")
    _run(session, 3)
    assert session.search("Error1Kind", include_view=True)
    session.clear()
    session.add([Message("user", "A new start.")])
    assert session.search("Error1Kind", include_view=True) == []
    assert session.search("start", include_view=True)


def test_the_file_index_is_rebuilt_when_missing_or_torn(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.open("agent")
    _run(session, 5)
    _compact_view(session)
    first = session.search("Error2Kind")
    index = tmp_path / "agent" / "search.sqlite"
    assert index.is_file()
    for damage in ("delete", "garbage"):
        if damage == "delete":
            index.unlink()
        else:
            index.write_bytes(b"not a database at all" * 100)
        fresh = SessionStore(tmp_path).open("agent")
        assert fresh.search("Error2Kind") == first


def test_a_link_where_the_index_goes_is_never_followed(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.open("agent")
    _run(session, 2)
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    session.search("anything")  # the session directory exists now
    index = tmp_path / "agent" / "search.sqlite"
    index.unlink()
    os.symlink(target, index)
    fresh = SessionStore(tmp_path).open("agent")
    assert fresh.search("Error1Kind", include_view=True)
    assert target.read_text() == "keep me" and index.is_symlink()


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_any_query_is_words_never_fts_syntax(query: str) -> None:
    index = SearchIndex()
    index.add([(0, Message("user", 'say "hello" NEAR(world) AND * OR -x ^'))])
    hits = index.search(query, 3)
    assert len(hits) <= 1
    for built in fts_queries(query):
        for part in built.replace(" AND ", " OR ").split(" OR "):
            assert part.startswith('"') and part.endswith('"') and part.count('"') == 2


def test_a_huge_query_and_bad_limits(tmp_path: Path) -> None:
    index = SearchIndex(tmp_path / "i.sqlite")
    index.add([(0, Message("user", "alpha beta")), (1, Message("user", "gamma"))])
    assert [h.seq for h in index.search("alpha " * 2_000_000, 5)] == [0]
    with pytest.raises(ValueError):
        index.search("alpha", 0)
    assert index.add([(0, Message("user", "changed"))]) == 0  # indexed once, never twice


def test_a_turn_loop_offers_search_and_recall_from_its_session(tmp_path: Path) -> None:
    """A loop whose window forced compactions: the model searches for an error it saw many
    steps ago, then recalls that message whole, and both answers come from the session."""
    from compaction.loop import TurnLoop
    from compaction.messages import assistant

    store = SessionStore(tmp_path)
    session = store.open("agent")

    def read(path: str) -> str:
        """Read a file."""
        marker = "KeyError: 'tenant_id'" if path == "a.py" else "fine"
        return f"{path}: {marker}\n" + "filler text for the window\n" * 60

    calls = [
        assistant("", [ToolCall(f"r{i}", "read", json.dumps({"path": p}))])
        for i, p in enumerate(["a.py", "b.py", "c.py", "d.py", "e.py", "f.py"])
    ]
    seen: dict[str, str] = {}
    steps = iter(calls)

    def model(messages: Any, tools: Any = None) -> Message:
        # The request is compacted as the run goes: count steps here, not in the request.
        step = next(steps, None)
        if step is not None:
            return step
        if "search" not in seen:
            seen["search"] = ""
            return assistant("", [ToolCall("s1", "search", json.dumps({"query": "tenant_id"}))])
        if "recall" not in seen:
            answer = messages[-1].content
            seen["search"] = answer
            ref = answer.split("- id ", 1)[1].split(" ", 1)[0]
            seen["recall"] = ""
            return assistant("", [ToolCall("s2", "recall", json.dumps({"id": ref}))])
        seen["recall"] = messages[-1].content
        return assistant("Found it.")

    loop = TurnLoop(model, [read], session=session, window=1500, memory_tools=True)
    names = {t["function"]["name"] for t in (t.schema for t in loop.tools.values())}
    assert {"read", "recall", "search"} <= names
    loop.run("Find where tenant_id breaks.")
    assert "KeyError" in seen["search"] and "tenant_id" in seen["search"]
    assert seen["recall"].startswith("a.py: KeyError: 'tenant_id'")
    with pytest.raises(ValueError, match="session"):
        TurnLoop(model, [read], memory_tools=True)


@pytest.mark.transcripts
@pytest.mark.slow
def test_every_fact_a_compaction_hid_is_found_in_the_top_three(tmp_path: Path) -> None:
    """On every shared transcript, compacted to a quarter of its size: each probe fact (a
    failing test id, an error name, an edited path, ...) the compacted messages no longer show
    is found by searching for it, the message that held it among the first three hits."""
    from compaction import TiktokenCounter, default_pipeline
    from compaction.check import UnreadableLog, log_facts, run_text
    from compaction.formats import load

    from .conftest import transcript_files

    files = transcript_files()
    if not files:
        pytest.skip("the shared transcripts are not present")
    store = SessionStore(tmp_path)
    counter = TiktokenCounter()
    asked = found = 0
    misses: list[str] = []
    for n, path in enumerate(files):
        messages = load(path).messages
        try:
            facts = log_facts(path, messages).asked
        except UnreadableLog:
            continue
        session = store.open(f"t{n}")
        session.add(list(messages))
        stored = session.messages
        target = max(1, counter.count_messages(stored) // 4)
        view = default_pipeline(counter=counter).compact(stored, target=target).messages
        session.set_view(view)
        shown = run_text(view)
        for fact in facts:
            if fact.recovered(shown):
                continue
            asked += 1
            hits = session.search(fact.answer, limit=3)
            holders = {h.seq for h in hits if fact.recovered(run_text([stored[h.seq]]))}
            if holders:
                found += 1
            else:
                misses.append(f"{path.name}: {fact.kind} {fact.answer!r}")
    assert asked >= 10  # enough hidden facts to mean something
    assert not misses, f"{found}/{asked} found; missed: {misses[:10]}"
