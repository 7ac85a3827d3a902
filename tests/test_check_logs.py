"""The check's own reader of raw agent logs (``compaction.check.logs``), one shape at a time.

Small logs written here in each agent's raw shape pin what is read (the task as the person
wrote it, the commands, the files edited, the outputs in order), so these run without the
shared data; ``tests/test_check_logs_real.py`` compares the reader with every shared log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.check import UnreadableLog, facts, read_log
from compaction.check.logs import Log


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _read(path: Path) -> tuple[str, str, list[tuple[str | None, tuple[str, ...]]], list[str]]:
    log = read_log(path)
    return log.format, log.task, [(a.command, a.edited) for a in log.actions], list(log.outputs)


def _codex(kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": "2025-01-01T00:00:00Z", "type": kind, "payload": payload}


def test_codex_reads_the_request_under_the_ide_context_and_patches_that_applied(
    tmp_path: Path,
) -> None:
    patch = "*** Begin Patch\n*** Update File: go.mod\n@@\n-go 1.23\n+go 1.24\n*** End Patch"
    records = [
        _codex("session_meta", id="s", cwd="/p"),
        _codex(
            "response_item",
            type="message",
            role="user",
            content=[{"type": "input_text", "text": "<environment_context>\n  <cwd>/p</cwd>"}],
        ),
        _codex(
            "response_item",
            type="message",
            role="user",
            content=[
                {"type": "input_text", "text": "# Context\n\n## My request for Codex:\nfix go.mod"}
            ],
        ),
        _codex(
            "response_item",
            type="function_call",
            name="shell",
            call_id="a",
            arguments=json.dumps({"command": ["bash", "-lc", "sed -n 1p go.mod"]}),
        ),
        _codex(
            "response_item",
            type="function_call_output",
            call_id="a",
            output=json.dumps({"output": "go 1.23", "metadata": {"exit_code": 0}}),
        ),
        _codex(
            "response_item",
            type="function_call",
            name="shell",
            call_id="b",
            arguments=json.dumps({"command": ["bash", "-lc", f"applypatch <<'P'\n{patch}\nP"]}),
        ),
        _codex("response_item", type="function_call_output", call_id="b", output="Success."),
        _codex(
            "response_item",
            type="custom_tool_call",
            name="apply_patch",
            call_id="c",
            input=patch.replace("go.mod", "x.go"),
        ),
        _codex(
            "response_item",
            type="custom_tool_call_output",
            call_id="c",
            output=json.dumps({"output": "context mismatch", "metadata": {"exit_code": 1}}),
        ),
        _codex(
            "event_msg", type="patch_apply_end", call_id="d", success=True, changes={"/p/y.md": {}}
        ),
        _codex(
            "event_msg", type="patch_apply_end", call_id="e", success=False, changes={"/p/z": {}}
        ),
    ]
    fmt, task, actions, outputs = _read(_jsonl(tmp_path / "rollout.jsonl", records))
    assert (fmt, task) == ("codex", "fix go.mod")
    assert actions == [
        ("sed -n 1p go.mod", ()),
        (f"applypatch <<'P'\n{patch}\nP", ("go.mod",)),
        (None, ()),  # the patch that failed to apply edited nothing
        (None, ("/p/y.md",)),
    ]
    assert outputs == ["go 1.23", "Success.", "context mismatch"]


def test_copilot_reads_what_the_person_typed_not_the_transformed_text(tmp_path: Path) -> None:
    def event(kind: str, **data: Any) -> dict[str, Any]:
        return {"type": kind, "data": data, "id": kind, "timestamp": "2026-01-01T00:00:00Z"}

    records = [
        event("session.start", sessionId="s"),
        event("user.message", content="fix app.py", transformedContent="<current_datetime>x"),
        event(
            "assistant.message",
            content="",
            toolRequests=[
                {"toolCallId": "1", "name": "bash", "arguments": {"command": "pytest -x"}},
                {"toolCallId": "2", "name": "edit", "arguments": {"path": "app.py"}},
                {"toolCallId": "3", "name": "create", "arguments": {"path": "new.py"}},
            ],
        ),
        event(
            "tool.execution_complete", toolCallId="1", success=True, result={"content": "1 failed"}
        ),
        event("tool.execution_complete", toolCallId="2", success=True, result={"content": "ok"}),
        event(
            "tool.execution_complete", toolCallId="3", success=False, error={"message": "exists"}
        ),
        event("user.message", content="", transformedContent="You have not yet marked the task"),
    ]
    fmt, task, actions, outputs = _read(_jsonl(tmp_path / "events.jsonl", records))
    assert (fmt, task) == ("copilot-cli", "fix app.py")
    assert actions == [("pytest -x", ()), (None, ("app.py",)), (None, ())]
    assert outputs == ["1 failed", "ok", "exists"]


def _gemini_call(name: str, args: dict[str, Any], output: str, status: str = "success") -> Any:
    response = {"functionResponse": {"id": name, "name": name, "response": {"output": output}}}
    return {"id": name, "name": name, "args": args, "result": [response], "status": status}


def test_gemini_jsonl_replays_rewrites_and_rewinds_and_skips_the_cli_s_own_text(
    tmp_path: Path,
) -> None:
    init = "You are an AI agent that brings the power of Gemini directly into the terminal. Go."
    records = [
        {"sessionId": "s", "projectHash": "h", "startTime": "t"},
        {"id": "u0", "type": "user", "content": [{"text": init}]},
        {"id": "i", "type": "info", "content": "Request cancelled."},
        {"id": "u1", "type": "user", "content": [{"text": "System: Please continue."}]},
        {"id": "u2", "type": "user", "content": [{"text": "use uv run in GEMINI.md"}]},
        {"id": "g1", "type": "gemini", "content": ""},
        {"$set": {"lastUpdated": "t"}},
        {
            "id": "g1",
            "type": "gemini",
            "content": "",
            "toolCalls": [
                _gemini_call("run_shell_command", {"command": "ls > out.txt"}, "listed"),
                _gemini_call("replace", {"file_path": "GEMINI.md"}, "replaced"),
                _gemini_call("write_file", {"file_path": "bad.md"}, "denied", "error"),
            ],
        },
        {
            "id": "g2",
            "type": "gemini",
            "content": "",
            "toolCalls": [_gemini_call("write_file", {"file_path": "gone.md"}, "x")],
        },
        {"$rewindTo": "g2"},
    ]
    fmt, task, actions, outputs = _read(_jsonl(tmp_path / "session.jsonl", records))
    assert (fmt, task) == ("gemini-cli", "use uv run in GEMINI.md")
    assert actions == [("ls > out.txt", ("out.txt",)), (None, ("GEMINI.md",)), (None, ())]
    assert outputs == ["listed", "replaced", "denied"]


def test_gemini_json_session(tmp_path: Path) -> None:
    session = {
        "sessionId": "s",
        "projectHash": "h",
        "messages": [
            {"id": "1", "type": "user", "content": "Read the package.json file"},
            {
                "id": "2",
                "type": "gemini",
                "content": "ok",
                "toolCalls": [_gemini_call("read_file", {"file_path": "package.json"}, "{}")],
            },
        ],
    }
    path = tmp_path / "session.json"
    path.write_text(json.dumps(session))
    assert _read(path) == ("gemini-cli", "Read the package.json file", [], ["{}"])


def test_mini_swe_agent_2_bare_list_fences_and_tool_calls(tmp_path: Path) -> None:
    fence = "look\n\n```mswea_bash_command\nsed -i 's/a/b/' t.py\n```"
    bare = [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "Please solve this issue: t.py fails"},
        {"role": "assistant", "content": fence},
        {"role": "user", "content": "<returncode>0</returncode>"},
        {
            "role": "assistant",
            "content": "two\n```mswea_bash_command\nls\n```\n```mswea_bash_command\npwd\n```",
        },
        {"role": "user", "content": "Please always provide EXACTLY ONE action"},
        {"role": "exit", "content": "diff", "extra": {"exit_status": "Submitted"}},
    ]
    path = tmp_path / "bare.traj.json"
    path.write_text(json.dumps(bare))
    assert _read(path) == (
        "mini-swe-agent",
        "Please solve this issue: t.py fails",
        [("sed -i 's/a/b/' t.py", ("t.py",))],
        ["<returncode>0</returncode>", "Please always provide EXACTLY ONE action"],
    )
    call = {"function": {"name": "bash", "arguments": json.dumps({"command": "echo x > f.py"})}}
    tools = {
        "info": {"mini_version": "2.0.0"},
        "messages": [
            {"role": "user", "content": "<pr_description>\nfix f.py\n</pr_description>\nrules"},
            {"role": "assistant", "content": "I'll write it", "tool_calls": [call]},
            {"role": "tool", "content": "<returncode>0</returncode>", "tool_call_id": "c"},
            {"role": "exit", "content": "diff"},
        ],
    }
    path.write_text(json.dumps(tools))
    assert _read(path) == (
        "mini-swe-agent",
        "\nfix f.py\n",
        [("echo x > f.py", ("f.py",))],
        ["<returncode>0</returncode>"],
    )


def test_openhands_events_and_eval_records(tmp_path: Path) -> None:
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "make game.py"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "pytest"}},
        {"id": 2, "source": "agent", "cause": 1, "observation": "run", "content": "FAILED t.py::x"},
        {"id": 3, "source": "agent", "action": "edit", "args": {"path": "/w/game.py"}},
        {"id": 4, "source": "agent", "cause": 3, "observation": "edit", "content": "edited"},
        {"id": 5, "source": "agent", "action": "edit", "args": {"path": "/w/no.py"}},
        {"id": 6, "source": "agent", "cause": 5, "observation": "error", "content": "no match"},
    ]
    path = tmp_path / "traj.json"
    path.write_text(json.dumps(events))
    assert _read(path) == (
        "openhands",
        "make game.py",
        [("pytest", ()), (None, ("/w/game.py",)), (None, ())],
        ["FAILED t.py::x", "edited", "no match"],
    )
    instruction = "Please fix\n\n# Problem Statement\nAdd a LICENSE\n\nIMPORTANT: never ask"
    skills = "edit_file_by_replace('/w/App.tsx', to_replace='a', new_content='b')"
    record = {
        "instruction": instruction,
        "history": [
            {"content": instruction, "action": "message"},
            {"command": "touch LICENSE", "action": "run"},
            {"content": "$ ", "command": "touch LICENSE", "observation": "run"},
            {"code": skills, "action": "run_ipython"},
            {
                "content": "[Your proposed edit has introduced new syntax error(s).",
                "observation": "run_ipython",
            },
            {"code": skills.replace("App", "Ok"), "action": "run_ipython"},
            {
                "content": "[File: /w/Ok.tsx (3 lines total after edit)]",
                "observation": "run_ipython",
            },
        ],
    }
    second = {"instruction": "x", "history": [{"command": "ls", "action": "run"}]}
    fmt, task, actions, outputs = _read(_jsonl(tmp_path / "output.jsonl", [record, second]))
    assert (fmt, task) == ("openhands", "Add a LICENSE")
    assert actions == [("touch LICENSE", ()), (None, ()), (None, ("/w/Ok.tsx",)), ("ls", ())]
    assert outputs[0] == "$ " and len(outputs) == 3


def test_cursor_reads_inside_the_user_query_wrapper(tmp_path: Path) -> None:
    def line(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
        return {"role": role, "message": {"content": list(blocks)}}

    records = [
        line(
            "user",
            {
                "type": "text",
                "text": "<user_info>os</user_info>\n<user_query>\nrun ls\n</user_query>",
            },
        ),
        line("assistant", {"type": "tool_use", "name": "Shell", "input": {"command": "ls -la"}}),
        line("assistant", {"type": "tool_use", "name": "StrReplace", "input": {"path": "a.py"}}),
        line("user", {"type": "tool_result", "content": "a.py"}),
    ]
    assert _read(_jsonl(tmp_path / "t.jsonl", records)) == (
        "cursor",
        "run ls",
        [("ls -la", ()), (None, ("a.py",))],
        ["a.py"],
    )


def test_factory_droid_stream_json(tmp_path: Path) -> None:
    records = [
        {"type": "system", "model": "m", "tools": []},
        {
            "type": "message",
            "role": "user",
            "text": "<system-reminder>be safe</system-reminder>\nDo thing",
        },
        {
            "type": "tool_call",
            "toolCallId": "1",
            "toolName": "Execute",
            "parameters": {"command": "echo hi"},
        },
        {"type": "tool_result", "toolCallId": "1", "value": {"stdout": "hi\n", "exitCode": 0}},
        {
            "type": "tool_call",
            "toolCallId": "2",
            "toolName": "Edit",
            "parameters": {"file_path": "a.py"},
        },
        {"type": "tool_result", "toolCallId": "2", "value": "not found", "isError": True},
        {"type": "completion", "finalText": "Done"},
    ]
    assert _read(_jsonl(tmp_path / "droid.jsonl", records)) == (
        "factory-droid",
        "Do thing",
        [("echo hi", ()), (None, ())],
        ["hi\n", "not found"],
    )


def test_the_facts_of_a_new_format_come_from_what_it_read(tmp_path: Path) -> None:
    records = [
        {"type": "message", "role": "user", "text": "Fix src/app.py for #4521"},
        {
            "type": "tool_call",
            "toolCallId": "1",
            "toolName": "Execute",
            "parameters": {"command": "pytest -q"},
        },
        {
            "type": "tool_result",
            "toolCallId": "1",
            "value": "FAILED tests/t.py::test_x\nValueError: bad",
        },
    ]
    found = {(f.kind, f.answer) for f in facts(read_log(_jsonl(tmp_path / "d.jsonl", records)))}
    assert found == {
        ("task id", "src/app.py"),
        ("task id", "#4521"),
        ("failing test", "tests/t.py::test_x"),
        ("error type", "ValueError"),
        ("last command", "pytest -q"),
    }


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("a.jsonl", "not json\n{also not\n", "no line of the file is a JSON object"),
        ("a.json", "{truncated", "not JSON"),
        ("a.json", json.dumps({"something": "else"}), "not a log of a format this reader knows"),
        ("a.json", json.dumps([1, 2, 3]), "not a log of a format this reader knows"),
        (
            "a.jsonl",
            json.dumps({"type": "user.message", "data": {"content": ""}}),
            "no message a person typed",
        ),
        (
            "a.jsonl",
            json.dumps({"type": "event_msg", "payload": {"type": "token_count"}}),
            "no message a person typed",
        ),
        (
            "a.json",
            json.dumps({"sessionId": "s", "messages": [{"type": "user", "content": "/help"}]}),
            "no message a person typed",
        ),
        (
            "a.traj.json",
            json.dumps([{"role": "system", "content": "x"}, {"role": "exit"}]),
            "no user message",
        ),
        ("chat.json", json.dumps([{"role": "user", "content": "hi"}]), "not an agent log"),
    ],
)
def test_a_log_of_the_wrong_shape_is_refused_with_its_reason(
    tmp_path: Path, name: str, content: str, reason: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(UnreadableLog, match=reason):
        read_log(path)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["type", "payload", "data", "role", "message", "content", "history", "messages",
         "toolCalls", "toolRequests", "action", "observation", "args", "id", "cause", "$set",
         "$rewindTo", "sessionId", "projectHash", "text", "tool_calls", "function", "name",
         "arguments", "command", "result", "value", "toolName", "parameters"]
    ) | st.text(max_size=5), inner, max_size=5),
    max_leaves=25,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(_json, min_size=1, max_size=6), st.sampled_from(["a.jsonl", "a.json", "a.traj"]))
def test_any_json_is_read_or_refused_never_a_crash(
    tmp_path_factory: pytest.TempPathFactory, values: list[Any], name: str
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / name
    if name.endswith(".jsonl"):
        path.write_text("\n".join(json.dumps(v) for v in values))
    else:
        path.write_text(json.dumps(values[0] if len(values) == 1 else values))
    try:
        log = read_log(path)
    except UnreadableLog as exc:
        assert exc.reason
    else:
        assert isinstance(log, Log) and isinstance(log.task, str) and log.task
        facts(log)


def test_an_unclosed_fence_is_no_action_and_many_of_them_are_read_in_one_pass(
    tmp_path: Path,
) -> None:
    content = "```mswea_bash_command\necho\n" * 50_000
    path = tmp_path / "big.traj.json"
    path.write_text(
        json.dumps([{"role": "user", "content": "t"}, {"role": "assistant", "content": content}])
    )
    assert read_log(path).actions == ()


def test_cline_reads_the_task_xml_and_native_calls_and_text_results(tmp_path: Path) -> None:
    def user(*texts: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}

    def says(text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": [{"type": "text", "text": text}]}

    env = "<environment_details>\n# VSCode Visible Files\nsrc/x.cs\n</environment_details>"
    history = [
        user("<task>\nFix the build in src/x.cs\n</task>", env),
        says("<execute_command>\n<command>dotnet build</command>\n</execute_command>"),
        user("[execute_command for 'dotnet build'] Result:", "error CS1002", env),
        says("<write_to_file>\n<path>src/x.cs</path>\n<content>x</content>\n</write_to_file>"),
        user("[write_to_file for 'src/x.cs'] Result:", "The user denied this operation.", env),
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t",
                    "name": "replace_in_file",
                    "input": {"path": "src/y.cs"},
                }
            ],
        },
        user("[replace_in_file for 'src/y.cs'] Result:\nok", env),
    ]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(history))
    assert _read(path) == (
        "cline",
        "Fix the build in src/x.cs",
        [("dotnet build", ()), (None, ()), (None, ("src/y.cs",))],
        [
            "[execute_command for 'dotnet build'] Result:\nerror CS1002",
            "[write_to_file for 'src/x.cs'] Result:\nThe user denied this operation.",
            "[replace_in_file for 'src/y.cs'] Result:\nok",
        ],
    )


def test_claude_code_web_export(tmp_path: Path) -> None:
    lines = [
        {"type": "user", "message": {"role": "user", "content": "fix a.py"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "1", "name": "Bash", "input": {"command": "pytest"}}
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "1", "content": "ok"}],
            },
        },
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"loglines": lines}))
    assert _read(path) == ("claude-code", "fix a.py", [("pytest", ())], ["ok"])
