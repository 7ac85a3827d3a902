"""The Qwen Code reader against session files written here the way Qwen Code's
``ChatRecordingService`` writes them (one record per line, each naming its parent), read through
``compaction.formats.load`` and through the CLI, and under hostile input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.formats import FormatError, detect_format, load, loads
from compaction.formats.logs import BOUNDARY_KEY, RECORDED_KEY
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import is_note, is_person_written, is_synthetic, parse
from compaction.validate import problems, validate
from tests.format_cli import ODD_VALUES, read_by_the_commands
from tests.test_cli import one_line_error, run_all


class Recorder:
    """Appends records as Qwen Code does: a fresh ``uuid`` each, ``parentUuid`` the last one
    appended (a rewind re-roots it), the shared fields on every record."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.last: str | None = None
        self.n = 0

    def add(self, kind: str, message: dict[str, Any] | None = None, **fields: Any) -> str:
        self.n += 1
        uuid = fields.pop("uuid", f"r{self.n}")
        row: dict[str, Any] = {
            "uuid": uuid,
            "parentUuid": fields.pop("parentUuid", self.last),
            "sessionId": "5b1f3c4e-0000-4000-8000-000000000001",
            "timestamp": f"2026-03-02T10:00:{self.n:02d}.000Z",
            "type": kind,
            "cwd": "/home/dev/app",
            "version": "0.6.1",
            "gitBranch": "main",
        }
        if message is not None:
            row["message"] = message
        row.update(fields)
        self.rows.append(row)
        self.last = uuid
        return uuid

    def user(self, *texts: str, **fields: Any) -> str:
        parts = [{"text": t} for t in texts]
        return self.add("user", {"role": "user", "parts": parts}, **fields)

    def model(self, *parts: dict[str, Any], **fields: Any) -> str:
        fields.setdefault("model", "qwen3-coder-plus")
        return self.add("assistant", {"role": "model", "parts": list(parts)}, **fields)

    def result(self, call_id: str, name: str, response: dict[str, Any], **fields: Any) -> str:
        part = {"functionResponse": {"id": call_id, "name": name, "response": response}}
        fields.setdefault("toolCallResult", {"callId": call_id, "status": "success"})
        return self.add("tool_result", {"role": "user", "parts": [part]}, **fields)

    def system(self, subtype: str, payload: dict[str, Any], **fields: Any) -> str:
        return self.add("system", subtype=subtype, systemPayload=payload, **fields)

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.rows)

    def write(self, tmp_path: Path, name: str = "5b1f3c4e.jsonl") -> Path:
        path = tmp_path / name
        path.write_text(self.text())
        return path


def call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"id": cid, "name": name, "args": args}}


def session() -> Recorder:
    """A short real-looking session: the person's request with a plan-mode reminder beside it,
    a reply with a thought and a call, its result, a second call the session never answered."""
    r = Recorder()
    r.system("session_source", {"sourceType": "cli"})
    r.user(
        "<system-reminder>Plan mode is active. Do not edit files.</system-reminder>",
        "The date parser drops the timezone; find out why.",
        systemPayload={"displayText": "The date parser drops the timezone; find out why."},
    )
    r.model(
        {"text": "The user wants the cause, not a fix.", "thought": True},
        {"text": "Let me run the tests first."},
        call("call_1", "run_shell_command", command="pytest tests/test_dates.py"),
        usageMetadata={
            "promptTokenCount": 14200,
            "cachedContentTokenCount": 12000,
            "candidatesTokenCount": 40,
            "thoughtsTokenCount": 12,
            "totalTokenCount": 14252,
        },
    )
    r.result("call_1", "run_shell_command", {"output": "E   AssertionError: tzinfo is None"})
    r.model(call("call_2", "read_file", absolute_path="/home/dev/app/dates.py"))
    return r


def test_a_session_reads_as_its_turns(tmp_path: Path) -> None:
    loaded = load(session().write(tmp_path))
    assert loaded.format == "qwen-code"
    assert [m.role for m in loaded.messages] == [
        "user", "user", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip
    reminder, asked, reply, result, second, missing = loaded.messages
    assert reminder.content.startswith("<system-reminder>") and is_synthetic(reminder)
    assert asked.content == "The date parser drops the timezone; find out why."
    assert is_person_written(asked)
    assert reply.content == "Let me run the tests first."
    assert [(c.id, c.name) for c in reply.tool_calls] == [("call_1", "run_shell_command")]
    assert json.loads(reply.tool_calls[0].arguments) == {"command": "pytest tests/test_dates.py"}
    assert reply.meta["qwen_code"]["thoughts"] == ["The user wants the cause, not a fix."]
    assert (result.tool_call_id, result.content) == ("call_1", "E   AssertionError: tzinfo is None")
    assert second.tool_calls[0].id == missing.tool_call_id == "call_2"
    assert missing.content == NO_RESULT
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("no_result", "call_2")]
    assert loaded.skipped == {"system/session_source": 1}
    validate(loaded.messages)


def test_the_task_is_the_persons_request_not_the_harness_text(tmp_path: Path) -> None:
    r = session()
    r.add(
        "user",
        {"role": "user", "parts": [{"text": "<task-notification>agent done</task-notification>"}]},
        subtype="notification",
        provenance="system",
    )
    r.user("Every 10m check the build", subtype="cron", provenance="system")
    loaded = load(r.write(tmp_path))
    transcript = parse(loaded.messages)
    assert transcript.task is not None and transcript.anchor is not None
    task = transcript.messages[transcript.groups[transcript.task].start]
    newest = transcript.messages[transcript.groups[transcript.anchor].start]
    assert task.content == newest.content == "The date parser drops the timezone; find out why."
    people = [m.content for m in loaded.messages if is_person_written(m)]
    assert people == ["The date parser drops the timezone; find out why."]


def test_a_reminder_inside_the_prompts_own_part_is_split_off_too(tmp_path: Path) -> None:
    r = Recorder()
    ide = "<system-reminder>The user has src/dates.py open.</system-reminder>"
    hook = "<qwen:user-prompt-submit-context>\nbranch: main\n</qwen:user-prompt-submit-context>"
    r.user(f"Use zoneinfo, not pytz.\n\n{ide}", hook)
    r.model({"text": "Switching to zoneinfo."})
    loaded = load(r.write(tmp_path))
    harness, said, _ = loaded.messages
    assert said.content == "Use zoneinfo, not pytz." and is_person_written(said)
    assert harness.content == f"{ide}\n{hook}" and is_synthetic(harness)
    assert harness.id != said.id


def test_recorded_usage_model_and_time(tmp_path: Path) -> None:
    reply = load(session().write(tmp_path)).messages[2]
    got = reply.meta[RECORDED_KEY]
    assert got["model"] == "qwen3-coder-plus"
    assert got["timestamp"] == "2026-03-02T10:00:03.000Z"
    # promptTokenCount holds the cached tokens; the output is the total less the prompt.
    assert got["usage"] == {"cache_read": 12000, "cache_write": 0, "uncached": 2200, "output": 52}


def test_fragments_of_one_message_are_joined_and_rewound_turns_left_out(tmp_path: Path) -> None:
    r = Recorder()
    first = r.user("List the files.")
    r.model({"text": "Listing."}, uuid="m1")
    r.model(call("c1", "ls", path="."), uuid="m1", parentUuid=first)  # a second fragment
    r.result("c1", "ls", {"output": "a.py b.py"})
    r.user("Actually, delete b.py.")
    r.model({"text": "Deleting."})
    # /rewind to before the second request: the next record hangs off the first result.
    r.system("rewind", {"truncatedCount": 2}, parentUuid=r.rows[3]["uuid"])
    r.user("Now count the lines of a.py.")
    loaded = load(r.write(tmp_path))
    texts = [m.content for m in loaded.messages]
    assert texts == ["List the files.", "Listing.", "a.py b.py", "Now count the lines of a.py."]
    assert [c.id for c in loaded.messages[1].tool_calls] == ["c1"]
    assert loaded.skipped["record off the active chain (rewound)"] == 2


def test_qwen_compaction_is_kept_as_a_native_compaction(tmp_path: Path) -> None:
    r = Recorder()
    r.user("Port the CLI to click.")
    r.model({"text": "Done with the parser."})
    kept_user = {"role": "user", "parts": [{"text": "Now the tests."}]}
    r.add("user", kept_user)
    summary = "<state_snapshot>The CLI moved to click; tests remain.</state_snapshot>"
    r.system(
        "chat_compression",
        {
            "info": {"originalTokenCount": 90000, "newTokenCount": 3000},
            "compressedHistory": [
                {"role": "user", "parts": [{"text": summary}]},
                {
                    "role": "model",
                    "parts": [{"text": "Got it. Thanks for the additional context!"}],
                },
                kept_user,
            ],
        },
    )
    r.model({"text": "Updating tests."})
    loaded = load(r.write(tmp_path))
    texts = [m.content for m in loaded.messages]
    compacted = loaded.messages[3]
    assert texts[:3] == ["Port the CLI to click.", "Done with the parser.", "Now the tests."]
    assert texts[4:] == ["Updating tests."]  # the kept copy of "Now the tests." not read twice
    assert compacted.content.startswith(summary)
    assert compacted.meta[BOUNDARY_KEY]["agent"] == "qwen-code"
    assert compacted.meta[BOUNDARY_KEY]["originalTokenCount"] == 90000
    assert compacted.meta["qwen_code"]["kept"] == 1
    assert is_note(compacted) and not is_person_written(compacted)


def test_mid_turn_words_follow_the_results_and_errors_are_results(tmp_path: Path) -> None:
    r = Recorder()
    r.user("Run both checks.")
    r.model(call("a", "run_shell_command", command="ruff ."), call("b", "run_shell_command"))
    r.result("a", "run_shell_command", {"output": "ok"})
    r.user("also run mypy", subtype="mid_turn_user_message")
    r.result("b", "run_shell_command", {"error": "command is required"})
    loaded = load(r.write(tmp_path))
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool", "tool", "user"]
    assert loaded.messages[3].content == "Error: command is required"
    assert loaded.messages[4].content == "also run mypy" and is_person_written(loaded.messages[4])
    assert loaded.repairs == ()


def test_a_slash_command_that_never_reached_the_model_is_dropped(tmp_path: Path) -> None:
    r = Recorder()
    r.user("Add a --verbose flag.")
    r.model({"text": "Added."})
    r.user("/stats")
    r.system("slash_command", {"phase": "result", "rawCommand": "/stats", "sentToModel": False})
    loaded = load(r.write(tmp_path))
    assert [m.content for m in loaded.messages] == ["Add a --verbose flag.", "Added."]
    assert loaded.skipped["slash command text (never sent to the model)"] == 1


def test_detection_takes_qwen_files_and_leaves_its_neighbours_alone(tmp_path: Path) -> None:
    path = session().write(tmp_path)
    assert detect_format(path) == "qwen-code"
    claude = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s",
        "cwd": "/w",
        "version": "2.0.1",
        "message": {"role": "user", "content": "hi"},
    }
    (tmp_path / "claude.jsonl").write_text(json.dumps(claude) + "\n")
    assert detect_format(tmp_path / "claude.jsonl") == "claude-code"
    gemini = [
        {"sessionId": "s", "projectHash": "ab"},
        {"id": "u1", "type": "user", "content": [{"text": "hi"}]},
    ]
    (tmp_path / "gemini.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gemini))
    assert detect_format(tmp_path / "gemini.jsonl") == "gemini-cli"


def test_the_cli_counts_compacts_and_takes_the_format_by_name(tmp_path: Path) -> None:
    r = session()
    for i in range(30):  # enough turns for a compaction to have something to drop
        r.user(f"Step {i}: check module m{i} for naive datetimes and say which lines.")
        r.model({"text": f"m{i} has none."}, call(f"s{i}", "grep_search", pattern="datetime("))
        r.result(f"s{i}", "grep_search", {"output": f"m{i}.py:{i}: datetime.now()\n" * 40})
    path = r.write(tmp_path, "session.log")  # a name that says nothing
    read_by_the_commands(path, "qwen-code", "continue")


# -- hostile input ------------------------------------------------------------------------


def test_a_truncated_last_line_and_a_line_that_is_not_json_are_skipped_and_reported(
    tmp_path: Path,
) -> None:
    text = session().text()
    lines = text.splitlines()
    lines.insert(2, "this is not json")
    cut = "\n".join(lines) + "\n" + json.dumps(session().rows[2])[:40]
    path = tmp_path / "cut.jsonl"
    path.write_text(cut)
    loaded = load(path)
    skipped = [r for r in loaded.repairs if r.kind == "skipped_line"]
    assert [r.line for r in skipped] == [3, len(lines) + 1]
    assert loaded.messages[1].content == "The date parser drops the timezone; find out why."
    (count,) = run_all(["count", str(path)])
    assert count.returncode == 0 and "repaired while reading" in count.stderr


def test_a_record_cut_in_the_middle_loses_only_itself(tmp_path: Path) -> None:
    """The next record names it as parent; the walk back bridges the gap, as Qwen Code does,
    rather than losing everything before it. A rewound branch is still never read."""
    r = session()
    r.user("Then check the README.")
    r.model({"text": "The README is fine."})
    r.system("rewind", {"truncatedCount": 1}, parentUuid=r.rows[-2]["uuid"])
    r.user("Check CHANGELOG.md instead.")
    lines = [json.dumps(row) for row in r.rows]
    lines[3] = lines[3][:50]  # the tool result, cut by a crash mid-write
    path = tmp_path / "gap.jsonl"
    path.write_text("\n".join(lines) + "\n")
    loaded = load(path)
    texts = [m.content for m in loaded.messages if m.role != "tool"]
    assert texts == [
        "<system-reminder>Plan mode is active. Do not edit files.</system-reminder>",
        "The date parser drops the timezone; find out why.",
        "Let me run the tests first.",
        "Then check the README.",
        "Check CHANGELOG.md instead.",
    ]
    # With the first call's result lost, the next reply only adds a call: one turn again.
    assert [c.id for c in loaded.messages[2].tool_calls] == ["call_1", "call_2"]
    assert loaded.skipped["parentUuid the file does not hold (bridged to the records before)"] == 1
    assert loaded.skipped["record off the active chain (rewound)"] == 1
    assert [r.line for r in loaded.repairs if r.kind == "skipped_line"] == [4]
    validate(loaded.messages)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("uuid", 7, "'uuid' is not a non-empty string"),
        ("parentUuid", ["r1"], "'parentUuid' is neither a string nor null"),
        ("type", "gemini", "is not user, assistant, tool_result or system"),
        ("message", {"role": "user", "parts": "hello"}, "'parts' list"),
    ],
)
def test_a_record_with_a_field_of_the_wrong_type_is_skipped_and_reported(
    tmp_path: Path, field: str, value: Any, reason: str
) -> None:
    r = session()
    bad = dict(r.rows[1], **{field: value})
    lines = [json.dumps(row) for row in r.rows]
    lines.insert(1, json.dumps(bad))
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    loaded = load(path)
    (skipped,) = [x for x in loaded.repairs if x.kind == "skipped_line"]
    assert skipped.line == 2 and reason in skipped.detail
    validate(loaded.messages)


def test_a_deeply_nested_line_is_skipped_and_a_file_of_nothing_readable_is_an_error(
    tmp_path: Path,
) -> None:
    r = session()
    deep_args = json.loads("[" * 600 + "]" * 600)
    r.rows[2]["message"]["parts"].append({"functionCall": {"id": "x", "args": deep_args}})
    deep = r.write(tmp_path, "deep.jsonl")
    only_system = Recorder()
    only_system.system("custom_title", {"customTitle": "x"})
    empty = only_system.write(tmp_path, "empty.jsonl")
    nested, nothing = run_all(["count", str(deep)], ["count", str(empty), "--format", "qwen-code"])
    assert nested.returncode == 0, nested.stderr
    assert "line 3: an unreadable line was skipped (JSON nested deeper" in nested.stderr
    assert "Traceback" not in nested.stderr
    assert "qwen-code" in one_line_error(nothing)
    with pytest.raises(FormatError, match="no messages"):
        load(empty, format="qwen-code")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_field_set_to_an_odd_value_reads_or_fails_cleanly(data: st.DataObject) -> None:
    rows = json.loads(json.dumps(session().rows))
    row = data.draw(st.sampled_from(rows))
    target = row
    if "message" in row and data.draw(st.booleans()):
        parts = row["message"]["parts"]
        target = parts[data.draw(st.integers(0, len(parts) - 1))] if parts else row
    key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(ODD_VALUES)
    text = "".join(json.dumps(x) + "\n" for x in rows)
    try:
        loaded = loads(
            text, "mutated.jsonl", format=data.draw(st.sampled_from([None, "qwen-code"]))
        )
    except FormatError as exc:
        # The reader's own clear error, not the registry's word for a reader that crashed.
        assert "could not make sense of it" not in str(exc), exc
        return
    assert problems(loaded.messages) == []
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)
