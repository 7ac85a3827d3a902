"""compaction.formats on small hand-made files: detection, each reader's rules, bad files, dump."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from compaction.formats import FormatError, detect_format, dump, dumps, load, loads
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import is_note, parse, provenance
from compaction.validate import validate

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"


def fixture(name: str) -> Path:
    return FIXTURES / name


# --- bad files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "line", "says"),
    [
        ("empty.json", None, "empty file"),
        ("blank.jsonl", None, "empty file"),
        ("binary.traj", None, "binary file"),
        ("not_json.json", None, "not JSON"),
        ("truncated.json", None, "not JSON"),
        ("unknown_shape.json", None, "unknown shape"),
        ("unknown_records.jsonl", 1, "unknown record shape"),
        ("orphan_result.openai.json", None, "does not follow an assistant message"),
        ("orphan_result.anthropic.json", None, "message 2"),
        ("orphan_result.jsonl", 3, "call_9"),
    ],
)
def test_bad_files_name_the_file_the_line_and_what_was_expected(name, line, says):
    path = fixture(name)
    with pytest.raises(FormatError) as err:
        load(path)
    assert err.value.path == str(path)
    assert err.value.line == line
    assert says in str(err.value)
    assert str(path) in str(err.value)
    if name != "orphan_result.openai.json":
        assert "expected" in str(err.value)


@pytest.mark.parametrize("name", ["unknown_shape.json", "unknown_records.jsonl"])
def test_a_file_of_no_known_format_names_every_format_in_one_readable_line(name):
    # The error names each format tried and where their shapes are described; it stays
    # short enough to read however many readers there are.
    from compaction.formats.registry import readers

    with pytest.raises(FormatError) as err:
        load(fixture(name))
    said = str(err.value)
    assert "\n" not in said
    assert all(r.name in said for r in readers())
    assert "compaction formats --json" in said and "--format NAME" in said
    assert len(said) < 200 + 20 * len(readers())


def test_a_log_with_a_truncated_last_line_is_read_and_the_line_reported():
    # A Claude Code session killed mid-write: the whole file is not lost to its last line.
    loaded = load(fixture("truncated.jsonl"))
    assert loaded.format == "claude-code"
    assert [m.role for m in loaded.messages] == ["user"]
    skipped = [r for r in loaded.repairs if r.kind == "skipped_line"]
    assert [r.line for r in skipped] == [2]
    assert "truncated" in str(skipped[0])


def test_a_request_with_a_truncated_line_is_still_refused(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "cont')
    with pytest.raises(FormatError) as err:
        load(path)
    assert err.value.line == 2
    assert "truncated" in str(err.value)


def test_a_missing_file_and_a_directory_are_format_errors(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        load(tmp_path / "nope.json")
    with pytest.raises(FormatError, match="directory"):
        load(tmp_path)


def test_binary_without_nul_bytes_is_caught_too(tmp_path):
    path = tmp_path / "photo.jsonl"
    path.write_bytes(b"\xff\xd8\xff\xe0 JFIF" * 10)
    with pytest.raises(FormatError, match="non-UTF-8"):
        load(path)


def test_a_deep_surprise_is_a_format_error_not_a_traceback(tmp_path):
    path = tmp_path / "odd.traj"
    path.write_text(json.dumps({"history": [{"role": "assistant", "content": 5}]}))
    with pytest.raises(FormatError, match=r"history\[0\]\.content"):
        load(path)


# --- OpenAI and Anthropic files --------------------------------------------------------------


def test_openai_request_object_round_trips_with_its_other_fields(tmp_path):
    loaded = load(fixture("openai_request.json"))
    assert (loaded.format, loaded.container, loaded.output_format) == ("openai", "object", "openai")
    assert loaded.extra["model"] == "gpt-4o"
    assert [m.role for m in loaded.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    out = tmp_path / "out.json"
    dump(loaded.messages, "openai", out, like=loaded)
    assert json.loads(out.read_text()) == json.loads(fixture("openai_request.json").read_text())


def test_openai_jsonl_stays_jsonl():
    loaded = load(fixture("chat.jsonl"))
    assert (loaded.format, loaded.container) == ("openai", "jsonl")
    assert dumps(loaded.messages, "openai", like=loaded) == fixture("chat.jsonl").read_text()


def test_anthropic_request_round_trips():
    loaded = load(fixture("anthropic_request.json"))
    assert loaded.format == "anthropic"
    assert [m.role for m in loaded.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    written = json.loads(dumps(loaded.messages, "anthropic", like=loaded))
    assert written == json.loads(fixture("anthropic_request.json").read_text())


def test_loads_reads_text_and_dump_writes_a_stream():
    loaded = loads('[{"role": "user", "content": "hi"}]', name="<stdin>")
    assert loaded.path == "<stdin>"
    stream = io.StringIO()
    dump(loaded.messages, "anthropic", stream)
    assert json.loads(stream.getvalue()) == {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ValueError, match="cannot write format"):
        dumps(loaded.messages, "gemini")


def test_dump_to_a_path_replaces_the_file_whole(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("old")
    dump(loads('[{"role": "user", "content": "hi"}]').messages, "openai", out)
    assert json.loads(out.read_text()) == [{"role": "user", "content": "hi"}]
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temp file left behind


# --- mini-swe-agent ---------------------------------------------------------------------------


def test_mini_swe_agent_single_block_becomes_a_bash_call():
    loaded = load(fixture("tiny.traj.json"))
    assert loaded.format == "mini-swe-agent"
    assert loaded.output_format == "openai"
    m = loaded.messages
    assert [x.role for x in m] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    call = m[2].tool_calls[0]
    assert (call.name, json.loads(call.arguments)) == ("bash", {"command": "ls -la"})
    assert m[2].content == "THOUGHT: look"  # the block moved into the call
    assert m[2].id == "gen-1"
    assert m[3].tool_call_id == call.id and m[3].content.startswith("<returncode>0")
    # two blocks and no block: plain text, and the format-error replies stay user messages
    assert not m[4].tool_calls and "```bash\npwd" in m[4].content
    assert not m[6].tool_calls
    # the last call was never answered: an explicit result, reported
    assert m[9].content == NO_RESULT
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("no_result", m[8].tool_calls[0].id)]
    validate(m)


# --- SWE-agent --------------------------------------------------------------------------------


def test_swe_agent_text_actions():
    loaded = load(fixture("text_actions.traj"))
    assert loaded.format == "swe-agent"
    m = loaded.messages
    assert [x.role for x in m] == [
        "system",
        "user",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert m[1].content.startswith("--- DEMONSTRATION")  # the demo stays a user message
    assert m[3].content == "Open it."
    assert json.loads(m[3].tool_calls[0].arguments) == {"command": "open main.py\n"}
    assert m[4].content == "[File: main.py]"
    assert m[6].content == NO_RESULT and m[6].tool_call_id == m[5].tool_calls[0].id
    assert len(loaded.repairs) == 1
    assert parse(m).anchor is not None and m[parse(m).groups[parse(m).anchor].start] is m[2]


def test_swe_agent_function_calling_one_result_per_id():
    loaded = load(fixture("function_calling.traj"))
    m = loaded.messages
    assert [x.role for x in m] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]
    assert [(x.tool_call_id, x.content, x.name) for x in m[3:5]] == [
        ("call_1", "a.py\n/repo", "bash"),
        ("call_2", "a.py\n/repo", "bash"),
    ]
    assert m[6].content == NO_RESULT and m[6].name == "submit"
    validate(m)


# --- Claude Code --------------------------------------------------------------------------------


def test_claude_code_merges_lines_places_results_and_keeps_the_summary():
    loaded = load(fixture("session.jsonl"))
    assert (loaded.format, loaded.output_format) == ("claude-code", "anthropic")
    m = loaded.messages
    assert [(x.role, x.id) for x in m] == [
        ("user", "u1"),
        ("assistant", "msg_1"),  # four lines, one message
        ("tool", "r1"),
        ("tool", "r2"),
        ("assistant", "msg_2"),
        ("user", "u2"),
        ("user", "u3"),
        ("assistant", "msg_3"),
        ("tool", None),  # the session stopped before the lint ran
    ]
    assert [c.id for c in m[1].tool_calls] == ["toolu_1", "toolu_2"]
    assert m[1].meta["anthropic"]["blocks"][0]["type"] == "thinking"  # blank text dropped
    assert m[3].content == "print(1)" and m[3].name == "Read"
    record = provenance(m[5])
    assert record["strategy"] == "claude-code" and record["kind"] == "summary"
    assert record["trigger"] == "auto" and record["preTokens"] == 1000
    assert record["replaces"] == ("u1", "msg_1", "r1", "r2", "msg_2")
    assert is_note(m[5])
    t = parse(m)
    assert m[t.groups[t.anchor].start].id == "u3"  # the summary is never the task anchor
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("no_result", "toolu_3")]
    assert loaded.skipped == {
        "file-history-snapshot": 1,
        "progress": 1,
        "system": 1,
        "blank text block": 1,
    }
    written = json.loads(dumps(m, "anthropic"))
    assert "system" not in written
    messages = written["messages"]
    assert messages[1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Bash",
        "input": {"command": "pytest"},
    }


def test_claude_code_orphan_result_is_kept_as_a_user_message_and_reported():
    loaded = load(fixture("orphan.jsonl"))
    m = loaded.messages
    assert [x.role for x in m] == ["user", "user", "assistant"]
    assert "toolu_gone" in m[1].content and "old output" in m[1].content
    assert m[1].meta["repair"] == "orphan_result"
    assert [(r.kind, r.call_id, r.index) for r in loaded.repairs] == [
        ("orphan_result", "toolu_gone", 1)
    ]
    assert "toolu_gone" in str(loaded.repairs[0])


def test_claude_code_subagent_file_reads_on_its_own_and_sidechains_are_split(tmp_path):
    lines = fixture("session.jsonl").read_text().splitlines()
    side = [json.loads(x) | {"isSidechain": True} for x in lines]
    sub = tmp_path / "agent-a1.jsonl"
    sub.write_text("".join(json.dumps(r) + "\n" for r in side))
    assert len(load(sub).messages) == len(load(fixture("session.jsonl")).messages)
    # a main log that also holds sidechain records keeps its main chain only
    mixed = tmp_path / "main.jsonl"
    extra = json.loads(lines[1]) | {"uuid": "side-1", "isSidechain": True}
    mixed.write_text("\n".join([*lines, json.dumps(extra)]) + "\n")
    loaded = load(mixed)
    assert "side-1" not in {x.id for x in loaded.messages}
    assert loaded.skipped["sidechain"] == 1


def test_claude_code_harness_text_is_never_the_task_anchor(tmp_path):
    # Reminders (isMeta), interruption markers and task notifications are user-role lines
    # Claude Code writes itself; the request the user typed stays the task anchor.
    from compaction.memory.transcript import is_synthetic, parse

    def line(uuid: str, text: str, **extra: object) -> str:
        record = {
            "type": "user",
            "uuid": uuid,
            "sessionId": "s",
            "message": {"role": "user", "content": text},
            **extra,
        }
        return json.dumps(record)

    path = tmp_path / "session.jsonl"
    path.write_text(
        "\n".join(
            [
                line("u1", "fix the failing test"),
                line("u2", "<system-reminder>be brief</system-reminder>", isMeta=True),
                line("u3", "[Request interrupted by user for tool use]"),
                line("u4", "<task-notification>\n<task-id>7</task-id>"),
            ]
        )
        + "\n"
    )
    messages = load(path).messages
    assert [is_synthetic(m) for m in messages] == [False, True, True, True]
    t = parse(messages)
    assert messages[t.groups[t.anchor].start].content == "fix the failing test"


def test_detection_is_by_content_not_name(tmp_path):
    odd = tmp_path / "session.json"
    shutil.copy(fixture("session.jsonl"), odd)
    assert detect_format(odd) == "claude-code"
    renamed = tmp_path / "x.jsonl"
    shutil.copy(fixture("tiny.traj.json"), renamed)
    assert detect_format(renamed) == "mini-swe-agent"


def test_jsonl_lines_end_at_newline_only(tmp_path):
    # JSON allows U+2028, U+2029 and U+0085 raw inside strings (json.dumps with
    # ensure_ascii=False writes them raw, as dumps() does); they do not end a JSONL line.
    raw = [
        {"role": "user", "content": "a\u2028b\u2029c"},
        {"role": "assistant", "content": "ok\x85\x1cdone"},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in raw), "utf-8")
    loaded = load(path)
    assert [m.content for m in loaded.messages] == [raw[0]["content"], raw[1]["content"]]
    assert dumps(loaded.messages, "openai", like=loaded) == path.read_text("utf-8")


def test_bom_crlf_and_blank_lines_are_read(tmp_path):
    raw = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(
        b"\xef\xbb\xbf" + json.dumps(raw[0]).encode() + b"\r\n\r\n" + json.dumps(raw[1]).encode()
    )
    assert [m.content for m in load(crlf).messages] == ["q", "a"]
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(raw).encode() + b"\r\n")
    assert [m.content for m in load(bom).messages] == ["q", "a"]


def test_a_one_line_jsonl_file_stays_jsonl(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "q"}) + "\n", "utf-8")
    loaded = load(path)
    assert dumps(loaded.messages, "openai", like=loaded) == path.read_text("utf-8")
