"""The ``claude-code-stream`` reader against streams written here the way ``claude -p
--output-format stream-json --verbose`` (and the Claude Agent SDK) print them: a ``system``
init record, ``assistant`` records holding the API message (one line per content block, the
lines of one message sharing ``message.id``), ``user`` records holding the tool results, a
``parent_tool_use_id`` on each, and a closing ``result``. Read through
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
from compaction.formats.logs import BOUNDARY_KEY
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import is_person_written, is_synthetic
from compaction.pricing.recorded import recorded_model, recorded_usage
from compaction.validate import problems, validate
from tests.conftest import ROOT
from tests.format_cli import ODD_VALUES, read_by_the_commands
from tests.test_cli import one_line_error, run_all

SESSION = "0b7e9a52-1c1d-4c55-9a1e-3f0a5d2c7e11"
MODEL = "claude-sonnet-4-5-20250929"


class Printer:
    """Prints records as ``claude -p --output-format stream-json`` does."""

    def __init__(self, *, init: bool = True) -> None:
        self.rows: list[dict[str, Any]] = []
        self.n = 0
        if init:
            self.rows.append(
                {
                    "type": "system",
                    "subtype": "init",
                    "cwd": "/home/dev/app",
                    "session_id": SESSION,
                    "tools": ["Task", "Bash", "Read", "Edit"],
                    "mcp_servers": [],
                    "model": MODEL,
                    "permissionMode": "default",
                    "slash_commands": ["compact", "review"],
                    "apiKeySource": "ANTHROPIC_API_KEY",
                    "claude_code_version": "2.0.62",
                    "output_style": "default",
                    "uuid": self._uuid(),
                }
            )

    def _uuid(self) -> str:
        self.n += 1
        return f"5c0de000-0000-4000-8000-{self.n:012d}"

    def add(self, kind: str, message: dict[str, Any], parent: str | None = None, **more: Any):
        row = {
            "type": kind,
            "message": message,
            "parent_tool_use_id": parent,
            "session_id": SESSION,
            "uuid": self._uuid(),
            **more,
        }
        self.rows.append(row)
        return row

    def say(self, msg_id: str, *blocks: dict[str, Any], parent: str | None = None, **usage: int):
        """The assistant message ``msg_id``, one line per block, as Claude Code prints it."""
        bill = {
            "input_tokens": 4,
            "cache_creation_input_tokens": 1200,
            "cache_read_input_tokens": 13000,
            "output_tokens": 60,
            **usage,
        }
        for block in blocks:
            message = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": bill,
            }
            self.add("assistant", message, parent)

    def results(self, *pairs: tuple[str, str], parent: str | None = None, **more: Any) -> None:
        content = [{"tool_use_id": t, "type": "tool_result", "content": c} for t, c in pairs]
        self.add("user", {"role": "user", "content": content}, parent, **more)

    def user(self, text: str, **more: Any) -> None:
        self.add("user", {"role": "user", "content": text}, **more)

    def result(self, **more: Any) -> None:
        self.rows.append(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "duration_ms": 18230,
                "duration_api_ms": 16110,
                "num_turns": 4,
                "result": "The parser dropped the offset; fixed in parse.py.",
                "session_id": SESSION,
                "total_cost_usd": 0.0912,
                "usage": {"input_tokens": 16, "output_tokens": 310},
                "modelUsage": {MODEL: {"inputTokens": 16, "outputTokens": 310}},
                "permission_denials": [],
                "uuid": self._uuid(),
                **more,
            }
        )

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.rows)

    def write(self, where: Path, name: str = "run.jsonl") -> Path:
        path = where / name
        path.write_text(self.text())
        return path


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def use(tid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": args}


def run_printed() -> Printer:
    """A headless run: two parallel reads, a sub-agent, an edit, the closing words."""
    p = Printer()
    p.say(
        "msg_01",
        text("Reading both files."),
        use("toolu_01", "Read", file_path="parse.py"),
        use("toolu_02", "Read", file_path="test_parse.py"),
    )
    # The results come back in one user record, the second call's first.
    p.results(("toolu_02", "def test_offset(): ..."), ("toolu_01", "def parse(s): ..."))
    p.say("msg_02", use("toolu_03", "Task", description="find callers", prompt="Find callers"))
    p.add("user", {"role": "user", "content": "Find callers"}, "toolu_03")
    p.say("msg_sub", use("toolu_s1", "Grep", pattern="parse("), parent="toolu_03")
    p.results(("toolu_s1", "app.py:3: parse(x)"), parent="toolu_03")
    p.say("msg_sub2", text("One caller: app.py."), parent="toolu_03")
    p.results(("toolu_03", "One caller: app.py."))
    p.say("msg_03", use("toolu_04", "Edit", file_path="parse.py", old_string="a", new_string="b"))
    p.results(("toolu_04", "The file parse.py has been updated."))
    p.say("msg_04", text("The parser dropped the offset; fixed in parse.py."), output_tokens=25)
    p.result()
    return p


def roles(loaded: Any) -> list[str]:
    return [m.role for m in loaded.messages]


# -- reading ------------------------------------------------------------------------------


def test_a_run_reads_as_its_turns_with_every_result_after_its_call(tmp_path: Path) -> None:
    p = run_printed()
    loaded = load(p.write(tmp_path))
    assert loaded.format == "claude-code-stream" and loaded.output_format == "anthropic"
    assert roles(loaded) == [
        "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    first = loaded.messages[0]
    # Three lines of one API message are one message again, its calls in order.
    assert first.content == "Reading both files."
    assert [c.id for c in first.tool_calls] == ["toolu_01", "toolu_02"]
    assert [(m.tool_call_id, m.content) for m in loaded.messages[1:3]] == [
        ("toolu_01", "def parse(s): ..."),
        ("toolu_02", "def test_offset(): ..."),
    ]
    assert loaded.messages[-1].content == "The parser dropped the offset; fixed in parse.py."
    assert loaded.repairs == ()
    validate(loaded.messages)


def test_a_sub_agents_turns_are_left_out_and_counted_its_answer_kept(tmp_path: Path) -> None:
    loaded = load(run_printed().write(tmp_path))
    ids = [c.id for m in loaded.messages for c in m.tool_calls]
    assert "toolu_s1" not in ids and "toolu_03" in ids
    task_result = next(m for m in loaded.messages if m.tool_call_id == "toolu_03")
    assert task_result.content == "One caller: app.py."
    # The sub-agent's prompt, its call, the call's result and its answer: four records.
    assert loaded.skipped["subagent"] == 4
    assert not any(m.content == "Find callers" for m in loaded.messages)


def test_a_stream_of_a_sub_agent_alone_is_read(tmp_path: Path) -> None:
    p = Printer(init=False)
    p.say("msg_sub", use("toolu_s1", "Grep", pattern="x"), parent="toolu_9")
    p.results(("toolu_s1", "a.py:1: x"), parent="toolu_9")
    loaded = load(p.write(tmp_path))
    assert roles(loaded) == ["assistant", "tool"]


def test_each_messages_usage_and_model_are_recorded_the_runs_totals_kept_apart(
    tmp_path: Path,
) -> None:
    loaded = load(run_printed().write(tmp_path))
    last = loaded.messages[-1]
    usage = recorded_usage(last)
    assert usage is not None
    assert (usage.cache_read, usage.cache_write, usage.uncached, usage.output) == (
        13000,
        1200,
        4,
        25,
    )
    assert recorded_model(loaded.messages) == MODEL
    (run,) = loaded.extra["results"]
    assert run["total_cost_usd"] == 0.0912 and run["num_turns"] == 4 and "result" not in run
    assert loaded.extra["session"]["model"] == MODEL
    assert loaded.extra["session"]["tools"] == ["Task", "Bash", "Read", "Edit"]
    assert "slash_commands" not in loaded.extra["session"]
    assert loaded.skipped["result"] == 1 and loaded.skipped["system"] == 1


def test_the_persons_words_are_told_from_what_the_harness_wrote(tmp_path: Path) -> None:
    p = Printer()
    p.user("Fix the offset bug in parse.py.", isReplay=True)
    p.user("<system-reminder>\nThe user opened parse.py.\n</system-reminder>")
    p.user("Hook context: branch is main.", isSynthetic=True)
    p.user("<local-command-stdout>Compacted.</local-command-stdout>")
    p.say("msg_01", text("On it."))
    loaded = load(p.write(tmp_path))
    people = [m.content for m in loaded.messages if is_person_written(m)]
    assert people == ["Fix the offset bug in parse.py."]
    assert sum(is_synthetic(m) for m in loaded.messages) == 3


def test_partial_message_events_are_counted_not_read_twice(tmp_path: Path) -> None:
    p = Printer()
    for piece in ("The pars", "er is fine."):
        p.rows.append(
            {
                "type": "stream_event",
                "event": {"type": "content_block_delta", "delta": {"text": piece}},
                "parent_tool_use_id": None,
                "session_id": SESSION,
                "uuid": p._uuid(),
            }
        )
    p.say("msg_01", text("The parser is fine."))
    loaded = load(p.write(tmp_path))
    assert [m.content for m in loaded.messages] == ["The parser is fine."]
    assert loaded.skipped["stream_event"] == 2


def test_a_compaction_in_the_stream_is_kept_as_a_native_compaction(tmp_path: Path) -> None:
    p = run_printed()
    p.rows.append(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "session_id": SESSION,
            "uuid": p._uuid(),
            "compact_metadata": {"trigger": "auto", "pre_tokens": 155000},
        }
    )
    p.user("This session is being continued: the offset bug was fixed.", isCompactSummary=True)
    p.say("msg_05", text("Continuing."))
    loaded = load(p.write(tmp_path))
    summary = next(m for m in loaded.messages if m.content.startswith("This session"))
    assert summary.meta[BOUNDARY_KEY] == {
        "kind": "compaction",
        "agent": "claude-code",
        "trigger": "auto",
        "preTokens": 155000,
    }
    assert not is_person_written(summary)


def test_an_unanswered_call_and_a_stray_result_are_repaired_visibly(tmp_path: Path) -> None:
    p = Printer()
    p.say("msg_01", use("toolu_01", "Bash", command="pytest"))
    p.results(("toolu_77", "left over"))
    p.say("msg_02", use("toolu_02", "Bash", command="ls"))  # the run was killed here
    loaded = load(p.write(tmp_path))
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [
        ("no_result", "toolu_01"),
        ("orphan_result", "toolu_77"),
        ("no_result", "toolu_02"),
    ]
    assert loaded.messages[-1].content == NO_RESULT
    validate(loaded.messages)


def test_a_list_of_sdk_messages_saved_as_json_reads_the_same(tmp_path: Path) -> None:
    p = run_printed()
    listed = tmp_path / "messages.json"
    listed.write_text(json.dumps(p.rows))
    jsonl = load(p.write(tmp_path))
    from_list = load(listed)
    assert from_list.format == "claude-code-stream" and from_list.container == "list"
    assert [m.content for m in from_list.messages] == [m.content for m in jsonl.messages]


# -- detection ----------------------------------------------------------------------------


def test_detection_takes_the_stream_and_no_longer_hands_it_to_factory_droid(
    tmp_path: Path,
) -> None:
    path = run_printed().write(tmp_path)
    assert detect_format(path) == "claude-code-stream"
    assert not sniff_factory_droid(parse_text(path.read_text(), path))
    # Older printers: no uuid, no parent_tool_use_id; the API message still tells.
    old = Printer()
    old.rows[0].pop("uuid")
    old.rows[0].pop("claude_code_version")
    old.say("msg_01", text("Hello."))
    for row in old.rows[1:]:
        row.pop("uuid")
        row.pop("parent_tool_use_id")
    assert detect_format(old.write(tmp_path, "old.jsonl")) == "claude-code-stream"
    # Hooks print a system record each before the init record: the sniffer looks past them.
    hooked = run_printed()
    for i in range(12):
        hook = {"type": "system", "subtype": "hook_response", "session_id": SESSION}
        hooked.rows.insert(0, {**hook, "uuid": f"h{i}", "hook_name": f"SessionStart:{i}"})
    assert detect_format(hooked.write(tmp_path, "hooked.jsonl")) == "claude-code-stream"
    # A session log (sessionId, parentUuid) is still Claude Code's log.
    log = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": SESSION,
        "session_id": SESSION,
        "message": {"role": "user", "content": "hi"},
    }
    (tmp_path / "log.jsonl").write_text(json.dumps(log) + "\n")
    assert detect_format(tmp_path / "log.jsonl") == "claude-code"


def test_every_real_log_keeps_its_reader() -> None:
    logs = ROOT.parent / "shared" / "data" / "logs"
    if not logs.is_dir():
        pytest.skip(f"real logs not present at {logs}")
    droid = sorted((logs / "factory-droid").iterdir())
    assert droid and all(detect_format(p) == "factory-droid" for p in droid)
    for path in sorted(p for p in logs.rglob("*.json*") if p.is_file()):
        assert detect_format(path) not in ("claude-code-stream", "cursor-stream"), path


# -- the command line ---------------------------------------------------------------------


def test_the_cli_counts_compacts_and_takes_the_format_by_name(tmp_path: Path) -> None:
    p = Printer()
    p.user("Check every module for naive datetimes.", isReplay=True)
    for i in range(30):  # enough turns for a compaction to have something to drop
        p.say(f"msg_{i}", text(f"Module m{i}."), use(f"toolu_{i}", "Grep", pattern="datetime("))
        p.results((f"toolu_{i}", f"m{i}.py:{i}: datetime.now()\n" * 40))
    p.result()
    path = p.write(tmp_path, "ci-output.log")  # a name that says nothing
    # Read as Droid's stream, it holds no readable turn: an error naming that format.
    _, kept = read_by_the_commands(path, "claude-code-stream", "factory-droid")
    assert kept[0].role == "user"


# -- hostile input ------------------------------------------------------------------------


def test_a_truncated_last_line_and_a_line_that_is_not_json_are_skipped_and_reported(
    tmp_path: Path,
) -> None:
    p = run_printed()
    lines = p.text().splitlines()
    lines.insert(3, "Error: stream interrupted")
    cut = "\n".join(lines) + "\n" + json.dumps(p.rows[-2])[:60]
    path = tmp_path / "cut.jsonl"
    path.write_text(cut)
    loaded = load(path)
    skipped = [r for r in loaded.repairs if r.kind == "skipped_line"]
    assert [r.line for r in skipped] == [4, len(lines) + 1]
    validate(loaded.messages)
    (count,) = run_all(["count", str(path)])
    assert count.returncode == 0 and "repaired while reading" in count.stderr


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"message": "hello"}, "no 'message' object"),
        ({"message": {"role": "assistant", "content": 5}}, "expected text or a list of blocks"),
        ({"message": {"role": "assistant", "content": ["x"]}}, "list of block objects"),
    ],
)
def test_a_record_with_a_field_of_the_wrong_type_is_skipped_and_reported(
    tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    p = run_printed()
    bad = dict(p.rows[1], uuid="odd", **change)
    p.rows.insert(1, bad)
    loaded = load(p.write(tmp_path))
    (skipped,) = [x for x in loaded.repairs if x.kind == "skipped_line"]
    assert skipped.line == 2 and reason in skipped.detail
    validate(loaded.messages)


def test_a_deeply_nested_line_is_skipped_and_a_stream_of_no_turn_is_an_error(
    tmp_path: Path,
) -> None:
    p = run_printed()
    p.say("msg_deep", use("toolu_deep", "Bash", command=json.loads("[" * 600 + "]" * 600)))
    deep = p.write(tmp_path, "deep.jsonl")
    bare = Printer()
    bare.result()
    empty = bare.write(tmp_path, "empty.jsonl")
    nested, nothing, detected = run_all(
        ["count", str(deep)],
        ["count", str(empty), "--format", "claude-code-stream"],
        ["count", str(empty)],
    )
    assert nested.returncode == 0, nested.stderr
    assert "an unreadable line was skipped (JSON nested deeper" in nested.stderr
    assert "Traceback" not in nested.stderr
    assert "claude-code-stream" in one_line_error(nothing)
    assert "no messages" in one_line_error(detected)
    with pytest.raises(FormatError, match="1 result"):
        load(empty)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_field_set_to_an_odd_value_reads_or_fails_cleanly(data: st.DataObject) -> None:
    rows = json.loads(json.dumps(run_printed().rows))
    row = data.draw(st.sampled_from(rows))
    target = row
    if isinstance(row.get("message"), dict) and data.draw(st.booleans()):
        message = row["message"]
        blocks = message["content"] if isinstance(message["content"], list) else []
        target = blocks[data.draw(st.integers(0, len(blocks) - 1))] if blocks else message
    key = data.draw(st.sampled_from(sorted(target)))
    target[key] = data.draw(ODD_VALUES)
    text = "".join(json.dumps(x) + "\n" for x in rows)
    fmt = data.draw(st.sampled_from([None, "claude-code-stream"]))
    try:
        loaded = loads(text, "mutated.jsonl", format=fmt)
    except FormatError as exc:
        # The reader's own clear error, not the registry's word for a reader that crashed.
        assert "could not make sense of it" not in str(exc), exc
        return
    assert problems(loaded.messages) == []
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)


def test_the_docs_example_reads_as_described() -> None:
    page = (ROOT / "docs" / "formats.md").read_text()
    section = page[page.index("### Claude Code headless stream") :]
    example = section[section.index("```json\n") + 8 : section.index("```\n", 8)]
    loaded = loads(example, name="run.jsonl")
    assert loaded.format == "claude-code-stream"
    assert [(m.role, m.tool_call_id) for m in loaded.messages] == [
        ("assistant", None),
        ("tool", "toolu_1"),
    ]
    assert loaded.messages[0].tool_calls[0].name == "Bash"
    assert loaded.extra["results"][0]["total_cost_usd"] == 0.012
