"""The Gemini CLI stream-json reader against runs written here the way ``gemini -p ...
--output-format stream-json`` prints them (its ``StreamJsonFormatter``: one event per line),
read through ``compaction.formats.load`` and the CLI, and under hostile input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.formats import FormatError, detect_format, load, loads
from compaction.formats.logs import RECORDED_KEY
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import is_person_written, parse
from compaction.validate import problems, validate
from tests.format_cli import ODD_VALUES, read_by_the_commands
from tests.test_cli import one_line_error, run_all

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
MODEL = "gemini-2.5-pro"


class Stream:
    """Prints events as Gemini CLI's non-interactive mode does, a second apart."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def event(self, kind: str, **fields: Any) -> None:
        stamp = f"2026-11-02T09:{len(self.rows) // 60:02d}:{len(self.rows) % 60:02d}.000Z"
        self.rows.append({"type": kind, "timestamp": stamp, **fields})

    def init(self, session: str = "c0ffee00-1111-4222-8333-444455556666") -> None:
        self.event("init", session_id=session, model=MODEL)

    def user(self, text: str) -> None:
        self.event("message", role="user", content=text)

    def say(self, *pieces: str) -> None:
        for piece in pieces:
            self.event("message", role="assistant", content=piece, delta=True)

    def use(self, tool_id: str, name: str, **params: Any) -> None:
        self.event("tool_use", tool_name=name, tool_id=tool_id, parameters=params)

    def result(self, tool_id: str, output: str | None = None, error: str | None = None) -> None:
        fields: dict[str, Any] = {"status": "error" if error else "success"}
        if output is not None:
            fields["output"] = output
        if error is not None:
            fields["error"] = {"type": "TOOL_EXECUTION_ERROR", "message": error}
        self.event("tool_result", tool_id=tool_id, **fields)

    def end(self, status: str = "success", **more: Any) -> None:
        per_model = {"total_tokens": 9000, "input_tokens": 8800, "output_tokens": 200}
        per_model.update(cached=6000, input=2800)
        stats = {**per_model, "duration_ms": 5500, "tool_calls": 2, "models": {MODEL: per_model}}
        self.event("result", status=status, stats=stats, **more)

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.rows)

    def write(self, tmp_path: Path, name: str = "run.jsonl") -> Path:
        path = tmp_path / name
        path.write_text(self.text())
        return path


def run() -> Stream:
    """A short headless run: the prompt, a streamed reply with a call and its result, then a
    reply with two calls of which the run answered one (a display with no text) before it
    ended."""
    s = Stream()
    s.init()
    s.user("Why does tests/test_dates.py fail?")
    s.say("Let me run ", "the tests.")
    s.use("run_shell_command-1-a1", "run_shell_command", command="pytest -q tests/test_dates.py")
    s.result("run_shell_command-1-a1", output="F\n1 failed in 0.12s")
    s.say("The parser drops tzinfo.")
    s.use("read_file-2-b2", "read_file", absolute_path="/w/src/dates.py")
    s.use("glob-2-c3", "glob", pattern="src/**/*.py")
    s.result("read_file-2-b2", output="")
    s.end()
    return s


def test_a_run_reads_as_its_turns(tmp_path: Path) -> None:
    loaded = load(run().write(tmp_path))
    assert loaded.format == "gemini-cli-stream"
    assert [m.role for m in loaded.messages] == [
        "user", "assistant", "tool", "assistant", "tool", "tool",
    ]  # fmt: skip
    asked, first, output, second, read, missing = loaded.messages
    assert asked.content == "Why does tests/test_dates.py fail?" and is_person_written(asked)
    assert first.content == "Let me run the tests."  # the streamed pieces, put back together
    assert [(c.id, c.name) for c in first.tool_calls] == [
        ("run_shell_command-1-a1", "run_shell_command")
    ]
    assert json.loads(first.tool_calls[0].arguments) == {"command": "pytest -q tests/test_dates.py"}
    assert (output.tool_call_id, output.name, output.content) == (
        "run_shell_command-1-a1",
        "run_shell_command",
        "F\n1 failed in 0.12s",
    )
    assert second.content == "The parser drops tzinfo."
    assert [c.id for c in second.tool_calls] == ["read_file-2-b2", "glob-2-c3"]
    assert read.tool_call_id == "read_file-2-b2" and read.content == ""
    assert missing.tool_call_id == "glob-2-c3" and missing.content == NO_RESULT
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("no_result", "glob-2-c3")]
    assert loaded.skipped == {"init": 1, "result": 1}
    validate(loaded.messages)


def test_the_task_is_the_prompt(tmp_path: Path) -> None:
    transcript = parse(load(run().write(tmp_path)).messages)
    assert transcript.task is not None
    task = transcript.messages[transcript.groups[transcript.task].start]
    assert task.content == "Why does tests/test_dates.py fail?"


def test_model_time_and_the_runs_stats(tmp_path: Path) -> None:
    loaded = load(run().write(tmp_path))
    first = loaded.messages[1]
    # The time of its last piece (its call), the model the run was started with.
    assert first.meta[RECORDED_KEY] == {"timestamp": "2026-11-02T09:00:04.000Z", "model": MODEL}
    # The stream holds the run's totals only: no call is given them as its own usage.
    assert not any("usage" in m.meta.get(RECORDED_KEY, {}) for m in loaded.messages)
    assert loaded.extra["session_id"] == "c0ffee00-1111-4222-8333-444455556666"
    assert loaded.extra["model"] == MODEL and loaded.extra["status"] == "success"
    stats = loaded.extra["stats"]
    assert (stats["input_tokens"], stats["cached"], stats["input"]) == (8800, 6000, 2800)
    assert stats["models"][MODEL]["output_tokens"] == 200


def test_a_whole_reply_after_its_pieces_is_not_read_twice(tmp_path: Path) -> None:
    s = Stream()
    s.init()
    s.user("Summarise CHANGES.md")
    s.say("Three ", "fixes ", "and a feature.")
    s.event("message", role="assistant", content="Three fixes and a feature.")
    s.end()
    loaded = load(s.write(tmp_path))
    assert [m.content for m in loaded.messages] == [
        "Summarise CHANGES.md",
        "Three fixes and a feature.",
    ]
    assert loaded.skipped["assistant message repeating its streamed pieces"] == 1


def test_errors_results_notices_and_a_result_without_its_call(tmp_path: Path) -> None:
    s = Stream()
    s.init()
    s.user("Edit the config")
    s.use("replace-1-x", "replace", file_path="/w/app.toml")
    s.result("replace-1-x", output="No changes", error="0 occurrences found for old_string")
    s.result("write_file-9-z", output="Wrote 3 lines")  # its call is not in the stream
    s.event("error", severity="warning", message="Loop detected, stopping execution")
    s.end("error", error={"type": "FatalTurnLimitedError", "message": "Reached max turns"})
    loaded = load(s.write(tmp_path))
    result = loaded.messages[2]
    assert result.content == "Error: 0 occurrences found for old_string\nNo changes"
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("orphan_result", "write_file-9-z")]
    assert "Wrote 3 lines" in loaded.messages[3].content and loaded.messages[3].role == "user"
    assert not is_person_written(loaded.messages[3])  # tool text never speaks as the person
    assert loaded.extra["errors"][0]["message"] == "Loop detected, stopping execution"
    assert loaded.extra["status"] == "error"
    assert loaded.extra["error"]["message"] == "Reached max turns"


def test_detection_takes_streams_and_leaves_its_neighbours_alone(tmp_path: Path) -> None:
    assert detect_format(run().write(tmp_path, "gemini.out")) == "gemini-cli-stream"
    droid = [
        {"type": "message", "session_id": "s", "timestamp": "2025-12-26T00:00:00Z", "role": "user"},
        {"type": "tool_call", "session_id": "s", "toolCallId": "c1", "toolName": "Shell"},
    ]
    droid[0]["text"] = "Do thing"
    (tmp_path / "droid.jsonl").write_text("".join(json.dumps(r) + "\n" for r in droid))
    assert detect_format(tmp_path / "droid.jsonl") == "factory-droid"
    session = [
        {"sessionId": "s", "projectHash": "ab"},
        {"id": "u1", "type": "user", "content": [{"text": "hi"}]},
    ]
    (tmp_path / "gemini.jsonl").write_text("".join(json.dumps(g) + "\n" for g in session))
    assert detect_format(tmp_path / "gemini.jsonl") == "gemini-cli"
    shared = [
        p for p in SHARED.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")
    ]
    if not shared:
        pytest.skip("shared data not present")
    taken = {p.name: detect_format(p) for p in shared}
    gemini = [n for n in taken if "gemini" in n]
    assert gemini and all(taken[n] == "gemini-cli" for n in gemini)
    assert "gemini-cli-stream" not in taken.values()


def test_the_cli_counts_compacts_and_takes_the_format_by_name(tmp_path: Path) -> None:
    s = Stream()
    s.init()
    s.user("Find every naive datetime in src/ and say where.")
    for i in range(30):  # enough steps for a compaction to have something to drop
        s.say(f"Checking m{i}", " for naive datetimes.")
        s.use(f"grep-{i}", "search_file_content", pattern="datetime(", path=f"src/m{i}.py")
        s.result(f"grep-{i}", output=f"m{i}.py:{i}: datetime.now()\n" * 40)
    s.end()
    path = s.write(tmp_path, "ci-output.log")  # a name that says nothing
    _, kept = read_by_the_commands(path, "gemini-cli-stream", "gemini-cli")
    assert any(m.content == "Find every naive datetime in src/ and say where." for m in kept)


# -- hostile input ------------------------------------------------------------------------


def test_a_truncated_last_line_and_a_line_that_is_not_json_are_skipped_and_reported(
    tmp_path: Path,
) -> None:
    lines = run().text().splitlines()
    lines.insert(2, "Loaded cached credentials.")
    cut = "\n".join(lines) + "\n" + json.dumps(run().rows[3])[:30]
    path = tmp_path / "cut.jsonl"
    path.write_text(cut)
    loaded = load(path)
    assert [r.line for r in loaded.repairs if r.kind == "skipped_line"] == [3, len(lines) + 1]
    assert loaded.messages[1].content == "Let me run the tests."
    (count,) = run_all(["count", str(path)])
    assert count.returncode == 0 and "repaired while reading" in count.stderr


@pytest.mark.parametrize(
    ("row", "field", "value", "reason"),
    [
        (2, "content", ["Let me"], "'content' is not text"),
        (2, "role", "model", "'role' is neither user nor assistant"),
        (4, "tool_id", 5, "'tool_id' is not a non-empty string"),
        (5, "output", {"text": "F"}, "'output' is not text"),
        (5, "error", "boom", "'error' is not an object"),
        (10, "stats", [1], "'stats' is not an object"),
    ],
)
def test_an_event_with_a_field_of_the_wrong_type_is_skipped_and_reported(
    tmp_path: Path, row: int, field: str, value: Any, reason: str
) -> None:
    s = run()
    s.rows[row][field] = value
    path = s.write(tmp_path, "odd.jsonl")
    loaded = load(path)
    (skipped,) = [x for x in loaded.repairs if x.kind == "skipped_line"]
    assert skipped.line == row + 1 and reason in skipped.detail
    validate(loaded.messages)
    (count,) = run_all(["count", str(path)])
    assert count.returncode == 0
    assert f"line {row + 1}: an unreadable line was skipped" in count.stderr


def test_a_deeply_nested_line_is_skipped_and_a_run_that_said_nothing_is_an_error(
    tmp_path: Path,
) -> None:
    s = run()
    s.rows[4]["parameters"] = {"deep": json.loads("[" * 600 + "]" * 600)}
    deep = s.write(tmp_path, "deep.jsonl")
    empty = Stream()
    empty.init()
    empty.event("error", severity="error", message="Quota exceeded")
    empty.end("error", error={"type": "Error", "message": "Quota exceeded"})
    nothing = empty.write(tmp_path, "nothing.jsonl")
    nested, refused = run_all(["count", str(deep)], ["count", str(nothing)])
    assert nested.returncode == 0, nested.stderr
    assert "line 5: an unreadable line was skipped (JSON nested deeper" in nested.stderr
    assert "gemini-cli-stream" in one_line_error(refused)
    assert "no messages" in one_line_error(refused)
    with pytest.raises(FormatError, match="no messages"):
        load(nothing)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_field_set_to_an_odd_value_reads_or_fails_cleanly(data: st.DataObject) -> None:
    rows = json.loads(json.dumps(run().rows))
    row = data.draw(st.sampled_from(rows))
    target = row
    for nested in ("parameters", "stats", "error"):
        if isinstance(row.get(nested), dict) and row[nested] and data.draw(st.booleans()):
            target = row[nested]
    key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(ODD_VALUES)
    text = "".join(json.dumps(x) + "\n" for x in rows)
    fmt = data.draw(st.sampled_from([None, "gemini-cli-stream"]))
    try:
        loaded = loads(text, "mutated.jsonl", format=fmt)
    except FormatError as exc:
        # The reader's own clear error, not the registry's word for a reader that crashed.
        assert "could not make sense of it" not in str(exc), exc
        return
    assert problems(loaded.messages) == []
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)
    json.dumps(loaded.extra)  # what the run recorded stays plain JSON
