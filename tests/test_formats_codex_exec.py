"""The ``codex exec --json`` reader against event streams written here the way Codex's exec
event processor prints them (``ThreadEvent`` s, one per line), read through
``compaction.formats.load`` and the CLI, and under hostile input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.formats import FormatError, detect_format, load, loads
from compaction.formats._codex_exec import PROMPT_NOT_RECORDED
from compaction.formats.logs import RECORDED_KEY
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import is_person_written, is_synthetic, parse
from compaction.pricing.recorded import recorded_usage
from compaction.validate import problems, validate
from tests.format_cli import ODD_VALUES, read_by_the_commands
from tests.test_cli import one_line_error, run_all

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


class Exec:
    """Prints events as ``codex exec --json`` does: item ids ``item_N`` counted per run."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.n = 0

    def event(self, kind: str, **fields: Any) -> None:
        self.rows.append({"type": kind, **fields})

    def thread(self, thread_id: str = "0199a213-81c0-7800-8aa1-bbab2a035a53") -> None:
        self.n = 0
        self.event("thread.started", thread_id=thread_id)

    def item(self, kind: str, item_type: str, item_id: str | None = None, **fields: Any) -> str:
        if item_id is None:
            item_id = f"item_{self.n}"
            self.n += 1
        self.event(kind, item={"id": item_id, "type": item_type, **fields})
        return item_id

    def command(self, command: str, output: str | None, exit_code: int = 0) -> str:
        """A command started, then (unless ``output`` is None) completed."""
        started = {"aggregated_output": "", "exit_code": None, "status": "in_progress"}
        cid = self.item("item.started", "command_execution", command=command, **started)
        if output is not None:
            status = "completed" if exit_code == 0 else "failed"
            self.item(
                "item.completed",
                "command_execution",
                cid,
                command=command,
                aggregated_output=output,
                exit_code=exit_code,
                status=status,
            )
        return cid

    def said(self, text: str) -> str:
        return self.item("item.completed", "agent_message", text=text)

    def done(self, input_tokens: int, cached: int, output: int) -> None:
        usage = {
            "input_tokens": input_tokens,
            "cached_input_tokens": cached,
            "output_tokens": output,
        }
        self.event("turn.completed", usage=usage)

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.rows)

    def write(self, tmp_path: Path, name: str = "run.jsonl") -> Path:
        path = tmp_path / name
        path.write_text(self.text())
        return path


def run() -> Exec:
    """A short headless run: reasoning, a failing test command, a plan checklist, a reply,
    a second command the run was killed in, the turn's usage."""
    e = Exec()
    e.thread()
    e.event("turn.started")
    e.item("item.completed", "reasoning", text="**Looking at the failing test**")
    e.command("bash -lc 'pytest -q tests/test_dates.py'", "F\n1 failed in 0.12s\n", exit_code=1)
    e.item("item.started", "todo_list", items=[{"text": "fix tz", "completed": False}])
    e.said("The parser drops tzinfo; checking the helper next.")
    e.command("bash -lc 'rg -n astimezone src'", None)
    e.done(24763, 24448, 122)
    return e


def test_a_run_reads_as_its_turns(tmp_path: Path) -> None:
    loaded = load(run().write(tmp_path))
    assert loaded.format == "codex-exec"
    assert [m.role for m in loaded.messages] == [
        "user", "assistant", "tool", "assistant", "assistant", "tool",
    ]  # fmt: skip
    prompt, ran, output, reply, killed, missing = loaded.messages
    assert prompt.content == PROMPT_NOT_RECORDED and is_synthetic(prompt)
    assert [(c.id, c.name) for c in ran.tool_calls] == [("item_1", "command_execution")]
    assert json.loads(ran.tool_calls[0].arguments) == {
        "command": "bash -lc 'pytest -q tests/test_dates.py'"
    }
    assert ran.meta["codex_exec"]["reasoning"] == ["**Looking at the failing test**"]
    assert (output.tool_call_id, output.content) == ("item_1", "F\n1 failed in 0.12s\n")
    assert output.meta["codex_exec"]["exit_code"] == 1
    assert reply.content == "The parser drops tzinfo; checking the helper next."
    assert killed.tool_calls[0].id == missing.tool_call_id == "item_4"
    assert missing.content == NO_RESULT
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("no_result", "item_4")]
    assert loaded.skipped == {"thread.started": 1, "todo_list item": 1}
    assert loaded.extra["threads"] == ["0199a213-81c0-7800-8aa1-bbab2a035a53"]
    validate(loaded.messages)


def test_the_prompt_is_never_made_up_so_the_log_has_no_task(tmp_path: Path) -> None:
    loaded = load(run().write(tmp_path))
    assert not any(is_person_written(m) for m in loaded.messages)
    transcript = parse(loaded.messages)
    assert transcript.task is None and transcript.anchor is None


def test_an_item_is_read_once_from_its_last_state_where_it_was_first_seen(tmp_path: Path) -> None:
    e = Exec()
    e.thread()
    e.event("turn.started")
    first = e.command("bash -lc 'sleep 2; echo a'", None)
    second = e.command("bash -lc 'echo b'", "b\n")
    partial = {"aggregated_output": "a", "exit_code": None, "status": "in_progress"}
    e.item(
        "item.updated", "command_execution", first, command="bash -lc 'sleep 2; echo a'", **partial
    )
    whole = {"aggregated_output": "a\n", "exit_code": 0, "status": "completed"}
    e.item(
        "item.completed", "command_execution", first, command="bash -lc 'sleep 2; echo a'", **whole
    )
    e.done(100, 0, 10)
    loaded = load(e.write(tmp_path))
    calls = [c.id for m in loaded.messages for c in m.tool_calls]
    results = [(m.tool_call_id, m.content) for m in loaded.messages if m.role == "tool"]
    assert calls == [first, second]
    assert results == [(first, "a\n"), (second, "b\n")]
    assert loaded.repairs == ()


def test_the_turn_usage_is_kept_as_the_turns_never_as_one_calls(tmp_path: Path) -> None:
    loaded = load(run().write(tmp_path))
    last = loaded.messages[4]  # the turn's last assistant message
    got = last.meta[RECORDED_KEY]["turn_usage"]
    # input_tokens holds the cached tokens: the uncached part is the difference.
    assert (got["cache_read"], got["uncached"], got["output"]) == (24448, 24763 - 24448, 122)
    assert "usage" not in last.meta[RECORDED_KEY]
    # The bill check and the priced replay read no call's bill from a whole turn's total.
    assert [recorded_usage(m) for m in loaded.messages] == [None] * len(loaded.messages)
    (turn,) = loaded.extra["turns"]
    assert turn["status"] == "completed" and turn["usage"]["raw_usage"]["input_tokens"] == 24763


def test_mcp_file_change_web_search_and_an_unanswered_question(tmp_path: Path) -> None:
    e = Exec()
    e.thread()
    e.event("turn.started")
    args = {"owner": "acme", "repo": "app"}
    mcp = {"server": "github", "tool": "list_issues", "arguments": args, "status": "in_progress"}
    ok = e.item("item.started", "mcp_tool_call", result=None, error=None, **mcp)
    content = [{"type": "text", "text": "#12 tz bug"}, {"type": "image", "data": "AAAA"}]
    done = {**mcp, "status": "completed", "result": {"content": content}, "error": None}
    e.item("item.completed", "mcp_tool_call", ok, **done)
    failed = {**mcp, "status": "failed", "result": None, "error": {"message": "401 Unauthorized"}}
    bad = e.item("item.completed", "mcp_tool_call", **failed)
    changes = [{"path": "src/dates.py", "kind": "update"}]
    patch = e.item("item.completed", "file_change", changes=changes, status="completed")
    search = e.item("item.completed", "web_search", query="python zoneinfo utc")
    e.event("request_user_input", id="turn-1", call_id="call_q", questions=[{"q": "Proceed?"}])
    e.event("turn.failed", error={"message": "stream disconnected"})
    e.event("error", message="Reconnecting... 1/5")
    loaded = load(e.write(tmp_path))
    names = {c.id: c.name for m in loaded.messages for c in m.tool_calls}
    assert names == {
        ok: "github__list_issues",
        bad: "github__list_issues",
        patch: "file_change",
        search: "web_search",
        "call_q": "request_user_input",
    }
    results = {m.tool_call_id: m.content for m in loaded.messages if m.role == "tool"}
    assert results[ok] == "#12 tz bug\n[image]"
    assert results[bad] == "Error: 401 Unauthorized"
    assert results[patch].startswith("[file change completed")
    assert "not recorded" in results[search]
    assert results["call_q"] == NO_RESULT  # the person's answer is not in the stream
    assert (
        json.loads(next(m for m in loaded.messages if m.tool_calls).tool_calls[0].arguments) == args
    )
    assert loaded.extra["turns"] == [
        {"line": 2, "status": "failed", "error": "stream disconnected"}
    ]
    assert loaded.extra["errors"] == ["Reconnecting... 1/5"]


def test_a_resumed_run_appended_opens_a_second_turn_and_reused_ids_stay_apart(
    tmp_path: Path,
) -> None:
    e = run()
    e.thread()  # `codex exec resume --last ...` printed into the same file: ids restart
    e.event("turn.started")
    e.item("item.completed", "reasoning", text="**Re-running**")
    rerun = e.command("bash -lc 'pytest -q'", "1 passed\n")
    assert rerun == "item_1"  # the id of the first run's first command
    e.event("item.plan.delta", item_id="item_2", delta="1. Fix ")
    e.event("item.plan.delta", item_id="item_2", delta="the parser")
    e.done(50000, 49000, 300)
    loaded = load(e.write(tmp_path))
    prompts = [m for m in loaded.messages if m.content == PROMPT_NOT_RECORDED]
    assert len(prompts) == 2 and all(is_synthetic(m) for m in prompts)
    assert [m.content for m in loaded.messages if m.role == "tool"][-1] == "1 passed\n"
    assert loaded.messages[-1].content == "1. Fix the parser"  # a plan never completed: its pieces
    assert [r.kind for r in loaded.repairs].count("rekeyed") == 1
    assert len(loaded.extra["turns"]) == 2
    validate(loaded.messages)


def test_detection_takes_exec_streams_and_leaves_rollouts_and_shared_logs_alone(
    tmp_path: Path,
) -> None:
    assert detect_format(run().write(tmp_path, "out.txt")) == "codex-exec"
    rollout = [
        {"timestamp": "2025-10-28T04:00:00Z", "type": "session_meta", "payload": {"id": "s"}},
        {
            "timestamp": "2025-10-28T04:00:01Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": "hi"},
        },
    ]
    (tmp_path / "rollout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollout))
    assert detect_format(tmp_path / "rollout.jsonl") == "codex"
    shared = [
        p for p in SHARED.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")
    ]
    if not shared:
        pytest.skip("shared data not present")
    taken = {p.name: detect_format(p) for p in shared}
    assert not {n: f for n, f in taken.items() if f in ("codex-exec", "gemini-cli-stream")}
    codex = [n for n, f in taken.items() if "codex" in n]
    assert codex and all(taken[n] == "codex" for n in codex)


def test_the_cli_counts_compacts_and_takes_the_format_by_name(tmp_path: Path) -> None:
    e = Exec()
    e.thread()
    e.event("turn.started")
    for i in range(30):  # enough steps for a compaction to have something to drop
        e.said(f"Step {i}: checking module m{i} for naive datetimes.")
        e.command(f"bash -lc 'rg -n datetime src/m{i}.py'", f"m{i}.py:{i}: datetime.now()\n" * 40)
    e.done(900000, 800000, 5000)
    path = e.write(tmp_path, "ci-output.log")  # a name that says nothing
    read_by_the_commands(path, "codex-exec", "codex")


# -- hostile input ------------------------------------------------------------------------


def test_a_truncated_last_line_and_a_line_that_is_not_json_are_skipped_and_reported(
    tmp_path: Path,
) -> None:
    lines = run().text().splitlines()
    lines.insert(3, "Reading prompt from stdin...")
    cut = "\n".join(lines) + "\n" + json.dumps(run().rows[4])[:40]
    path = tmp_path / "cut.jsonl"
    path.write_text(cut)
    loaded = load(path)
    assert [r.line for r in loaded.repairs if r.kind == "skipped_line"] == [4, len(lines) + 1]
    assert loaded.messages[3].content == "The parser drops tzinfo; checking the helper next."
    (count,) = run_all(["count", str(path)])
    assert count.returncode == 0 and "repaired while reading" in count.stderr


@pytest.mark.parametrize(
    ("row", "field", "value", "reason"),
    [
        (4, "item", "item_1", "'item' is not an object"),
        (4, "item.id", 7, "'item.id' is not a non-empty string"),
        (4, "item.aggregated_output", ["F"], "'item.aggregated_output' has the wrong type"),
        (6, "item.text", {"t": 1}, "'item.text' of a agent_message item is not text"),
        (8, "usage", [1, 2], "'usage' is not an object"),
    ],
)
def test_an_event_with_a_field_of_the_wrong_type_is_skipped_and_reported(
    tmp_path: Path, row: int, field: str, value: Any, reason: str
) -> None:
    e = run()
    target = e.rows[row]
    *outer, key = field.split(".")
    for part in outer:
        target = target[part]
    target[key] = value
    path = e.write(tmp_path, "odd.jsonl")
    loaded = load(path)
    (skipped,) = [x for x in loaded.repairs if x.kind == "skipped_line"]
    assert skipped.line == row + 1 and reason in skipped.detail
    validate(loaded.messages)
    (count,) = run_all(["count", str(path)])
    assert (
        count.returncode == 0 and f"line {row + 1}: an unreadable line was skipped" in count.stderr
    )


def test_a_deeply_nested_line_is_skipped_and_a_run_that_recorded_nothing_is_an_error(
    tmp_path: Path,
) -> None:
    e = run()
    e.rows[4]["item"]["command"] = "x"
    e.rows[4]["item"]["extra"] = json.loads("[" * 600 + "]" * 600)
    deep = e.write(tmp_path, "deep.jsonl")
    empty = Exec()
    empty.thread()
    empty.event("turn.started")
    empty.event("turn.failed", error={"message": "unexpected status 401"})
    nothing = empty.write(tmp_path, "nothing.jsonl")
    nested, refused, named = run_all(
        ["count", str(deep)],
        ["count", str(nothing)],
        ["compact", str(nothing), "--format", "codex-exec", "--target", "100"],
    )
    assert nested.returncode == 0, nested.stderr
    assert "line 5: an unreadable line was skipped (JSON nested deeper" in nested.stderr
    assert "codex-exec" in one_line_error(refused) and "no messages" in one_line_error(refused)
    assert "codex-exec" in one_line_error(named)
    with pytest.raises(FormatError, match="no messages"):
        load(nothing)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_field_set_to_an_odd_value_reads_or_fails_cleanly(data: st.DataObject) -> None:
    rows = json.loads(json.dumps(run().rows))
    row = data.draw(st.sampled_from(rows))
    target = row
    for nested in ("item", "usage"):
        if isinstance(row.get(nested), dict) and data.draw(st.booleans()):
            target = row[nested]
    key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(ODD_VALUES)
    text = "".join(json.dumps(x) + "\n" for x in rows)
    try:
        loaded = loads(
            text, "mutated.jsonl", format=data.draw(st.sampled_from([None, "codex-exec"]))
        )
    except FormatError as exc:
        # The reader's own clear error, not the registry's word for a reader that crashed.
        assert "could not make sense of it" not in str(exc), exc
        return
    assert problems(loaded.messages) == []
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)
    json.dumps(loaded.extra)  # what the run recorded stays plain JSON
