"""The check's log reader against every shared agent log, each raw file parsed here by hand.

For each format the test reads the raw records itself (no code of ``compaction``) and compares
the task, the commands and the outputs the reader gives. Skips when ../shared/data is absent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from compaction.check import UnreadableLog, read_log

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT.parent / "shared" / "data" / "logs"
TRANSCRIPTS = ROOT.parent / "shared" / "data" / "transcripts"


def _path(relative: str) -> Path:
    path = LOGS / relative
    if not path.is_file():
        pytest.skip(f"shared log not present: {path}")
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _commands(path: Path) -> list[str]:
    return [a.command for a in read_log(path).actions if a.command is not None]


def test_every_shared_log_and_transcript_is_read() -> None:
    files = [
        p
        for root in (LOGS, TRANSCRIPTS)
        if root.is_dir()
        for p in root.rglob("*")
        if p.suffix in (".json", ".jsonl", ".traj")
    ]
    if not files:
        pytest.skip("shared data not present")
    refused = {}
    for path in files:
        try:
            log = read_log(path)
        except UnreadableLog as exc:
            refused[path.name] = exc.reason
        else:
            assert log.task.strip(), path
    assert refused == {}


@pytest.mark.parametrize(
    "name",
    ["codex/VibeCodingTracker__codex.jsonl", "codex/agent-history__session_with_compaction.jsonl"],
)
def test_codex(name: str) -> None:
    path = _path(name)
    items = [r["payload"] for r in _lines(path) if r["type"] == "response_item"]
    users = [
        i["content"][0]["text"]
        for i in items
        if i["type"] == "message" and i["role"] == "user"
        if not i["content"][0]["text"].startswith("<environment_context>")
    ]
    task = users[0].split("## My request for Codex:")[-1].strip()
    commands = []
    for i in items:
        if i["type"] == "function_call" and i["name"] == "shell":
            command = json.loads(i["arguments"])["command"]
            commands.append(command[2] if isinstance(command, list) else command)
    outputs = []
    for i in items:
        if i["type"].endswith("call_output"):
            try:
                outputs.append(json.loads(i["output"])["output"])
            except ValueError:
                outputs.append(i["output"])
    log = read_log(path)
    assert (log.format, log.task) == ("codex", task)
    assert _commands(path) == commands and len(commands) >= 2
    assert list(log.outputs) == outputs


def test_codex_edits_are_the_patches_that_applied() -> None:
    path = _path("codex/VibeCodingTracker__codex.jsonl")
    edited = [f for a in read_log(path).actions for f in a.edited]
    patched = re.findall(r"\*\*\* (?:Add|Update) File: ([^\\\n]+)", path.read_text())
    assert {"go.mod", "README.zh-TW.md", "README.zh-CN.md", ".python-version"} <= set(patched)
    assert set(patched) <= set(edited)
    assert not any("should_not_count" in f for f in edited)  # its patch_apply_end failed


def test_copilot_cli() -> None:
    path = _path("copilot-cli/VibeCodingTracker__copilot.jsonl")
    records = _lines(path)
    task = next(r["data"]["content"] for r in records if r["type"] == "user.message")
    commands = [
        t["arguments"]["command"]
        for r in records
        if r["type"] == "assistant.message"
        for t in r["data"].get("toolRequests", [])
        if t["name"] == "bash"
    ]
    outputs = [
        r["data"]["result"]["content"] for r in records if r["type"] == "tool.execution_complete"
    ]
    log = read_log(path)
    assert (log.format, log.task) == ("copilot-cli", task)
    assert "<current_datetime>" not in log.task
    assert _commands(path) == commands and len(commands) == 2
    assert list(log.outputs) == outputs and len(outputs) == 13


def _gemini_messages(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".json":
        return list(json.loads(path.read_text())["messages"])
    latest: dict[str, dict[str, Any]] = {}
    for record in _lines(path):
        if "type" in record and "id" in record:
            latest[record["id"]] = record  # a later write of the same id replaces it
    return list(latest.values())


@pytest.mark.parametrize(
    ("name", "task"),
    [
        ("gemini-cli/agent-history__gemini_golden.json", "Read the package.json file"),
        ("gemini-cli/VibeCodingTracker__gemini.jsonl", None),
    ],
)
def test_gemini_cli(name: str, task: str | None) -> None:
    path = _path(name)
    messages = _gemini_messages(path)
    typed = [m["content"] for m in messages if m["type"] == "user"]
    typed = [t if isinstance(t, str) else t[0]["text"] for t in typed]
    if task is None:  # the CLI's /init prompt and its "Please continue." are not the person's
        assert typed[0].lstrip().startswith("You are an AI agent") and typed[1].startswith(
            "System:"
        )
        task = typed[2]
    calls = [c for m in messages if m["type"] == "gemini" for c in m.get("toolCalls", [])]
    outputs = [r["functionResponse"]["response"]["output"] for c in calls for r in c["result"]]
    edits = [c["args"]["file_path"] for c in calls if c["name"] in ("write_file", "replace")]
    log = read_log(path)
    assert (log.format, log.task) == ("gemini-cli", task)
    assert list(log.outputs) == outputs
    assert [f for a in log.actions for f in a.edited] == edits


def test_mini_swe_agent_2_bare_list() -> None:
    path = _path("mini-swe-agent-v2/mini-swe-agent__github_issue.traj.json")
    messages = json.loads(path.read_text())
    fence = re.compile(r"```mswea_bash_command\n(.*?)\n```", re.DOTALL)
    commands = [
        fence.findall(m["content"])[0].strip()
        for m in messages
        if m["role"] == "assistant" and len(fence.findall(m["content"])) == 1
    ]
    log = read_log(path)
    assert (log.format, log.task) == ("mini-swe-agent", messages[1]["content"])
    assert _commands(path) == commands and len(commands) == 10
    assert list(log.outputs) == [m["content"] for m in messages[2:] if m["role"] == "user"]
    assert [f for a in log.actions for f in a.edited] == ["tests/missing_colon.py"] * 2


def test_mini_swe_agent_2_tool_calls() -> None:
    path = _path("mini-swe-agent-v2/mini-swe-agent__django__django-10914.traj.json")
    messages = json.loads(path.read_text())["messages"]
    commands = [
        json.loads(c["function"]["arguments"])["command"].strip()
        for m in messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]
    log = read_log(path)
    assert "Set default FILE_UPLOAD_PERMISSION to 0o644" in log.task
    assert _commands(path) == commands and len(commands) == 48
    assert list(log.outputs) == [m["content"] for m in messages if m["role"] == "tool"]


def test_openhands_trajectory() -> None:
    path = _path("openhands/OpenHands__basic.json")
    events = json.loads(path.read_text())
    log = read_log(path)
    assert (log.format, log.task) == ("openhands", events[0]["args"]["content"])
    assert [a.edited for a in log.actions] == [(events[1]["args"]["path"],)]
    assert list(log.outputs) == [e["content"] for e in events if "observation" in e]


def test_openhands_eval_output() -> None:
    path = _path("openhands/OpenHands__output.jsonl")
    runs = [r["history"] for r in _lines(path)]
    statement = runs[0][0]["content"].split("# Problem Statement\n")[1].split("\n\nIMPORTANT:")[0]
    commands = [e["command"] for h in runs for e in h if e.get("action") == "run"]
    outputs = [e["content"] for h in runs for e in h if "observation" in e]
    log = read_log(path)
    assert (log.format, log.task) == ("openhands", statement.strip())
    assert _commands(path) == commands and len(runs) == 2
    assert list(log.outputs) == outputs
    # App.tsx: every agentskills edit of it was refused with a syntax error, so none counts.
    edited = {f for a in log.actions for f in a.edited}
    assert "/workspace/src/App.css" in edited and "/workspace/src/App.tsx" not in edited


def test_cursor() -> None:
    path = _path("cursor/agent-sessions__test-session.jsonl")
    records = _lines(path)
    first = records[0]["message"]["content"][0]["text"]
    commands = [
        b["input"]["command"]
        for r in records
        if r["role"] == "assistant"
        for b in r["message"]["content"]
        if b["type"] == "tool_use" and b["name"] == "Shell"
    ]
    log = read_log(path)
    assert (log.format, log.task) == (
        "cursor",
        first.split("<user_query>")[1].split("</user_query>")[0].strip(),
    )
    assert _commands(path) == commands == ["ls -la /tmp", "git status"]


def test_factory_droid() -> None:
    path = _path("factory-droid/agent-sessions__stream_json_small.jsonl")
    records = _lines(path)
    log = read_log(path)
    assert (log.format, log.task) == ("factory-droid", records[0]["text"])
    assert _commands(path) == [
        r["parameters"]["command"] for r in records if r["type"] == "tool_call"
    ]
    assert list(log.outputs) == [
        r["value"]["stdout"] for r in records if r["type"] == "tool_result"
    ]
