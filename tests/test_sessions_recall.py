"""Nothing is lost to compaction: the stored view, and recall of what a strategy replaced.

The compacted views are built by hand with compaction.memory.transcript.mark, exactly as strategies
record their provenance, so these tests do not depend on any particular strategy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compaction.memory.transcript import mark, message_ref, provenance
from compaction.messages import Message, ToolCall
from compaction.sessions import Session, SessionStore

WORKER = Path(__file__).resolve().parent / "helpers_sessions" / "worker.py"


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = SessionStore(tmp_path).open("agent")
    s.add(
        [
            Message("system", "You are a coding agent."),
            Message("user", "Fix the failing test."),
            Message(
                "assistant",
                "Let me look.",
                tool_calls=(ToolCall("c1", "read_file", {"path": "a.py"}),),
            ),
            Message("tool", "def a():\n    return 1\n" * 50, tool_call_id="c1", name="read_file"),
            Message("assistant", "Found it."),
            Message("user", "Now run the tests."),
        ]
    )
    return s


def compact_by_hand(raw: tuple[Message, ...]) -> list[Message]:
    """A summary standing for the first turn and a placeholder for the tool output."""
    system, task, step, result, answer, current = raw
    summary = mark(
        Message("user", "[Summary] The user asked to fix a test; a.py was read."),
        strategy="summary",
        kind="summary",
        replaces=[task, step],
    )
    placeholder = mark(
        result.replace(content="[tool output removed]"),
        strategy="tool_results",
        kind="placeholder",
        replaces=[result],
    )
    return [system, summary, placeholder, answer, current]


def test_every_replaced_message_can_be_recalled(session: Session) -> None:
    raw = session.messages
    view = compact_by_hand(raw)
    session.set_view(view)
    fresh = SessionStore(session.store.root).open("agent")
    stored = fresh.view()
    assert [m.content for m in stored] == [m.content for m in view]
    replaced = [ref for m in stored if provenance(m) for ref in provenance(m)["replaces"]]
    assert replaced == [raw[1].id, raw[2].id, raw[3].id]
    for ref, original in zip(replaced, raw[1:4], strict=True):
        assert fresh.recall(ref) == original
    # the raw history is untouched by storing a view
    assert fresh.messages == raw
    assert fresh.recall("agent-999") is None


def test_view_is_raw_history_until_one_is_stored_and_grows_after(session: Session) -> None:
    raw = session.messages
    assert session.view() == raw
    view = compact_by_hand(raw)
    session.set_view(view)
    later = session.add_assistant("Running them now.")
    assert session.view() == (*SessionStore(session.store.root).open("agent").view()[:5], later)
    assert session.view()[-1] == later
    assert len(session.view()) == len(view) + 1


def test_a_view_that_would_lose_a_message_is_refused(session: Session) -> None:
    stranger = Message("user", "never added to this session", id="elsewhere-1")
    note = mark(Message("user", "[note]"), strategy="x", kind="note", replaces=[stranger])
    with pytest.raises(ValueError, match="replaces 'elsewhere-1'.*would lose it"):
        session.set_view([note])
    assert session.view() == session.messages  # nothing stored


def test_recall_by_fingerprint_for_views_built_without_ids(session: Session) -> None:
    # A caller may compact copies without ids; provenance then holds content fingerprints.
    anonymous = tuple(m.replace(id=None, tokens=m.tokens) for m in session.messages)
    view = compact_by_hand(anonymous)
    refs = provenance(view[1])["replaces"]
    assert all(ref.startswith("sha1:") for ref in refs)
    session.set_view(view)
    assert session.recall(refs[0]) == session.messages[1]
    assert session.recall(refs[1]) == session.messages[2]
    assert session.recall(message_ref(Message("user", "unknown"))) is None


def test_nested_compaction_still_names_the_originals(session: Session) -> None:
    raw = session.messages
    first = compact_by_hand(raw)
    second_note = mark(
        Message("user", "[Summary of everything]"),
        strategy="summary",
        kind="summary",
        replaces=first[1:4],
    )
    session.set_view([first[0], second_note, first[4]])
    refs = provenance(SessionStore(session.store.root).open("agent").view()[1])["replaces"]
    assert set(refs) == {raw[1].id, raw[2].id, raw[3].id, raw[4].id}
    assert [session.recall(r) for r in refs] == [raw[1], raw[2], raw[3], raw[4]]


def test_recall_tool_spec_and_calls(session: Session) -> None:
    raw = session.messages
    session.set_view(compact_by_hand(raw))
    tool = session.recall_tool()
    spec = tool.spec
    assert spec["name"] == "recall"
    assert spec["parameters"]["required"] == ["id"]
    assert spec["parameters"]["properties"]["id"]["type"] == "string"
    json.dumps(spec)  # plain data, ready for any provider
    assert tool.openai() == {"type": "function", "function": spec}
    assert tool.anthropic()["input_schema"] == spec["parameters"]
    assert tool(raw[3].id) == raw[3].content
    assert tool(raw[2].id) == 'Let me look.\n[tool call c1: read_file({"path": "a.py"})]'
    assert tool("nope") == "no message with id 'nope' in session 'agent'"
    assert tool.invoke(json.dumps({"id": raw[1].id})) == "Fix the failing test."
    assert tool.invoke({"id": raw[1].id}) == "Fix the failing test."
    assert "JSON arguments" in tool.invoke("{bad")
    assert '"id" argument' in tool.invoke({"path": "x"})


def test_view_and_recall_survive_a_fresh_process(session: Session) -> None:
    raw = session.messages
    session.set_view(compact_by_hand(raw))
    out = subprocess.run(
        [sys.executable, str(WORKER), "dump", str(session.store.root), "agent"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    view = json.loads(out.stdout)["view"]
    assert [m["content"] for m in view["messages"]][1].startswith("[Summary]")
    assert view["messages"][1]["meta"]["compaction"]["replaces"] == [raw[1].id, raw[2].id]


def test_clear_empties_the_raw_history_so_recall_of_an_old_id_is_none(tmp_path):
    # clear() is deletion on request, not compaction: documented, and ids are never reused.
    from compaction.messages import user
    from compaction.sessions import SessionStore

    session = SessionStore(tmp_path).open("s")
    (old,) = session.add(user("before"))
    session.clear()
    assert session.recall(old.id) is None
    (new,) = session.add(user("after"))
    assert new.id != old.id
    assert session.recall(old.id) is None
    assert "recall" in (type(session).clear.__doc__ or "")
