"""The Goose reader on sessions built here in the shape Goose's ``Message`` serialises (the
JSONL session file and the ``goose session export`` JSON), through ``load`` and the CLI, and
under hostile input."""

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
from compaction.validate import problems
from tests.format_cli import ODD_VALUES
from tests.test_cli import call, run_all

T0 = 1_750_000_000  # seconds
BOTH = {"userVisible": True, "agentVisible": True}
AGENT_ONLY = {"userVisible": False, "agentVisible": True}
USER_ONLY = {"userVisible": True, "agentVisible": False}
PERSON = "make greet() take a name"


def msg(role: str, at: int, *content: dict[str, Any], meta: dict = BOTH) -> dict[str, Any]:
    return {
        "id": None,
        "role": role,
        "created": T0 + at,
        "content": list(content),
        "metadata": meta,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def request(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    value = {"name": name, "arguments": arguments}
    return {"type": "toolRequest", "id": call_id, "toolCall": {"status": "success", "value": value}}


def response(call_id: str, *content: dict[str, Any], error: str | None = None) -> dict[str, Any]:
    if error is not None:
        result: dict[str, Any] = {"status": "error", "error": error}
    else:
        result = {"status": "success", "value": {"content": list(content), "isError": False}}
    return {"type": "toolResponse", "id": call_id, "toolResult": result}


def for_(audience: str, value: str) -> dict[str, Any]:
    return {"type": "text", "text": value, "annotations": {"audience": [audience]}}


METADATA = {
    "working_dir": "/w",
    "description": "greet",
    "schedule_id": None,
    "message_count": 10,
    "total_tokens": 900,
    "input_tokens": 800,
    "output_tokens": 100,
    "accumulated_total_tokens": 2500,
    "accumulated_input_tokens": 2200,
    "accumulated_output_tokens": 300,
}


def messages() -> list[dict[str, Any]]:
    """A run: the request, a call whose output has a copy for the screen, a failed call, a
    call cut off by a compaction, Goose's summary and note, a UI notice, the next request."""
    return [
        msg("user", 0, text(PERSON)),
        msg(
            "assistant",
            1,
            text("Looking."),
            request("call_1", "developer__shell", command="cat a.py"),
        ),
        msg(
            "user",
            2,
            response("call_1", for_("assistant", "def greet(): pass"), for_("user", "SCREEN COPY")),
        ),
        msg(
            "assistant",
            3,
            {"type": "thinking", "thinking": "write it", "signature": "sig"},
            request("call_2", "developer__text_editor", command="write"),
        ),
        msg("user", 4, response("call_2", error="-32603: denied")),
        msg(
            "assistant", 5, request("call_3", "developer__shell", command="pytest"), meta=USER_ONLY
        ),
        msg("user", 6, text("## Summary\nthe user wants greet(name)"), meta=AGENT_ONLY),
        msg(
            "assistant",
            6,
            text("Your context was compacted. The previous message contains a summary."),
            meta=AGENT_ONLY,
        ),
        msg(
            "user",
            7,
            {"type": "systemNotification", "notificationType": "inlineMessage", "msg": "Compacted"},
            meta=USER_ONLY,
        ),
        msg("user", 8, text("now add a test")),
    ]


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    out = tmp_path / "20250615_100000.jsonl"
    out.write_text("\n".join(json.dumps(r) for r in [METADATA, *messages()]) + "\n")
    return out


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    session = {
        "id": "20250615_1",
        "working_dir": "/w",
        "name": "greet",
        "user_set_name": False,
        "session_type": "user",
        "created_at": "2025-06-15T10:00:00Z",
        "updated_at": "2025-06-15T10:10:00Z",
        "extension_data": {},
        "total_tokens": 900,
        "input_tokens": 800,
        "output_tokens": 100,
        "accumulated_total_tokens": None,
        "accumulated_input_tokens": None,
        "accumulated_output_tokens": None,
        "schedule_id": None,
        "recipe": None,
        "user_recipe_values": None,
        "conversation": messages(),
        "message_count": 10,
    }
    out = tmp_path / "session.json"
    out.write_text(json.dumps(session, indent=2))
    return out


EXPECTED = [
    ("user", PERSON, [], None),
    ("assistant", "Looking.", ["call_1"], None),
    ("tool", "def greet(): pass", [], "call_1"),
    ("assistant", "", ["call_2"], None),
    ("tool", "Error: -32603: denied", [], "call_2"),
    ("assistant", "", ["call_3"], None),
    ("tool", NO_RESULT, [], "call_3"),
    ("user", "## Summary\nthe user wants greet(name)", [], None),
    ("assistant", "Your context was compacted. The previous message contains a summary.", [], None),
    ("user", "now add a test", [], None),
]


def _check(path: Path, container: str) -> None:
    header = {"session metadata": 1} if container == "jsonl" else {}
    loaded = load(path)
    assert loaded.format == "goose" == detect_format(path)
    assert loaded.container == container
    assert problems(loaded.messages) == []
    shape = [
        (m.role, m.content, [c.id for c in m.tool_calls], m.tool_call_id) for m in loaded.messages
    ]
    assert shape == EXPECTED
    call = loaded.messages[1].tool_calls[0]
    assert (call.name, json.loads(call.arguments)) == ("developer__shell", {"command": "cat a.py"})
    # The screen's copy of a tool's output never reached the model.
    assert all("SCREEN COPY" not in m.content for m in loaded.messages)
    assert [m.content for m in loaded.messages if is_person_written(m)] == [
        PERSON,
        "now add a test",
    ]
    summary, note = loaded.messages[7], loaded.messages[8]
    assert summary.meta["boundary"] == {"kind": "compaction", "agent": "goose"}
    assert summary.meta["compaction"]["kind"] == "summary"
    assert len(summary.meta["compaction"]["replaces"]) == 6
    assert note.meta[SYNTHETIC_KEY] is True
    assert [r.kind for r in loaded.repairs] == ["no_result"]
    assert loaded.skipped == {"systemNotification content": 1, **header}
    assert loaded.messages[3].meta["goose"]["thinking"][0]["thinking"] == "write it"
    assert loaded.messages[1].meta["recorded"]["timestamp"].startswith("2025-06-15T")
    assert loaded.extra["session"]["total_tokens"] == 900


def test_jsonl_session_file(jsonl: Path) -> None:
    _check(jsonl, "jsonl")
    assert load(jsonl).extra["session"]["accumulated_input_tokens"] == 2200


def test_exported_session_json(exported: Path) -> None:
    _check(exported, "object")
    assert load(exported).extra["session"]["id"] == "20250615_1"


def test_agent_only_user_text_is_never_the_person(tmp_path: Path) -> None:
    lines = [
        METADATA,
        msg("user", 0, text("<info-msg>It is 10:00</info-msg>"), meta=AGENT_ONLY),
        msg("user", 1, text(PERSON)),
        msg("assistant", 2, text("ok")),
    ]
    loaded = loads("\n".join(json.dumps(r) for r in lines), name="s.jsonl")
    assert [is_person_written(m) for m in loaded.messages] == [False, True, False]
    assert "compaction" not in loaded.messages[0].meta  # no continuation note follows it


def test_older_result_shape_and_invalid_call(tmp_path: Path) -> None:
    bad_call = {"type": "toolRequest", "id": "c9", "toolCall": {"status": "error", "error": "bad"}}
    legacy = {
        "type": "toolResponse",
        "id": "c1",
        "toolResult": {"status": "success", "value": [text("old shape")]},
    }
    lines = [
        METADATA,
        msg("user", 0, text("go")),
        msg("assistant", 1, request("c1", "shell"), bad_call),
        msg("user", 2, legacy, response("c9", error="could not parse")),
    ]
    loaded = loads("\n".join(json.dumps(r) for r in lines), name="s.jsonl")
    assert [m.content for m in loaded.messages if m.role == "tool"] == [
        "old shape",
        "Error: could not parse",
    ]
    assert loaded.messages[1].tool_calls[1].name == "invalid_tool_call"


def test_cli_counts_compacts_and_takes_format(jsonl: Path, exported: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    count, compact, forced, replay = run_all(
        ["count", str(jsonl), "--json"],
        ["compact", str(exported), "--target", "60", "-o", str(out)],
        ["count", str(exported), "--format", "goose"],
        ["replay", str(jsonl), "--window", "300", "--price", "claude-sonnet-4-5"],
    )
    for result in (count, compact, forced, replay):
        assert result.returncode == 0, result.stderr
    assert json.loads(count.stdout)["messages"] == len(EXPECTED)
    written = json.loads(out.read_text())
    assert written and all("role" in m for m in written)
    assert problems(load(out, format="openai").messages) == []  # a valid request
    assert "goose" in forced.stdout
    assert "time from the log for" in replay.stdout


def test_truncated_and_garbage_lines_are_reported_repairs(jsonl: Path) -> None:
    lines = jsonl.read_text().splitlines()
    lines.insert(3, "this is not json")
    jsonl.write_text("\n".join(lines) + "\n" + lines[-1][:30])
    loaded = load(jsonl)
    skipped = [r for r in loaded.repairs if r.kind == "skipped_line"]
    assert [r.line for r in skipped] == [4, len(lines) + 1]
    assert problems(loaded.messages) == []


@pytest.mark.parametrize(
    "record",
    [
        {"role": "user", "created": T0, "content": "not a list", "metadata": BOTH},
        {"role": "user", "created": T0, "content": [{"type": 5}], "metadata": BOTH},
        {"role": "robot", "created": T0, "content": [], "metadata": BOTH},
    ],
    ids=["content-not-a-list", "type-not-text", "unknown-role"],
)
def test_wrong_field_types_are_clear_errors(
    record: dict[str, Any], jsonl: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl.write_text(jsonl.read_text() + json.dumps(record) + "\n")
    result = call(capsys, "count", str(jsonl))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"line {len(messages()) + 2}" in result.stderr


def test_a_too_deep_line_is_a_reported_repair(
    jsonl: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = msg("user", 9, {"type": "text", "text": "x", "extra": json.loads("[" * 300 + "]" * 300)})
    jsonl.write_text(jsonl.read_text() + json.dumps(deep) + "\n")
    result = call(capsys, "count", str(jsonl), "--format", "goose")
    assert result.returncode == 0, result.stderr
    line = len(messages()) + 2
    assert f"line {line}: an unreadable line was skipped (JSON nested deeper" in result.stderr
    assert "Traceback" not in result.stderr


def test_sniff_takes_no_plain_chat() -> None:
    chat = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert loads(json.dumps(chat)).format != "goose"
    lines = "\n".join(json.dumps(m) for m in chat)
    assert loads(lines, name="x.jsonl").format != "goose"
    # Anthropic content with a timestamp is still not Goose's ("thinking" is both's).
    thought = {"type": "thinking", "thinking": "hm", "signature": "s"}
    anthropic = [
        {**chat[0], "created": T0},
        {"role": "assistant", "created": T0, "content": [thought, text("hi")]},
    ]
    assert loads("\n".join(json.dumps(m) for m in anthropic), name="x.jsonl").format != "goose"
    with pytest.raises(FormatError):
        loads(
            json.dumps({"id": "x", "working_dir": "/w", "message_count": 0, "conversation": None})
        )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_field_set_to_an_odd_value_reads_or_fails_clearly(data: st.DataObject) -> None:
    records = messages()
    record = data.draw(st.sampled_from(records))
    if data.draw(st.booleans()) and record["content"]:
        target = data.draw(st.sampled_from(record["content"]))
    else:
        target = record
    key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(ODD_VALUES)
    body = "\n".join(json.dumps(r) for r in [METADATA, *records])
    try:
        loaded = loads(body, name="s.jsonl", format="goose")
    except FormatError as exc:
        assert str(exc)
        return
    assert problems(loaded.messages) == []
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)


def test_the_docs_example_reads_as_described() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text()
    section = page[page.index("### Goose (`goose`)") :]
    example = section[section.index("```json\n") + 8 : section.index("```\n", 8)]
    loaded = loads(example, name="session.jsonl")
    assert [(m.role, m.content, m.tool_call_id) for m in loaded.messages] == [
        ("user", PERSON, None),
        ("assistant", "", None),
        ("tool", "def greet(): pass", "c1"),
    ]
