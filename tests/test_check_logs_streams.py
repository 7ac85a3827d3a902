"""The check's raw reader on the headless streams (Claude Code's and Cursor's stream-json,
``codex exec --json``, Gemini CLI's stream-json): the task the person typed (never the
harness's text, never a sub-agent's), the commands and edited files (a failed edit edits
nothing), the outputs in order; the command's facts on each; hostile files refused by name or
their bad lines passed over. The fixtures are built with the format readers' own test helpers,
so both readers are held to one account of each stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.check import UnreadableLog, facts, read_log
from compaction.check.logs import FORMATS, Log
from tests.format_cli import check_reports_facts

from . import test_formats_claude_stream as cs
from . import test_formats_codex_exec as cx
from . import test_formats_cursor_stream as cu
from . import test_formats_gemini_cli_stream as gm

STREAMS = ("claude-code-stream", "cursor-stream", "codex-exec", "gemini-cli-stream")
Read = tuple[str, str, list[tuple[str | None, tuple[str, ...]]], list[str]]


def _read(path: Path) -> Read:
    log = read_log(path)
    return log.format, log.task, [(a.command, a.edited) for a in log.actions], list(log.outputs)


def test_the_four_streams_are_known() -> None:
    assert set(STREAMS) <= set(FORMATS)


# --- Claude Code ----------------------------------------------------------------------------


def _claude() -> cs.Printer:
    """The person's prompt (replayed) after the harness's text, a sub-agent whose own prompt,
    command and edit are its own, a failed edit, a shell edit, a passing one."""
    p = cs.Printer()
    p.user("<local-command-stdout>Compacted.</local-command-stdout>")
    p.user("Hook context: branch is main.", isSynthetic=True)
    p.user("Fix the offset bug in parse.py (ticket PAR-12).", isReplay=True)
    p.say("m1", cs.use("t1", "Task", description="find callers", prompt="Find callers"))
    p.add("user", {"role": "user", "content": "Find callers of parse()"}, "t1")
    p.say("ms1", cs.use("s1", "Bash", command="rg -n 'parse(' > callers.txt"), parent="t1")
    p.results(("s1", "sub-agent output"), parent="t1")
    p.say("ms2", cs.use("s2", "Write", file_path="notes.md", content="x"), parent="t1")
    p.results(("s2", "written"), parent="t1")
    p.results(("t1", "One caller: app.py."))
    p.say("m2", cs.use("t2", "Edit", file_path="app.py", old_string="a", new_string="b"))
    p.add(
        "user",
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": "not found",
                    "is_error": True,
                }
            ],
        },
    )
    p.say("m3", cs.use("t3", "Bash", command="sed -i 's/a/b/' parse.py && pytest -q"))
    p.results(("t3", "FAILED tests/test_parse.py::test_offset - AssertionError"))
    p.say("m4", cs.use("t4", "Edit", file_path="parse.py", old_string="b", new_string="c"))
    p.results(("t4", "The file parse.py has been updated."))
    p.say("m5", cs.text("Fixed."))
    p.result()
    return p


def test_claude_stream_reads_the_person_not_the_harness_nor_the_sub_agent(tmp_path: Path) -> None:
    assert _read(_claude().write(tmp_path)) == (
        "claude-code-stream",
        "Fix the offset bug in parse.py (ticket PAR-12).",
        [
            (None, ()),  # the edit whose old string was not found
            ("sed -i 's/a/b/' parse.py && pytest -q", ("parse.py",)),
            (None, ("parse.py",)),
        ],
        [
            "One caller: app.py.",
            "not found",
            "FAILED tests/test_parse.py::test_offset - AssertionError",
            "The file parse.py has been updated.",
        ],
    )


def test_claude_stream_without_its_prompt_has_no_task_but_its_actions(tmp_path: Path) -> None:
    # ``claude -p`` prints the prompt only when it replays it: the format reader's own run.
    fmt, task, actions, outputs = _read(cs.run_printed().write(tmp_path))
    assert (fmt, task, actions) == ("claude-code-stream", "", [(None, ("parse.py",))])
    assert "app.py:3: parse(x)" not in outputs  # the sub-agent's grep result
    # The sub-agent's prompt is never taken for the person's.
    only_sub = cs.Printer()
    only_sub.add("user", {"role": "user", "content": "Find callers"}, "t9")
    only_sub.say("ms", cs.use("s", "Bash", command="ls"), parent="t9")
    with pytest.raises(UnreadableLog, match="no message a person typed"):
        read_log(only_sub.write(tmp_path, "sub.jsonl"))


def test_claude_sdk_messages_saved_as_one_json_list_read_alike(tmp_path: Path) -> None:
    p = _claude()
    listed = tmp_path / "messages.json"
    listed.write_text(json.dumps(p.rows))
    assert _read(listed) == _read(p.write(tmp_path))


def test_claude_sdk_messages_without_a_session_id_are_still_the_stream(tmp_path: Path) -> None:
    p = _claude()
    for row in p.rows:
        row.pop("session_id", None)
    fmt, task, actions, _ = _read(p.write(tmp_path))
    assert (fmt, task) == ("claude-code-stream", "Fix the offset bug in parse.py (ticket PAR-12).")
    assert not any(a[0] and a[0].startswith("rg ") for a in actions)  # the sub-agent's


# --- Cursor ---------------------------------------------------------------------------------


def _cursor() -> cu.Printer:
    p = cu.Printer("Summarise README.md into summary.txt; see issue CUR-7")
    p.say("Reading it.")
    p.start("r1", "readToolCall", cu.READ)
    p.finish("r1", "readToolCall", cu.READ, {"success": {"content": "# Project"}})
    p.start("w1", "writeToolCall", cu.WRITE)
    p.finish("w1", "writeToolCall", cu.WRITE, {"success": {"path": "summary.txt"}})
    edit = {"path": "README.md", "oldString": "x", "newString": "y"}
    p.start("e1", "editToolCall", edit)
    p.finish("e1", "editToolCall", edit, {"error": {"message": "old string not found"}})
    cmd = {"command": "pytest -q > out.txt"}
    p.start("s1", "shellToolCall", cmd)
    ran = {"stdout": "1 failed", "stderr": "ValueError: bad", "exitCode": 1}
    p.finish("s1", "shellToolCall", cmd, {"success": ran})
    rm = {"command": "rm -rf build"}
    p.start("s2", "shellToolCall", rm)
    p.finish("s2", "shellToolCall", rm, {"rejected": {"reason": "denied"}})
    p.say("Done")
    p.result()
    return p


def test_cursor_stream_reads_the_prompt_calls_once_and_failed_edits_edit_nothing(
    tmp_path: Path,
) -> None:
    assert _read(_cursor().write(tmp_path)) == (
        "cursor-stream",
        "Summarise README.md into summary.txt; see issue CUR-7",
        [
            (None, ("summary.txt",)),
            (None, ()),
            ("pytest -q > out.txt", ("out.txt",)),
            ("rm -rf build", ()),
        ],
        [
            "# Project",
            '{"path": "summary.txt"}',
            'Error: {"error": {"message": "old string not found"}}',
            "1 failed\nValueError: bad",
            'Error: {"rejected": {"reason": "denied"}}',
        ],
    )


def test_cursor_stream_is_no_longer_read_as_a_claude_session(tmp_path: Path) -> None:
    # The format readers' documented run: its write is an edit, its read is not.
    fmt, task, actions, _ = _read(cu.documented_run().write(tmp_path))
    assert (fmt, task, actions) == (
        "cursor-stream",
        "Read README.md and summarise it",
        [(None, ("summary.txt",))],
    )


# --- Codex exec -----------------------------------------------------------------------------


def _codex() -> cx.Exec:
    e = cx.run()  # a failing test command, a command the run was killed in
    changes = [{"path": "src/dates.py", "kind": "update"}, {"path": "src/tz.py", "kind": "add"}]
    e.item("item.completed", "file_change", changes=changes, status="completed")
    bad = [{"path": "src/never.py", "kind": "update"}]
    e.item("item.completed", "file_change", changes=bad, status="failed")
    e.command("/bin/zsh -lc 'echo x > log.txt'", "", exit_code=0)
    e.command("bash -lc 'unclosed", "", exit_code=0)
    e.done(100, 0, 10)
    return e


def test_codex_exec_has_no_task_and_keeps_its_actions(tmp_path: Path) -> None:
    assert _read(_codex().write(tmp_path)) == (
        "codex-exec",
        "",  # the prompt is the command line's: the stream never holds it
        [
            ("pytest -q tests/test_dates.py", ()),  # it failed: it edited nothing
            ("rg -n astimezone src", ()),  # never finished
            (None, ("src/dates.py", "src/tz.py")),
            (None, ()),
            ("echo x > log.txt", ("log.txt",)),
            ("bash -lc 'unclosed", ()),  # an unclosed quote: the command as printed
        ],
        ["F\n1 failed in 0.12s\n", "", ""],
    )


def test_codex_exec_items_of_a_resumed_thread_stay_apart(tmp_path: Path) -> None:
    e = cx.Exec()
    e.thread()
    e.command("ls", "a.py\n")
    e.thread("second")  # ids start again at item_0
    e.command("cat a.py", "x = 1\n")
    _, _, actions, outputs = _read(e.write(tmp_path))
    assert [a[0] for a in actions] == ["ls", "cat a.py"]
    assert outputs == ["a.py\n", "x = 1\n"]


def test_codex_exec_with_no_item_is_refused(tmp_path: Path) -> None:
    e = cx.Exec()
    e.thread()
    e.event("turn.started")
    e.event("turn.failed", error={"message": "401"})
    with pytest.raises(UnreadableLog, match="codex exec stream with no item"):
        read_log(e.write(tmp_path))


# --- Gemini CLI -----------------------------------------------------------------------------


def _gemini() -> gm.Stream:
    s = gm.run()
    s.use("w1", "write_file", file_path="src/dates.py", content="x")
    s.result("w1", output="wrote src/dates.py")
    s.use("w2", "replace", file_path="src/tz.py", old_string="a", new_string="b")
    s.result("w2", error="could not find the string to replace")
    s.use("sh", "run_shell_command", command="pytest -q | tee out.txt")
    s.result("sh", output="TypeError: can't compare offset-naive")
    s.end()
    return s


def test_gemini_stream_reads_the_prompt_and_failed_edits_edit_nothing(tmp_path: Path) -> None:
    assert _read(_gemini().write(tmp_path)) == (
        "gemini-cli-stream",
        "Why does tests/test_dates.py fail?",
        [
            ("pytest -q tests/test_dates.py", ()),
            (None, ("src/dates.py",)),
            (None, ()),
            ("pytest -q | tee out.txt", ("out.txt",)),
        ],
        [
            "F\n1 failed in 0.12s",
            "",
            "wrote src/dates.py",
            "could not find the string to replace",
            "TypeError: can't compare offset-naive",
        ],
    )


# --- the command ----------------------------------------------------------------------------

BIG = "\n".join(f"line {n}: value = compute(value, {n})" for n in range(150))
STEPS = 24
TASK = "Fix ticket INV-7 in src/billing/invoice.py; the cap is $500."


def _claude_big(tmp_path: Path) -> Path:
    p = cs.Printer()
    p.user(TASK, isReplay=True)
    for i in range(STEPS):
        p.say(f"m{i}", cs.text(f"step {i}"), cs.use(f"t{i}", "Bash", command=f"cat m{i}.py"))
        p.results((f"t{i}", BIG))
    p.say("me", cs.use("te", "Edit", file_path="src/billing/invoice.py", old_string="a"))
    p.results(("te", "The file src/billing/invoice.py has been updated."))
    p.result()
    return p.write(tmp_path, "claude.jsonl")


def _cursor_big(tmp_path: Path) -> Path:
    p = cu.Printer(TASK)
    for i in range(STEPS):
        p.say(f"step {i}")
        cmd = {"command": f"cat m{i}.py"}
        p.start(f"c{i}", "shellToolCall", cmd)
        p.finish(f"c{i}", "shellToolCall", cmd, {"success": {"stdout": BIG, "exitCode": 0}})
    p.result()
    return p.write(tmp_path, "cursor.jsonl")


def _codex_big(tmp_path: Path) -> Path:
    e = cx.Exec()
    e.thread()
    e.event("turn.started")
    for i in range(STEPS):
        e.said(f"step {i}")
        e.command(f"bash -lc 'cat m{i}.py'", BIG)
    changes = [{"path": "src/billing/invoice.py", "kind": "update"}]
    e.item("item.completed", "file_change", changes=changes, status="completed")
    e.done(50000, 40000, 900)
    return e.write(tmp_path, "codex.jsonl")


def _gemini_big(tmp_path: Path) -> Path:
    s = gm.Stream()
    s.init()
    s.user(TASK)
    for i in range(STEPS):
        s.say(f"step {i}")
        s.use(f"g{i}", "run_shell_command", command=f"cat m{i}.py")
        s.result(f"g{i}", output=BIG)
    s.end()
    return s.write(tmp_path, "gemini.jsonl")


def test_the_command_reports_facts_for_each_stream(tmp_path: Path) -> None:
    paths = [make(tmp_path) for make in (_claude_big, _cursor_big, _codex_big, _gemini_big)]
    assert [read_log(p).format for p in paths] == list(STREAMS)
    check_reports_facts(paths, tmp_path)


# --- hostile input --------------------------------------------------------------------------


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("rows", "reason"),
    [
        # A prompt echo with no text, and nothing else: no person, no call.
        (cu.Printer("").rows, "no message a person typed"),
        ([{"type": "message", "role": "user", "content": "", "timestamp": "t"}], "no message"),
        ([{"type": "thread.started", "thread_id": "t"}, {"type": "item.completed"}], "no item"),
        (
            [{"type": "item.completed", "item": {"id": 5, "type": "command_execution"}}],
            "no item",
        ),
    ],
)
def test_a_hostile_stream_is_refused_with_its_reason(
    tmp_path: Path, rows: list[Any], reason: str
) -> None:
    with pytest.raises(UnreadableLog, match=reason):
        read_log(_jsonl(tmp_path / "s.jsonl", rows))


@pytest.mark.parametrize("make", [_claude, _cursor, _codex, _gemini])
def test_a_truncated_line_and_a_line_that_is_not_json_are_passed_over(
    tmp_path: Path, make: Any
) -> None:
    printer = make()
    whole = _read(printer.write(tmp_path, "whole.jsonl"))
    lines = printer.text().splitlines()
    lines.insert(2, "Error: stream interrupted")
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines) + "\n" + lines[-2][:40])
    assert _read(cut) == whole


def _streams() -> list[list[dict[str, Any]]]:
    return [_claude().rows, _cursor().rows, _codex().rows, _gemini().rows]


def _places(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _places(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _places(item, (*at, index))
    return out


_ODD = st.sampled_from(
    [None, 0, -1, 1.5, True, "", "x", [], {}, [1], {"a": 1}, "item.completed", "user"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 3), st.integers(0, 100_000), _ODD)
def test_a_stream_with_any_field_set_to_an_odd_value_is_read_or_refused(
    tmp_path_factory: pytest.TempPathFactory, which: int, pick: int, odd: Any
) -> None:
    rows = _streams()[which]
    places = [p for p in _places(rows) if len(p) > 1]
    where = places[pick % len(places)]
    parent: Any = rows
    for step in where[:-1]:
        parent = parent[step]
    parent[where[-1]] = odd
    path = _jsonl(tmp_path_factory.mktemp("odd") / "s.jsonl", rows)
    try:
        log = read_log(path)
    except UnreadableLog as exc:
        assert exc.reason
    else:
        assert isinstance(log, Log)
        # Only the streams that may not print the prompt are read without a task.
        assert log.task or log.format in ("claude-code-stream", "codex-exec")
        assert all(isinstance(o, str) for o in log.outputs)
        assert all(isinstance(p, str) for a in log.actions for p in a.edited)
        facts(log)


def _is(kind: str, **fields: Any) -> Any:
    def match(row: dict[str, Any]) -> bool:
        body = row.get("item") if isinstance(row.get("item"), dict) else row
        return row.get("type") == kind and all(body.get(k) == v for k, v in fields.items())

    return match


@pytest.mark.parametrize(
    ("make", "where", "key", "odd"),
    [
        (_claude, _is("assistant", parent_tool_use_id=None), "message", {"content": 5}),
        (_cursor, _is("tool_call", subtype="started"), "tool_call", "readToolCall"),
        (_cursor, _is("tool_call", call_id="s1"), "tool_call", {"shellToolCall": {"args": [1]}}),
        (_codex, _is("item.completed", type="file_change"), "item", {"changes": "src/x.py"}),
        (_gemini, _is("tool_use", tool_id="w1"), "parameters", "not an object"),
        (_gemini, _is("tool_result", tool_id="w2"), "error", ["not", "an", "object"]),
    ],
)
def test_a_field_of_the_wrong_type_is_passed_over_never_a_crash(
    tmp_path: Path, make: Any, where: Any, key: str, odd: Any
) -> None:
    printer = make()
    row = next(r for r in printer.rows if where(r))
    row[key] = {**row[key], **odd} if key == "item" else odd
    log = read_log(_jsonl(tmp_path / "s.jsonl", printer.rows))
    assert log.format in STREAMS
    whole = read_log(make().write(tmp_path, "whole.jsonl"))
    # The odd record cost at most its own action and output.
    assert len(whole.actions) - 1 <= len(log.actions) <= len(whole.actions)
    assert len(whole.outputs) - 1 <= len(log.outputs) <= len(whole.outputs)
