"""Step definitions for features/sessions.feature (seed 001's context-manager scenarios).

Reloads that matter ("persisted to disk", "in a new process") read the session back in a
separate Python process through tests/helpers_sessions/worker.py, so nothing can come from
this process's memory.

Every scenario runs against each backend (the ``store_url`` fixture in the root conftest.py:
a directory, then a fresh PostgreSQL database). Steps about what is stored look at the
storage itself: the files for the file store, the rows for PostgreSQL.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction.messages import Message
from compaction.sessions import Session, SessionNotFoundError, SessionStore

scenarios("sessions.feature")

WORKER = Path(__file__).resolve().parents[1] / "tests" / "helpers_sessions" / "worker.py"


def dump_in_new_process(root: str, name: str) -> dict[str, Any]:
    """The session's snapshot as read by a fresh Python process."""
    out = subprocess.run(
        [sys.executable, str(WORKER), "dump", str(root), name],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(out.stdout)


def messages_of(snapshot: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (r["message"]["role"], r["message"]["content"], r["message"]["id"])
        for r in snapshot["messages"]
    ]


@pytest.fixture
def ctx() -> dict[str, Any]:
    return {}


# -- background and opening ------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _every_backend(store_url: str) -> str:
    # pytest-bdd asks for step fixtures at run time, too late for parametrisation: this
    # autouse fixture puts the parametrised store_url in every scenario's closure.
    return store_url


@given("a temporary session store", target_fixture="store")
def _store(store_url: str) -> SessionStore:
    return SessionStore.from_url(store_url)


def rows(store: SessionStore, name: str) -> set[str] | None:
    """For a PostgreSQL store, the documents stored for ``name`` plus "session" when its row
    exists (read with a connection of our own); None for a file store."""
    if store.location.startswith("postgresql"):
        import psycopg

        with psycopg.connect(store.location) as conn:
            found = conn.execute(
                "SELECT 1 FROM compaction_sessions WHERE name = %s", (name,)
            ).fetchone()
            kinds = conn.execute(
                "SELECT kind FROM compaction_documents WHERE session = %s", (name,)
            ).fetchall()
        return {k for (k,) in kinds} | ({"session"} if found else set())
    return None


@given(parsers.parse('a session named "{name}"'), target_fixture="session")
def _given_session(store: SessionStore, name: str) -> Session:
    return store.create(name)


@when(parsers.parse('I create a session named "{name}"'), target_fixture="session")
def _create(store: SessionStore, name: str) -> Session:
    return store.create(name)


@when(parsers.parse('I open a session named "{name}"'), target_fixture="session")
def _open(store: SessionStore, name: str) -> Session:
    return store.open(name)


@then("the session should be initialized")
def _initialized(store: SessionStore, session: Session) -> None:
    assert session.exists()
    assert store.exists(session.name)
    assert session.messages == ()
    assert session.created is not None
    if rows(store, session.name) is None:
        assert session.path == store.root / session.name


@then("the session directory should exist")
@then("the session directory should still exist")
def _dir_exists(store: SessionStore, session: Session) -> None:
    stored = rows(store, session.name)
    if stored is not None:
        assert "session" in stored
        return
    assert session.path.is_dir()
    assert stat.S_IMODE(session.path.stat().st_mode) == 0o700


@then("the session files should be created")
def _files_created(store: SessionStore, session: Session) -> None:
    stored = rows(store, session.name)
    if stored is not None:
        assert {"session", "context", "state", "metadata"} <= stored
        return
    names = {p.name for p in session.path.iterdir()}
    assert {"messages.jsonl", "context.json", "state.json", "metadata.json"} <= names
    for name in ("messages.jsonl", "context.json", "state.json", "metadata.json"):
        assert stat.S_IMODE((session.path / name).stat().st_mode) == 0o600
    header = json.loads((session.path / "messages.jsonl").read_text().splitlines()[0])
    assert header["format"] == "compaction.session"
    assert header["version"] == 1


# -- messages --------------------------------------------------------------------------------


@when(parsers.parse('I add a user message "{text}"'))
def _add_user(session: Session, ctx: dict[str, Any], text: str) -> None:
    ctx.setdefault("added", []).append(session.add_user(text))


@when(parsers.parse('I add an assistant message "{text}"'))
def _add_assistant(session: Session, ctx: dict[str, Any], text: str) -> None:
    ctx.setdefault("added", []).append(session.add_assistant(text))


@when("I save the session")
def _save(session: Session) -> None:
    session.save()


@then("the messages should be persisted to disk")
def _persisted(store: SessionStore, session: Session, ctx: dict[str, Any]) -> None:
    snapshot = dump_in_new_process(store.location, session.name)
    expected = [(m.role, m.content, m.id) for m in ctx["added"]]
    assert messages_of(snapshot) == expected


@when(parsers.parse('I open the session "{name}" again in a new process'))
def _reopen_new_process(store: SessionStore, ctx: dict[str, Any], name: str) -> None:
    ctx["reloaded"] = dump_in_new_process(store.location, name)
    ctx["reopened"] = SessionStore.from_url(store.location).open(name, create=False)


@then("the loaded messages should match the saved messages")
def _loaded_match(ctx: dict[str, Any]) -> None:
    expected = [(m.role, m.content, m.id) for m in ctx["added"]]
    assert messages_of(ctx["reloaded"]) == expected
    assert list(ctx["reopened"].messages) == ctx["added"]
    assert [m.content for m in ctx["reopened"].messages] == [
        "Hello, how are you?",
        "I'm doing well, thank you!",
    ]


@given(parsers.parse("I have added {count:d} messages to the conversation"))
@given(parsers.parse("the session has {count:d} messages in history"))
def _add_many(session: Session, ctx: dict[str, Any], count: int) -> None:
    messages = [
        Message("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(count)
    ]
    ctx["added"] = list(session.add(messages))


@when(parsers.parse("I request the last {n:d} messages"))
def _last(session: Session, ctx: dict[str, Any], n: int) -> None:
    ctx["last"] = SessionStore.from_url(session.store.location).open(session.name).last(n)


@then(parsers.parse("I should receive exactly {n:d} messages"))
def _received(ctx: dict[str, Any], n: int) -> None:
    assert len(ctx["last"]) == n


@then("the messages should be the most recent ones, oldest first")
def _most_recent(ctx: dict[str, Any]) -> None:
    assert [m.content for m in ctx["last"]] == [f"message {i}" for i in range(5, 10)]
    assert list(ctx["last"]) == ctx["added"][-5:]


@when("I clear the session")
def _clear(store: SessionStore, session: Session) -> None:
    store.clear(session.name)


@then("the message history should be empty")
def _empty(store: SessionStore, session: Session) -> None:
    assert session.messages == ()
    assert dump_in_new_process(store.location, session.name)["messages"] == []


# -- global context, state, metadata ---------------------------------------------------------


@when(parsers.parse('I save global context with key "{key}" and value "{value}"'))
def _set_global(session: Session, ctx: dict[str, Any], key: str, value: str) -> None:
    session.global_context[key] = value
    ctx.setdefault("global", {})[key] = value


@then("the global context should be persisted to disk")
def _global_persisted(store: SessionStore, session: Session, ctx: dict[str, Any]) -> None:
    if rows(store, session.name) is not None:
        assert (
            dump_in_new_process(store.location, session.name)["global_context"]["data"]
            == (ctx["global"])
        )
        return
    doc = json.loads((session.path / "context.json").read_text())
    assert doc["format"] == "compaction.session.context"
    assert doc["data"] == ctx["global"]


@when("I reload the session in a new process")
def _reload_new_process(store: SessionStore, session: Session, ctx: dict[str, Any]) -> None:
    ctx["reloaded"] = dump_in_new_process(store.location, session.name)


@then(parsers.parse('the global context should contain "{key}" with value "{value}"'))
def _global_contains(ctx: dict[str, Any], key: str, value: str) -> None:
    assert ctx["reloaded"]["global_context"]["data"][key] == value


@given(parsers.parse('the session has state "{key}" with value "{value}"'))
def _given_state(session: Session, key: str, value: str) -> None:
    session.state[key] = value


@when(parsers.parse('I update the state "{key}" to "{value}"'))
def _update_state(session: Session, key: str, value: str) -> None:
    session.state[key] = value


@when(parsers.parse('I add metadata "{key}" with the current timestamp'))
def _metadata_now(session: Session, ctx: dict[str, Any], key: str) -> None:
    stamp = datetime.now(timezone.utc).isoformat()
    session.metadata[key] = stamp
    ctx["metadata"] = (key, stamp)


@then(parsers.parse('the state "{key}" should be "{value}" after a reload'))
def _state_after_reload(store: SessionStore, session: Session, key: str, value: str) -> None:
    assert SessionStore.from_url(store.location).open(session.name).state[key] == value
    assert dump_in_new_process(store.location, session.name)["state"]["data"] == {key: value}


@then("the metadata should contain the timestamp after a reload")
def _metadata_after_reload(store: SessionStore, session: Session, ctx: dict[str, Any]) -> None:
    key, stamp = ctx["metadata"]
    metadata = dump_in_new_process(store.location, session.name)["metadata"]["data"]
    assert metadata[key] == stamp
    written = datetime.fromisoformat(metadata[key])
    assert abs(datetime.now(timezone.utc) - written) < timedelta(hours=1)
    assert "created" in metadata


# -- delete and list -------------------------------------------------------------------------


@given("the session has messages and state data")
def _messages_and_state(session: Session) -> None:
    session.add_user("something to delete")
    session.state["current_task"] = "deleting"


@when("I delete the session")
def _delete(store: SessionStore, session: Session) -> None:
    store.delete(session.name)


@then("the session directory should not exist")
def _dir_gone(store: SessionStore, session: Session) -> None:
    stored = rows(store, session.name)
    assert stored == set() if stored is not None else not session.path.exists()
    assert not store.exists(session.name)
    assert session.name not in store.list()


@then(
    parsers.parse('opening the session "{name}" without creating it should say it does not exist')
)
def _open_deleted(store: SessionStore, name: str) -> None:
    with pytest.raises(SessionNotFoundError) as info:
        store.open(name, create=False)
    assert name in str(info.value)
    assert store.location in str(info.value)
    assert isinstance(info.value, LookupError)


@given(parsers.parse('I have created sessions named "{a}", "{b}", "{c}"'))
def _create_three(store: SessionStore, a: str, b: str, c: str) -> None:
    for name in (a, b, c):
        store.create(name)


@when("I list all sessions", target_fixture="listed")
def _list(store: SessionStore) -> list[str]:
    return store.list()


@then(parsers.parse('the list should be "{a}", "{b}", "{c}"'))
def _listed(listed: list[str], a: str, b: str, c: str) -> None:
    assert listed == [a, b, c]
    assert listed == sorted(listed)


# -- export and import -----------------------------------------------------------------------


@given("the session has messages, state, and global context data")
def _full_session(session: Session) -> None:
    session.add_user("Plan the paper", meta={"source": "cli"})
    session.add_assistant("Outline: intro, method, results", tokens=7)
    session.state["current_task"] = "outlining"
    session.global_context.update(writing_stage="planning", sections=["intro", "method"])
    session.metadata["owner"] = "alice"


@when("I export the session to a file")
def _export(store: SessionStore, session: Session, tmp_path: Path, ctx: dict[str, Any]) -> None:
    ctx["export"] = store.export(session.name, tmp_path / "export.json")


@then("the export file should contain all session data")
def _export_contains(ctx: dict[str, Any]) -> None:
    path: Path = ctx["export"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert doc["format"] == "compaction.session.export"
    assert doc["version"] == 1
    assert [r["message"]["content"] for r in doc["messages"]] == [
        "Plan the paper",
        "Outline: intro, method, results",
    ]
    assert doc["messages"][0]["message"]["meta"] == {"source": "cli"}
    assert doc["messages"][1]["message"]["tokens"] == 7
    assert doc["state"]["data"] == {"current_task": "outlining"}
    assert doc["global_context"]["data"] == {
        "writing_stage": "planning",
        "sections": ["intro", "method"],
    }
    assert doc["metadata"]["data"]["owner"] == "alice"


@when(parsers.parse('I import the session as "{name}"'), target_fixture="imported")
def _import(store: SessionStore, ctx: dict[str, Any], name: str) -> Session:
    return store.import_(ctx["export"], name)


@then("the imported session should match the original")
def _imported_matches(store: SessionStore, session: Session, imported: Session) -> None:
    original = dump_in_new_process(store.location, session.name)
    copy = dump_in_new_process(store.location, imported.name)
    assert copy["name"] == imported.name != original["name"]
    for key in ("messages", "global_context", "state", "metadata", "view", "created"):
        assert copy[key] == original[key], key
    assert imported.messages == session.messages
    assert sorted(store.list()) == sorted([session.name, imported.name])


# -- formatted history -----------------------------------------------------------------------


@given("I have added messages with timestamps")
def _timestamped(session: Session, ctx: dict[str, Any]) -> None:
    t0 = datetime(2024, 5, 17, 9, 30, 0, tzinfo=timezone.utc)
    session.add_user("What is compaction?", at=t0)
    session.add_assistant("Shrinking a conversation.", at=t0 + timedelta(minutes=1))
    session.metadata["project"] = "docs"


@when("I get the formatted history without metadata")
def _history_plain(session: Session, ctx: dict[str, Any]) -> None:
    ctx["output"] = session.format_history()


@when("I get the formatted history with metadata")
def _history_meta(session: Session, ctx: dict[str, Any]) -> None:
    ctx["output"] = session.format_history(with_metadata=True)


@then("the output should show timestamps, roles, and content")
def _history_lines(ctx: dict[str, Any]) -> None:
    assert ctx["output"].splitlines() == [
        "[2024-05-17T09:30:00Z] user: What is compaction?",
        "[2024-05-17T09:31:00Z] assistant: Shrinking a conversation.",
    ]


@then("the output should not include metadata information")
def _no_metadata(ctx: dict[str, Any]) -> None:
    assert "project" not in ctx["output"]
    assert "format-session-0" not in ctx["output"]


@then("the output should include metadata information")
def _with_metadata(session: Session, ctx: dict[str, Any]) -> None:
    output = ctx["output"]
    assert "Session: format-session" in output
    assert 'project: "docs"' in output
    assert "Created: " in output
    assert "id=format-session-0" in output
    assert "[2024-05-17T09:30:00Z] user: What is compaction?" in output


# -- a session that does not exist yet -------------------------------------------------------


@when("I check if the session exists")
def _check_exists(store: SessionStore, session: Session, ctx: dict[str, Any]) -> None:
    ctx["exists"] = (session.exists(), store.exists(session.name))


@then("it should indicate the session doesn't exist")
def _does_not_exist(ctx: dict[str, Any]) -> None:
    assert ctx["exists"] == (False, False)


@when("I try to get messages from the empty session")
def _get_empty(session: Session, ctx: dict[str, Any]) -> None:
    ctx["messages"] = session.messages
    ctx["last"] = session.last(3)


@then("it should return an empty list")
def _empty_list(ctx: dict[str, Any]) -> None:
    assert ctx["messages"] == ()
    assert ctx["last"] == ()


@then(parsers.parse('nothing should have been written for "{name}"'))
def _nothing_written(store: SessionStore, name: str) -> None:
    assert name not in store.list()
    stored = rows(store, name)
    if stored is not None:
        assert stored == set()
        return
    assert not (store.root / name).exists()
    assert not os.path.exists(store.root / name)
