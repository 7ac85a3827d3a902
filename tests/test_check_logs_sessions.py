"""The check's raw reader on OpenCode, Goose, Qwen Code and Continue sessions: the task as the
person typed it (never the harness's text beside it), the commands and edited files (a failed
edit edits nothing), the outputs in order; the command's facts on each; hostile files refused
by name. The fixtures are built with the same helpers as the format readers' own tests, so
both readers are held to one account of each format."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.check import UnreadableLog, facts, read_log
from compaction.check.logs import FORMATS, Log
from tests.format_cli import check_reports_facts

from . import test_formats_continue as cont
from . import test_formats_goose as goose
from . import test_formats_opencode as oc
from . import test_formats_qwen_code as qwen

Read = tuple[str, str, list[tuple[str | None, tuple[str, ...]]], list[str]]


def _read(path: Path) -> Read:
    log = read_log(path)
    return log.format, log.task, [(a.command, a.edited) for a in log.actions], list(log.outputs)


def _json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_four_formats_are_known() -> None:
    assert {"opencode", "goose", "qwen-code", "continue"} <= set(FORMATS)


# --- OpenCode -------------------------------------------------------------------------------


def test_opencode_reads_the_persons_text_not_opencodes_and_failed_edits_edit_nothing(
    tmp_path: Path,
) -> None:
    patch = "*** Begin Patch\n*** Add File: docs/notes.md\n+hi\n*** End Patch"
    export = oc.export(
        oc.user(
            "msg_u0", 0, oc.text("<system-reminder>plan mode</system-reminder>", synthetic=True)
        ),
        oc.user(
            "msg_u1",
            1,
            oc.text(oc.READ, synthetic=True),
            oc.text(oc.PERSON),
            oc.text("never sent", ignored=True),
        ),
        oc.assistant(
            "msg_a1",
            10,
            oc.STEP,
            oc.tool(
                "c1",
                "bash",
                "completed",
                input={"command": "sed -i 's/a/b/' src/x.ts"},
                output="done",
            ),
            oc.tool(
                "c2", "edit", "error", input={"filePath": "src/app.ts"}, error="oldString not found"
            ),
            oc.tool("c3", "write", "completed", input={"filePath": "src/new.ts"}, output="ok"),
            oc.tool("c4", "apply_patch", "completed", input={"patchText": patch}, output="ok"),
            oc.tool("c5", "read", "completed", input={"filePath": "a"}, output="file text"),
            oc.tool("c6", "bash", "running", input={"command": "npm test"}),
        ),
        # An API error: OpenCode never sent this message to the model again.
        oc.assistant(
            "msg_a2",
            20,
            oc.tool("c7", "bash", "completed", input={"command": "rm -rf x"}, output="gone"),
            error={"name": "APIError", "data": {"message": "overloaded"}},
        ),
    )
    assert _read(_json(tmp_path / "s.json", export)) == (
        "opencode",
        oc.PERSON,
        [
            ("sed -i 's/a/b/' src/x.ts", ("src/x.ts",)),
            (None, ()),
            (None, ("src/new.ts",)),
            (None, ("docs/notes.md",)),
            ("npm test", ()),
        ],
        ["done", "oldString not found", "ok", "ok", "file text"],
    )


def test_opencode_fixture_of_the_format_reader_reads(tmp_path: Path) -> None:
    fmt, task, actions, outputs = _read(_json(tmp_path / "s.json", oc.session()))
    assert (fmt, task) == ("opencode", oc.PERSON)
    assert (None, ("src/app.ts",)) in actions and outputs


# --- Goose ----------------------------------------------------------------------------------


def _goose_run() -> list[dict[str, Any]]:
    return [
        goose.msg(
            "user", 0, goose.text("<context>open files: a.py</context>"), meta=goose.AGENT_ONLY
        ),
        goose.msg("user", 1, goose.text(goose.PERSON)),
        goose.msg(
            "assistant", 2, goose.request("c1", "developer__shell", command="echo x > out.txt")
        ),
        goose.msg(
            "user",
            3,
            goose.response("c1", goose.for_("assistant", "ran"), goose.for_("user", "SCREEN COPY")),
        ),
        goose.msg(
            "assistant",
            4,
            goose.request(
                "c2", "developer__text_editor", command="write", path="a.py", file_text="x"
            ),
        ),
        goose.msg("user", 5, goose.response("c2", goose.text("wrote a.py"))),
        goose.msg(
            "assistant",
            6,
            goose.request("c3", "developer__text_editor", command="str_replace", path="b.py"),
        ),
        goose.msg("user", 7, goose.response("c3", error="-32603: no match")),
        goose.msg(
            "assistant",
            8,
            goose.request("c4", "developer__text_editor", command="view", path="c.py"),
        ),
        goose.msg("user", 9, goose.response("c4", goose.text("c text"))),
        goose.msg("assistant", 10, goose.request("c5", "developer__write", path="d.py")),
        goose.msg("user", 11, goose.response("c5", goose.text("ok"))),
    ]


_GOOSE_READ: Read = (
    "goose",
    goose.PERSON,
    [
        ("echo x > out.txt", ("out.txt",)),
        (None, ("a.py",)),
        (None, ()),
        (None, ("d.py",)),
    ],
    ["ran", "wrote a.py", "-32603: no match", "c text", "ok"],
)


def test_goose_jsonl_and_export_read_alike_and_agent_only_text_is_never_the_task(
    tmp_path: Path,
) -> None:
    run = _goose_run()
    assert _read(_jsonl(tmp_path / "s.jsonl", [goose.METADATA, *run])) == _GOOSE_READ
    export = {"id": "1", "working_dir": "/w", "name": "n", "message_count": 12, "conversation": run}
    assert _read(_json(tmp_path / "s.json", export)) == _GOOSE_READ


def test_goose_a_tool_result_marked_an_error_edits_nothing(tmp_path: Path) -> None:
    run = _goose_run()
    failed = {"status": "success", "value": {"content": [goose.text("denied")], "isError": True}}
    run[5]["content"][0]["toolResult"] = failed
    _, _, actions, _ = _read(_jsonl(tmp_path / "s.jsonl", [goose.METADATA, *run]))
    assert actions[1] == (None, ())


# --- Qwen Code ------------------------------------------------------------------------------


def test_qwen_reads_the_person_on_the_active_chain_and_failed_edits_edit_nothing(
    tmp_path: Path,
) -> None:
    r = qwen.Recorder()
    r.system("session_source", {"sourceType": "cli"})
    r.user("/init")
    r.system("slash_command", {"phase": "result", "rawCommand": "/init"})
    r.user(
        "<task-notification>done</task-notification>", subtype="notification", provenance="system"
    )
    r.user(
        "<system-reminder>Plan mode.</system-reminder>",
        "Fix the tz bug in dates.py",
        "<qwen:user-prompt-submit-context>hook said hi",
    )
    r.model(qwen.call("k1", "run_shell_command", command="pytest -q"))
    fork = r.result("k1", "run_shell_command", {"output": "1 failed"})
    # Rewound: a record below re-roots the chain on ``fork``, leaving these on a dead branch.
    r.model(qwen.call("k2", "run_shell_command", command="rm -rf /tmp/gone"))
    r.result("k2", "run_shell_command", {"output": "REWOUND AWAY"})
    r.user("rewound request")
    r.model(qwen.call("k3", "write_file", file_path="dates.py", content="x"), parentUuid=fork)
    r.result("k3", "write_file", {"output": "wrote"})
    r.model(qwen.call("k4", "edit", file_path="util.py"))
    r.result(
        "k4",
        "edit",
        {"error": "0 occurrences found"},
        toolCallResult={"callId": "k4", "status": "error"},
    )
    r.model(qwen.call("k5", "run_shell_command", command="tee log.txt"))
    r.result("k5", "run_shell_command", {"output": "x"})
    r.model(qwen.call("k6", "edit", file_path="z.py"))
    r.result("k6", "edit", {"error": "denied"})
    assert _read(r.write(tmp_path)) == (
        "qwen-code",
        "Fix the tz bug in dates.py",
        [
            ("pytest -q", ()),
            (None, ("dates.py",)),
            (None, ()),
            ("tee log.txt", ("log.txt",)),
            (None, ()),
        ],
        ["1 failed", "wrote", "0 occurrences found", "x", "denied"],
    )


def test_qwen_a_lost_parent_is_bridged_to_the_record_before(tmp_path: Path) -> None:
    r = qwen.session()
    r.rows[-1]["parentUuid"] = "lost-in-a-cut-line"
    fmt, task, actions, outputs = _read(r.write(tmp_path))
    assert (fmt, task) == ("qwen-code", "The date parser drops the timezone; find out why.")
    assert actions == [("pytest tests/test_dates.py", ())]
    assert outputs == ["E   AssertionError: tzinfo is None"]


# --- Continue -------------------------------------------------------------------------------


def test_continue_reads_the_typed_words_not_the_context_items(tmp_path: Path) -> None:
    term = cont.tool_call("t1", "builtin_run_terminal_command", command="pytest -q > out.log")
    edit = cont.tool_call("t2", "edit_existing_file", filepath="src/dates.py")
    new = cont.tool_call("t3", "create_new_file", filepath="src/tz.py", contents="x")
    write = cont.tool_call("t4", "Write", filepath="notes.md", content="x")
    cancelled = cont.tool_call("t5", "single_find_and_replace", filepath="src/a.py")
    session = cont.saved(
        [
            cont.user("", ("rules", "Always answer in French.")),
            cont.user("Why does parse() drop the tz?", ("dates.py", "def parse(s): ...")),
            cont.assistant(
                "Running.",
                term,
                edit,
                new,
                states=[
                    cont.state(term, "done", "1 failed"),
                    cont.state(edit, "errored"),
                    cont.state(new, "done", "created"),
                ],
            ),
            cont.tool_item("t1", "1 failed (the same result, kept twice)"),
            cont.assistant("", write, cancelled, states=[cont.state(cancelled, "canceled")]),
            cont.tool_item("t4", "wrote notes.md"),
        ]
    )
    assert _read(_json(tmp_path / "s.json", session)) == (
        "continue",
        "Why does parse() drop the tz?",
        [
            ("pytest -q > out.log", ("out.log",)),
            (None, ()),
            (None, ("src/tz.py",)),
            (None, ("notes.md",)),
            (None, ()),
        ],
        ["1 failed", "created", "wrote notes.md"],
    )


def test_continue_calls_without_ids_are_each_read(tmp_path: Path) -> None:
    first = cont.tool_call("x", "run_terminal_command", command="make")
    second = cont.tool_call("y", "Bash", command="echo ok > done.txt")
    del first["id"], second["id"]
    session = cont.saved([cont.user("build it"), cont.assistant("", first, second)])
    _, _, actions, _ = _read(_json(tmp_path / "s.json", session))
    assert actions == [("make", ()), ("echo ok > done.txt", ("done.txt",))]


# --- through the command --------------------------------------------------------------------

BIG = "\n".join(f"line {n}: value = compute(value, {n})" for n in range(150))
TASK = "Fix ticket INV-7 in src/billing/invoice.py; the cap is $500."
STEPS = 24


def _opencode_big(tmp_path: Path) -> Path:
    parts = [
        oc.tool(f"c{i}", "bash", "completed", input={"command": f"cat src/mod_{i}.py"}, output=BIG)
        for i in range(STEPS)
    ]
    parts.append(
        oc.tool(
            "e",
            "edit",
            "completed",
            input={"filePath": "src/billing/invoice.py"},
            output="Edit applied",
        )
    )
    messages = [oc.user("msg_u1", 0, oc.text(TASK))]
    for i, part in enumerate(parts):
        messages.append(
            oc.assistant(
                f"msg_a{i}",
                10 * (i + 1),
                oc.STEP,
                oc.text(f"step {i}"),
                part,
                oc.finish(0.01, oc.tokens(100 + 900 * i, 20, 0, 0)),
            )
        )
    return _json(tmp_path / "opencode.json", oc.export(*messages))


def _goose_big(tmp_path: Path) -> Path:
    run = [goose.msg("user", 0, goose.text(TASK))]
    for i in range(STEPS):
        run.append(
            goose.msg(
                "assistant",
                2 * i + 1,
                goose.text(f"step {i}"),
                goose.request(f"c{i}", "developer__shell", command=f"cat m{i}.py"),
            )
        )
        run.append(goose.msg("user", 2 * i + 2, goose.response(f"c{i}", goose.text(BIG))))

    return _jsonl(tmp_path / "goose.jsonl", [goose.METADATA, *run])


def _qwen_big(tmp_path: Path) -> Path:
    r = qwen.Recorder()
    r.user(TASK)
    for i in range(STEPS):
        r.model(
            {"text": f"step {i}"}, qwen.call(f"k{i}", "run_shell_command", command=f"cat m{i}.py")
        )
        r.result(f"k{i}", "run_shell_command", {"output": BIG})

    return r.write(tmp_path, "qwen.jsonl")


def _continue_big(tmp_path: Path) -> Path:
    history = [cont.user(TASK, ("open file", "x = 1"))]
    for i in range(STEPS):
        call = cont.tool_call(f"t{i}", "run_terminal_command", command=f"cat m{i}.py")
        history.append(cont.assistant(f"step {i}", call, states=[cont.state(call, "done", BIG)]))
    return _json(tmp_path / "continue.json", cont.saved(history))


def test_the_command_reports_facts_for_each_format(tmp_path: Path) -> None:
    makers: list[Callable[[Path], Path]] = [_opencode_big, _goose_big, _qwen_big, _continue_big]
    paths = [make(tmp_path) for make in makers]
    for path in paths:
        assert read_log(path).task == TASK
    check_reports_facts(paths, tmp_path)


# --- hostile input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        (
            "a.json",
            json.dumps(
                {
                    "info": {"id": "s"},
                    "messages": [
                        {"info": {"role": "user"}, "parts": []},
                        {"info": {}, "parts": "x"},
                    ],
                }
            ),
            r"messages\[1\]: expected an object with 'info' and 'parts'",
        ),
        (
            "a.json",
            json.dumps(oc.export(oc.user("u", 0, oc.text("only mine", synthetic=True)))),
            "no message a person typed",
        ),
        ("a.json", json.dumps(oc.session())[:300], "not JSON"),
        (
            "a.json",
            json.dumps({"id": "1", "conversation": [goose.msg("user", 0, goose.text("hi")), 7]}),
            "message 1: expected an object with a 'content' list",
        ),
        (
            "a.jsonl",
            "\n".join(
                json.dumps(m)
                for m in [
                    goose.METADATA,
                    goose.msg("user", 0, goose.text("x"), meta=goose.AGENT_ONLY),
                ]
            ),
            "no message a person typed",
        ),
        (
            "a.json",
            json.dumps(cont.saved([cont.user("", ("ctx", "only context"))])),
            "no message a person typed",
        ),
        (
            "a.json",
            json.dumps(cont.saved([cont.user("hi"), {"message": "oops"}])),
            "expected an object with a 'message'",
        ),
        (
            "a.jsonl",
            "\n".join(json.dumps(r) for r in qwen.session().rows[:1]),
            "no message a person typed",
        ),
    ],
)
def test_a_hostile_session_is_refused_with_its_reason(
    tmp_path: Path, name: str, content: str, reason: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(UnreadableLog, match=reason):
        read_log(path)


def test_a_truncated_jsonl_line_is_passed_over(tmp_path: Path) -> None:
    r = qwen.session()
    text = r.text()
    path = tmp_path / "s.jsonl"
    path.write_text(text + text.splitlines()[2][:40] + "\n")
    assert read_log(path).task == "The date parser drops the timezone; find out why."


_KEYS = [
    "info",
    "messages",
    "parts",
    "role",
    "type",
    "text",
    "synthetic",
    "tool",
    "state",
    "status",
    "input",
    "output",
    "error",
    "conversation",
    "content",
    "created",
    "metadata",
    "userVisible",
    "toolCall",
    "toolResult",
    "value",
    "name",
    "arguments",
    "uuid",
    "parentUuid",
    "sessionId",
    "message",
    "functionCall",
    "functionResponse",
    "subtype",
    "systemPayload",
    "history",
    "workspaceDirectory",
    "toolCalls",
    "toolCallStates",
    "function",
    "id",
    "toolCallId",
    "message_count",
    "working_dir",
]
_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_value, min_size=1, max_size=5), st.sampled_from(["a.jsonl", "a.json"]))
def test_any_session_shaped_json_is_read_or_refused_never_a_crash(
    tmp_path_factory: pytest.TempPathFactory, values: list[Any], name: str
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / name
    if name.endswith(".jsonl"):
        path.write_text("\n".join(json.dumps(v) for v in values))
    else:
        path.write_text(json.dumps(values[0]))
    try:
        log = read_log(path)
    except UnreadableLog as exc:
        assert exc.reason
    else:
        assert isinstance(log, Log) and log.task
        facts(log)


def _sessions() -> list[tuple[str, Any]]:
    """One valid session of each format, as (file name, JSON value or JSONL rows)."""
    return [
        ("o.json", oc.session()),
        ("g.jsonl", [goose.METADATA, *_goose_run()]),
        ("q.jsonl", qwen.session().rows),
        ("c.json", cont.extension_session()),
    ]


def _places(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value`` (keys and indexes), the root's own included."""
    out = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _places(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _places(item, (*at, index))
    return out


_ODD = st.sampled_from([None, 0, -1, 1.5, True, "", "x", [], {}, [1], {"a": 1}, "/init"])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.integers(0, 10_000), _ODD)
def test_a_session_with_any_field_set_to_an_odd_value_is_read_or_refused(
    tmp_path_factory: pytest.TempPathFactory, which: int, pick: int, odd: Any
) -> None:
    name, value = _sessions()[which]
    places = [p for p in _places(value) if p]
    where = places[pick % len(places)]
    parent = value
    for step in where[:-1]:
        parent = parent[step]
    parent[where[-1]] = odd
    path = tmp_path_factory.mktemp("odd") / name
    if name.endswith(".jsonl"):
        _jsonl(path, value)
    else:
        _json(path, value)
    try:
        log = read_log(path)
    except UnreadableLog as exc:
        assert exc.reason
    else:
        assert log.task and all(isinstance(o, str) for o in log.outputs)
        facts(log)
