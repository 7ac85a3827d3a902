"""The ``cursor-stream`` reader against streams written here the way ``cursor-agent -p
--output-format stream-json`` prints them (Cursor's CLI output-format reference): a ``system``
init record, the prompt as a ``user`` event, ``assistant`` text events, ``tool_call``
``started``/``completed`` pairs sharing a ``call_id``, and a closing ``result``. Read through
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
from compaction.formats.detect import parse_text
from compaction.formats.factory_droid import sniff_factory_droid
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import is_person_written
from compaction.pricing.recorded import call_time, recorded_usage
from compaction.validate import problems, validate
from tests.format_cli import ODD_VALUES, read_by_the_commands
from tests.test_cli import one_line_error, run_all

SESSION = "c6b62c6f-0000-4fd6-9922-e952131177ff"


class Printer:
    """Prints events as ``cursor-agent -p --output-format stream-json`` does."""

    def __init__(self, prompt: str = "Read README.md and summarise it") -> None:
        self.rows: list[dict[str, Any]] = [
            {
                "type": "system",
                "subtype": "init",
                "apiKeySource": "login",
                "cwd": "/home/dev/app",
                "session_id": SESSION,
                "model": "Claude 4 Sonnet",
                "permissionMode": "default",
            }
        ]
        self.user(prompt)

    def event(self, kind: str, **fields: Any) -> None:
        self.rows.append({"type": kind, **fields, "session_id": SESSION})

    def user(self, text: str) -> None:
        self.event("user", message={"role": "user", "content": [{"type": "text", "text": text}]})

    def say(self, text: str, **fields: Any) -> None:
        message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        self.event("assistant", message=message, **fields)

    def start(self, cid: str, kind: str, args: dict[str, Any], **fields: Any) -> None:
        self.event(
            "tool_call", subtype="started", call_id=cid, tool_call={kind: {"args": args}}, **fields
        )

    def finish(self, cid: str, kind: str, args: dict[str, Any], result: Any, **fields: Any):
        body = {kind: {"args": args, "result": result}}
        self.event("tool_call", subtype="completed", call_id=cid, tool_call=body, **fields)

    def result(self) -> None:
        self.event(
            "result",
            subtype="success",
            duration_ms=5234,
            duration_api_ms=5234,
            is_error=False,
            result="I'll read itDone",
            request_id="10e11780-0000-45dc-a1ff-4540af32e9c0",
        )

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.rows)

    def write(self, where: Path, name: str = "run.jsonl") -> Path:
        path = where / name
        path.write_text(self.text())
        return path


READ = {"path": "README.md"}
WRITE = {"path": "summary.txt", "fileText": "# Summary\n", "toolCallId": "toolu_2"}


def documented_run() -> Printer:
    """The sequence Cursor's reference shows: read a file, write a summary, say so."""
    p = Printer()
    p.say("I'll read the README.md file")
    p.start("toolu_1", "readToolCall", READ)
    content = {"content": "# Project\n\nA sample.", "isEmpty": False, "totalLines": 3}
    p.finish("toolu_1", "readToolCall", READ, {"success": content})
    p.say("Based on the README, I'll create a summary")
    p.start("toolu_2", "writeToolCall", WRITE)
    written = {"path": "/home/dev/app/summary.txt", "linesCreated": 1, "fileSize": 10}
    p.finish("toolu_2", "writeToolCall", WRITE, {"success": written})
    p.say("Done! I've created the summary in summary.txt")
    p.result()
    return p


def shape(loaded: Any) -> list[tuple[str, str, list[str]]]:
    return [(m.role, m.content, [c.id for c in m.tool_calls]) for m in loaded.messages]


# -- reading ------------------------------------------------------------------------------


def test_a_run_reads_as_the_prompt_the_replies_and_each_result_after_its_call(
    tmp_path: Path,
) -> None:
    loaded = load(documented_run().write(tmp_path))
    assert loaded.format == "cursor-stream" and loaded.output_format == "anthropic"
    assert shape(loaded) == [
        ("user", "Read README.md and summarise it", []),
        ("assistant", "I'll read the README.md file", ["toolu_1"]),
        ("tool", "# Project\n\nA sample.", []),
        ("assistant", "Based on the README, I'll create a summary", ["toolu_2"]),
        (
            "tool",
            '{"path": "/home/dev/app/summary.txt", "linesCreated": 1, "fileSize": 10}',
            [],
        ),
        ("assistant", "Done! I've created the summary in summary.txt", []),
    ]
    calls = [c for m in loaded.messages for c in m.tool_calls]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("Read", READ), ("Write", WRITE)]
    assert is_person_written(loaded.messages[0])
    assert loaded.repairs == ()
    validate(loaded.messages)


def test_the_run_is_kept_beside_the_conversation_and_no_usage_is_invented(
    tmp_path: Path,
) -> None:
    loaded = load(documented_run().write(tmp_path))
    assert loaded.extra["session"]["model"] == "Claude 4 Sonnet"
    (run,) = loaded.extra["results"]
    assert run["duration_ms"] == 5234 and run["is_error"] is False and "result" not in run
    assert loaded.skipped == {"system": 1, "result": 1}
    assert all(recorded_usage(m) is None for m in loaded.messages)


def test_calls_of_one_model_call_are_one_message_whatever_order_they_finish_in(
    tmp_path: Path,
) -> None:
    p = Printer("Check both configs")
    p.say("Reading both.", model_call_id="m1", timestamp_ms=1770823449274)
    p.start("a", "readToolCall", {"path": "a.toml"}, model_call_id="m1")
    p.start("b", "readToolCall", {"path": "b.toml"}, model_call_id="m1")
    p.finish("b", "readToolCall", {"path": "b.toml"}, {"success": {"content": "B"}})
    p.finish("a", "readToolCall", {"path": "a.toml"}, {"success": {"content": "A"}})
    # One model call's calls run one after the other: still that call's message.
    p.start("c", "lsToolCall", {"path": "."}, model_call_id="m2")
    p.finish("c", "lsToolCall", {"path": "."}, {"success": {"entries": 2}}, model_call_id="m2")
    p.start("d", "grepToolCall", {"pattern": "x"}, model_call_id="m2")
    p.finish("d", "grepToolCall", {"pattern": "x"}, {"success": {"content": "x.py"}})
    # No model_call_id: a call started after one completed is the next model call's.
    p.start("e", "globToolCall", {"pattern": "*.py"})
    p.finish("e", "globToolCall", {"pattern": "*.py"}, {"success": {"content": "x.py"}})
    loaded = load(p.write(tmp_path))
    assert shape(loaded)[1:] == [
        ("assistant", "Reading both.", ["a", "b"]),
        ("tool", "A", []),
        ("tool", "B", []),
        ("assistant", "", ["c", "d"]),
        ("tool", '{"entries": 2}', []),
        ("tool", "x.py", []),
        ("assistant", "", ["e"]),
        ("tool", "x.py", []),
    ]
    assert [c.name for c in loaded.messages[4].tool_calls] == ["Ls", "Grep"]
    assert call_time(loaded.messages[1]) is not None  # timestamp_ms, in milliseconds


def test_shell_output_errors_rejections_and_function_calls(tmp_path: Path) -> None:
    p = Printer("Run the tests")
    cmd = {"command": "pytest -q"}
    p.start("s1", "shellToolCall", cmd)
    failed = {"stdout": "1 failed", "stderr": "warning: x", "exitCode": 1, "executionTime": 900}
    p.finish("s1", "shellToolCall", cmd, {"success": failed})
    p.start("s2", "shellToolCall", {"command": "rm -rf /"})
    p.finish("s2", "shellToolCall", {"command": "rm -rf /"}, {"rejected": {"reason": "denied"}})
    p.event(
        "tool_call",
        subtype="started",
        call_id="f1",
        tool_call={"function": {"name": "mcp_lookup", "arguments": '{"q": "x"}'}},
    )
    loaded = load(p.write(tmp_path))
    answers = {m.tool_call_id: m.content for m in loaded.messages if m.role == "tool"}
    assert answers == {
        "s1": "1 failed\nwarning: x\n[exit code 1]",
        "s2": 'Error: {"rejected": {"reason": "denied"}}',
        "f1": NO_RESULT,
    }
    function = loaded.messages[-2].tool_calls[0]
    assert (function.name, function.arguments) == ("mcp_lookup", '{"q": "x"}')
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("no_result", "f1")]


def test_partial_output_is_read_from_its_pieces_and_the_repeats_are_counted(
    tmp_path: Path,
) -> None:
    p = Printer("List the files")
    p.event("thinking", subtype="delta", text="The user wants ", timestamp_ms=1770823434041)
    p.event("thinking", subtype="delta", text="a listing.", timestamp_ms=1770823434042)
    p.event("thinking", subtype="completed", timestamp_ms=1770823435070)
    p.say("Listing ", timestamp_ms=1770823440000)
    p.say("them now.", timestamp_ms=1770823440100)
    p.say("Listing them now.", timestamp_ms=1770823440200, model_call_id="m1")  # a repeat
    p.start("l1", "lsToolCall", {"path": "."}, model_call_id="m1")
    p.finish("l1", "lsToolCall", {"path": "."}, {"success": {"content": "a.py\nb.py"}})
    p.say("Two files.", timestamp_ms=1770823450000)
    p.say("Listing them now.Two files.")  # the end-of-turn repeat
    p.result()
    loaded = load(p.write(tmp_path))
    assert shape(loaded) == [
        ("user", "List the files", []),
        ("assistant", "Listing them now.", ["l1"]),
        ("tool", "a.py\nb.py", []),
        ("assistant", "Two files.", []),
    ]
    assert loaded.messages[1].meta["cursor"]["thinking"] == "The user wants a listing."
    assert loaded.skipped["assistant repeat"] == 2 and loaded.skipped["thinking"] == 3
    assert call_time(loaded.messages[1]) == pytest.approx(1770823440.2)


def test_an_unfinished_call_and_a_completion_without_its_start_are_repaired(
    tmp_path: Path,
) -> None:
    p = Printer("Fix it")
    p.finish("ghost", "readToolCall", READ, {"success": {"content": "old"}})
    p.say("Editing.")
    p.start("e1", "editToolCall", {"path": "a.py"})  # the run was killed here
    loaded = load(p.write(tmp_path))
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [
        ("orphan_result", "ghost"),
        ("no_result", "e1"),
    ]
    assert loaded.messages[-1].content == NO_RESULT
    validate(loaded.messages)


# -- detection ----------------------------------------------------------------------------


def test_detection_takes_the_stream_even_without_tools_and_leaves_droid_alone(
    tmp_path: Path,
) -> None:
    path = documented_run().write(tmp_path)
    assert detect_format(path) == "cursor-stream"
    assert not sniff_factory_droid(parse_text(path.read_text(), path))
    chat = Printer("What does HEAD~3 mean?")
    chat.say("Three commits before HEAD.")
    chat.result()
    assert detect_format(chat.write(tmp_path, "chat.jsonl")) == "cursor-stream"
    droid = [
        {"type": "system", "subtype": "init", "session_id": "s", "model": "m", "tools": []},
        {"type": "message", "role": "user", "text": "Do thing", "session_id": "s"},
        {"type": "tool_call", "toolCallId": "c1", "toolName": "Shell", "session_id": "s"},
    ]
    (tmp_path / "droid.jsonl").write_text("".join(json.dumps(d) + "\n" for d in droid))
    assert detect_format(tmp_path / "droid.jsonl") == "factory-droid"
    # One record whose type is no text does not hide the rest from either sniffer.
    odd = {"type": ["system"], "session_id": "s"}
    (tmp_path / "odd-droid.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [odd, *droid]))
    assert detect_format(tmp_path / "odd-droid.jsonl") == "factory-droid"
    (tmp_path / "odd-cursor.jsonl").write_text(json.dumps(odd) + "\n" + path.read_text())
    assert detect_format(tmp_path / "odd-cursor.jsonl") == "cursor-stream"


# -- the command line ---------------------------------------------------------------------


def test_the_cli_counts_compacts_and_takes_the_format_by_name(tmp_path: Path) -> None:
    p = Printer("Check every module for naive datetimes.")
    for i in range(30):  # enough turns for a compaction to have something to drop
        p.say(f"Module m{i}.")
        p.start(f"g{i}", "grepToolCall", {"pattern": "datetime("})
        out = {"content": f"m{i}.py:{i}: datetime.now()\n" * 40}
        p.finish(f"g{i}", "grepToolCall", {"pattern": "datetime("}, {"success": out})
    p.result()
    path = p.write(tmp_path, "ci-output.log")  # a name that says nothing
    read_by_the_commands(path, "cursor-stream", "codex")


# -- hostile input ------------------------------------------------------------------------


def test_a_truncated_last_line_and_a_line_that_is_not_json_are_skipped_and_reported(
    tmp_path: Path,
) -> None:
    p = documented_run()
    lines = p.text().splitlines()
    lines.insert(2, "Error: connection reset")
    cut = "\n".join(lines) + "\n" + json.dumps(p.rows[3])[:50]
    path = tmp_path / "cut.jsonl"
    path.write_text(cut)
    loaded = load(path)
    skipped = [r for r in loaded.repairs if r.kind == "skipped_line"]
    assert [r.line for r in skipped] == [3, len(lines) + 1]
    assert loaded.messages[0].content == "Read README.md and summarise it"
    (count,) = run_all(["count", str(path)])
    assert count.returncode == 0 and "repaired while reading" in count.stderr


@pytest.mark.parametrize(
    ("index", "change", "reason"),
    [
        (2, {"message": "hello"}, "expected 'message': {'content'"),
        (2, {"message": {"role": "assistant", "content": 7}}, "expected 'message'"),
        (3, {"tool_call": "readToolCall"}, "'tool_call': expected an object"),
        (3, {"tool_call": {"unknown": 1}}, "expected one '<kind>ToolCall' object"),
    ],
)
def test_an_event_with_a_field_of_the_wrong_type_is_skipped_and_reported(
    tmp_path: Path, index: int, change: dict[str, Any], reason: str
) -> None:
    p = documented_run()
    p.rows.insert(index, dict(p.rows[index], **change))
    loaded = load(p.write(tmp_path))
    (skipped,) = [x for x in loaded.repairs if x.kind == "skipped_line"]
    assert skipped.line == index + 1 and reason in skipped.detail
    validate(loaded.messages)


def test_a_deeply_nested_line_is_skipped_and_a_stream_of_no_turn_is_an_error(
    tmp_path: Path,
) -> None:
    p = documented_run()
    p.start("deep", "shellToolCall", {"command": json.loads("[" * 600 + "]" * 600)})
    deep = p.write(tmp_path, "deep.jsonl")
    bare = Printer()
    bare.rows.pop()  # no prompt either
    bare.say("")
    bare.result()
    empty = bare.write(tmp_path, "empty.jsonl")
    nested, nothing = run_all(["count", str(deep)], ["count", str(empty)])
    assert nested.returncode == 0, nested.stderr
    assert "an unreadable line was skipped (JSON nested deeper" in nested.stderr
    assert "Traceback" not in nested.stderr
    assert "cursor-stream" in one_line_error(nothing)
    with pytest.raises(FormatError, match="empty"):
        load(empty)


def _spots(value: Any, depth: int = 0) -> list[tuple[Any, Any]]:
    """Every (container, key) in ``value`` a test may set, down to four levels."""
    found: list[tuple[Any, Any]] = []
    if depth > 4:
        return found
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        found.append((value, key))
        if isinstance(child, dict | list):
            found.extend(_spots(child, depth + 1))
    return found


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_field_set_to_an_odd_value_reads_or_fails_cleanly(data: st.DataObject) -> None:
    rows = json.loads(json.dumps(documented_run().rows))
    row = data.draw(st.sampled_from(rows))
    container, key = data.draw(st.sampled_from(_spots(row)))
    container[key] = data.draw(ODD_VALUES)
    text = "".join(json.dumps(x) + "\n" for x in rows)
    fmt = data.draw(st.sampled_from([None, "cursor-stream"]))
    try:
        loaded = loads(text, "mutated.jsonl", format=fmt)
    except FormatError as exc:
        # The reader's own clear error, not the registry's word for a reader that crashed.
        assert "could not make sense of it" not in str(exc), exc
        return
    assert problems(loaded.messages) == []
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)


def test_the_docs_example_reads_as_described() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text()
    section = page[page.index("### Cursor CLI stream") :]
    example = section[section.index("```json\n") + 8 : section.index("```\n", 8)]
    loaded = loads(example, name="run.jsonl")
    assert loaded.format == "cursor-stream"
    assert shape(loaded) == [
        ("user", "Read README.md", []),
        ("assistant", "Reading it.", ["t1"]),
        ("tool", "# Project", []),
    ]
    assert loaded.messages[1].tool_calls[0].name == "Read"
