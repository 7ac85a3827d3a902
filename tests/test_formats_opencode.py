"""The OpenCode reader (``opencode export`` JSON) on exports built here in the shape
OpenCode's ``MessageV2`` writes, through ``load`` and the CLI, and under hostile input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.formats import FormatError, detect_format, load, loads
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import SYNTHETIC_KEY, is_person_written
from compaction.pricing.recorded import recorded_usage
from compaction.validate import problems
from tests.format_cli import ODD_VALUES
from tests.test_cli import call, run_all

T0 = 1_750_000_000_000  # ms


def _part(mid: str, i: int, part: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"prt_{mid}_{i}", "sessionID": "ses_1", "messageID": mid, **part}


def user(mid: str, at: int, *parts: dict[str, Any]) -> dict[str, Any]:
    info = {
        "id": mid,
        "sessionID": "ses_1",
        "role": "user",
        "time": {"created": T0 + at},
        "agent": "build",
        "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"},
    }
    return {"info": info, "parts": [_part(mid, i, p) for i, p in enumerate(parts)]}


def tokens(uncached: int, output: int, read: int, write: int, reasoning: int = 0) -> dict:
    return {
        "input": uncached,
        "output": output,
        "reasoning": reasoning,
        "cache": {"read": read, "write": write},
    }


def assistant(mid: str, at: int, *parts: dict[str, Any], **info: Any) -> dict[str, Any]:
    base = {
        "id": mid,
        "sessionID": "ses_1",
        "role": "assistant",
        "time": {"created": T0 + at, "completed": T0 + at + 900},
        "parentID": "msg_u1",
        "modelID": "claude-sonnet-4-5",
        "providerID": "anthropic",
        "mode": "build",
        "agent": "build",
        "path": {"cwd": "/w", "root": "/w"},
        "cost": 0.5,
        "tokens": tokens(1, 2, 3, 4),
        **info,
    }
    return {"info": base, "parts": [_part(mid, i, p) for i, p in enumerate(parts)]}


def text(value: str, **more: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **more}


def tool(call_id: str, name: str, status: str, **state: Any) -> dict[str, Any]:
    return {
        "type": "tool",
        "callID": call_id,
        "tool": name,
        "state": {"status": status, "input": state.pop("input", {}), **state},
    }


def finish(cost: float, usage: dict[str, Any]) -> dict[str, Any]:
    return {"type": "step-finish", "reason": "tool-calls", "cost": cost, "tokens": usage}


STEP = {"type": "step-start"}
PERSON = "make greet() in @src/app.ts take a name"
READ = 'Called the Read tool with the following input: {"filePath":"src/app.ts"}'


def export(*messages: dict[str, Any]) -> dict[str, Any]:
    session = {"id": "ses_1", "title": "greet", "directory": "/w", "version": "1.0.0"}
    return {"info": session, "messages": list(messages), "todos": []}


def session() -> dict[str, Any]:
    """A run: the person's request with a file OpenCode read in, two model calls in one
    assistant message, a failed call, one left running, a compaction and its summary."""
    return export(
        user(
            "msg_u1",
            0,
            text(PERSON),
            text(READ, synthetic=True),
            text("export function greet() {}", synthetic=True),
            {"type": "file", "mime": "text/plain", "filename": "src/app.ts", "url": "file:///w/a"},
        ),
        assistant(
            "msg_a1",
            1000,
            STEP,
            {"type": "reasoning", "text": "edit it", "time": {"start": 1}},
            text("I'll edit it."),
            tool(
                "call_1",
                "edit",
                "completed",
                input={"filePath": "src/app.ts"},
                output="Edit applied",
                title="src/app.ts",
                metadata={},
                time={"start": 1, "end": 2},
            ),
            tool(
                "call_2",
                "bash",
                "error",
                input={"command": "npm test"},
                error="exit 1",
                time={"start": 1, "end": 2},
            ),
            finish(0.02, tokens(40, 30, 1000, 200, reasoning=7)),
            STEP,
            text("Done."),
            tool("call_3", "bash", "running", input={"command": "ls"}, time={"start": 3}),
            finish(0.01, tokens(5, 6, 1200, 0)),
            {"type": "patch", "hash": "abc", "files": ["src/app.ts"]},
        ),
        user("msg_u2", 2000, {"type": "compaction", "auto": True}),
        assistant(
            "msg_a2",
            3000,
            STEP,
            text("## Goal\ngreet takes a name"),
            finish(0.0, tokens(0, 50, 0, 0)),
            summary=True,
            mode="compaction",
        ),
        user("msg_u3", 4000, text("Continue if you have next steps.", synthetic=True)),
        assistant(
            "msg_a3",
            5000,
            STEP,
            error={"name": "APIError", "data": {"message": "overloaded", "isRetryable": True}},
        ),
        user("msg_u4", 6000, text("now add a test")),
    )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    out = tmp_path / "session.json"
    out.write_text(json.dumps(session(), indent=2))
    return out


def test_reads_the_run_as_opencode_sends_it(path: Path) -> None:
    loaded = load(path)
    assert loaded.format == "opencode" == detect_format(path)
    assert problems(loaded.messages) == []
    shape = [
        (m.role, m.content, [c.id for c in m.tool_calls], m.tool_call_id) for m in loaded.messages
    ]
    assert shape == [
        ("user", PERSON, [], None),
        (
            "user",
            f"{READ}\nexport function greet() {{}}",
            [],
            None,
        ),
        ("assistant", "I'll edit it.", ["call_1", "call_2"], None),
        ("tool", "Edit applied", [], "call_1"),
        ("tool", "Error: exit 1", [], "call_2"),
        ("assistant", "Done.", ["call_3"], None),
        ("tool", NO_RESULT, [], "call_3"),
        ("user", "What did we do so far?", [], None),
        ("assistant", "## Goal\ngreet takes a name", [], None),
        ("user", "Continue if you have next steps.", [], None),
        ("user", "now add a test", [], None),
    ]
    calls = {c.id: (c.name, json.loads(c.arguments)) for m in loaded.messages for c in m.tool_calls}
    assert calls["call_2"] == ("bash", {"command": "npm test"})
    # Only the person's own words are the person's; OpenCode's text never is.
    assert [m.content for m in loaded.messages if is_person_written(m)] == [
        PERSON,
        "now add a test",
    ]
    assert all(
        m.meta.get(SYNTHETIC_KEY) is True
        for m in loaded.messages
        if m.role == "user" and not is_person_written(m) and "compaction" not in m.meta
    )
    assert [r.kind for r in loaded.repairs] == ["no_result"]
    assert loaded.skipped == {"patch part": 1, "assistant message with an error": 1}
    assert loaded.extra["session"]["title"] == "greet"


def test_each_step_keeps_its_own_usage_cost_and_model(path: Path) -> None:
    loaded = load(path)
    steps = [m for m in loaded.messages if m.role == "assistant"]
    first, second = steps[0].meta["recorded"], steps[1].meta["recorded"]
    # input is already uncached in OpenCode; reasoning is billed as output.
    assert first["usage"] == {"cache_read": 1000, "cache_write": 200, "uncached": 40, "output": 37}
    assert second["usage"] == {"cache_read": 1200, "cache_write": 0, "uncached": 5, "output": 6}
    assert (first["cost"], second["cost"]) == (0.02, 0.01)
    assert first["model"] == "claude-sonnet-4-5"
    assert first["timestamp"].startswith("2025-06-15T")
    assert recorded_usage(steps[0]) is not None
    assert steps[0].meta["opencode"]["reasoning"] == "edit it"


def test_summary_is_a_native_compaction_of_what_came_before(path: Path) -> None:
    loaded = load(path)
    at = next(i for i, m in enumerate(loaded.messages) if "compaction" in m.meta)
    summary = loaded.messages[at]
    assert summary.content.startswith("## Goal")
    assert summary.meta["boundary"] == {"kind": "compaction", "agent": "opencode"}
    assert "msg_u1" in summary.meta["compaction"]["replaces"]
    assert loaded.messages[at - 1].meta["opencode"]["compaction_request"] == {"auto": True}


def test_one_step_message_without_step_finish_uses_its_own_tokens() -> None:
    doc = export(
        user("u", 0, text("hi")),
        assistant("a", 1, text("hello"), tokens=tokens(9, 8, 7, 6), cost=0.3),
    )
    reply = loads(json.dumps(doc)).messages[1]
    assert reply.meta["recorded"]["usage"] == {
        "cache_read": 7,
        "cache_write": 6,
        "uncached": 9,
        "output": 8,
    }
    assert reply.meta["recorded"]["cost"] == 0.3


def test_cli_counts_compacts_and_takes_format(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    count, compact, forced, replay = run_all(
        ["count", str(path), "--json"],
        ["compact", str(path), "--target", "60", "-o", str(out)],
        ["count", str(path), "--format", "opencode"],
        ["replay", str(path), "--window", "300", "--price", "claude-sonnet-4-5"],
    )
    for result in (count, compact, forced, replay):
        assert result.returncode == 0, result.stderr
    assert json.loads(count.stdout)["messages"] == 11
    written = json.loads(out.read_text())
    assert written and all("role" in m for m in written)
    assert problems(load(out, format="openai").messages) == []  # a valid request
    assert "opencode" in forced.stdout
    assert "time from the log for" in replay.stdout


def _write(tmp_path: Path, text_: str) -> Path:
    out = tmp_path / "bad.json"
    out.write_text(text_)
    return out


@pytest.mark.parametrize(
    "broken",
    [
        json.dumps(session())[:-40],  # cut short
        json.dumps(export(user("u", 0, text("hi")), {"info": {"role": "assistant"}, "parts": "x"})),
        json.dumps(export(user("u", 0, text("hi")), assistant("a", 1, {"type": 3}))),
        json.dumps(export(user("u", 0, {"type": "file", "mime": "image/png"}))).replace(
            '"messages": [', '"messages": [' + "[" * 200 + "]" * 200 + ","
        ),
    ],
    ids=["truncated", "parts-not-a-list", "part-type-not-text", "deep"],
)
def test_hostile_exports_are_clear_errors(
    broken: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _write(tmp_path, broken)
    result = call(capsys, "count", str(bad), "--format", "opencode")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert str(bad) in result.stderr


def test_sniff_takes_no_plain_chat_or_other_object() -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    assert loads(json.dumps(chat)).format != "opencode"
    with pytest.raises(FormatError):
        loads(json.dumps({"info": {"id": "x"}, "messages": []}), format="opencode")
    empty = {"info": {"id": "ses_1", "title": "t", "directory": "/w"}, "messages": []}
    with pytest.raises(FormatError, match="read as opencode: it yields no messages"):
        loads(json.dumps(empty))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_field_set_to_an_odd_value_reads_or_fails_clearly(data: st.DataObject) -> None:
    doc = session()
    message = data.draw(st.sampled_from(doc["messages"]))
    where = data.draw(st.sampled_from(["info", "part", "state"]))
    if where == "info":
        key = data.draw(st.sampled_from(sorted(message["info"])))
        message["info"][key] = data.draw(ODD_VALUES)
    else:
        part = data.draw(st.sampled_from(message["parts"]))
        target = (
            part.get("state") if where == "state" and isinstance(part.get("state"), dict) else part
        )
        key = data.draw(st.sampled_from(sorted(target)))
        target[key] = data.draw(ODD_VALUES)
    try:
        loaded = loads(json.dumps(doc), format="opencode")
    except FormatError as exc:
        assert str(exc)
        return
    assert problems(loaded.messages) == []
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)


def test_the_docs_example_reads_as_described() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text()
    section = page[page.index("### OpenCode session export") :]
    example = section[section.index("```json\n") + 8 : section.index("```\n", 8)]
    loaded = loads(example, name="session.json")
    assert [(m.role, m.tool_call_id) for m in loaded.messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", "t1"),
    ]
    usage = loaded.messages[1].meta["recorded"]["usage"]
    assert usage == {"cache_read": 9000, "cache_write": 300, "uncached": 12, "output": 40}


def test_only_the_synthetic_flag_makes_text_opencodes() -> None:
    # OpenCode wraps a queued message in a reminder only when it sends it; what it stores,
    # unflagged, is what the person typed, whatever it starts with.
    typed = "<system-reminder>is this tag handled?</system-reminder>"
    doc = export(user("u", 0, text(typed)), assistant("a", 1, text("yes")))
    first = loads(json.dumps(doc)).messages[0]
    assert first.content == typed and is_person_written(first)
