"""The agent-log readers (Gemini CLI, Copilot CLI, OpenHands, Cursor, Factory Droid, aider,
SpecStory) against the raw files, each counted by a parser of its own written here.

The real logs live in ../shared/data/logs (SOURCES.md there); the tests over them skip when the
folder is absent. aider and SpecStory are hand-made fixtures in the shape their writers use.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from compaction.formats import FormatError, detect_format, load, loads
from compaction.formats.repair import NO_RESULT
from compaction.memory.transcript import SYNTHETIC_KEY
from compaction.pricing.recorded import call_time, recorded_usage
from tests.conftest import ROOT

LOGS = ROOT.parent / "shared" / "data" / "logs"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agent_logs"
FORMATS = {
    "gemini-cli": "gemini-cli",
    "copilot-cli": "copilot-cli",
    "openhands": "openhands",
    "cursor": "cursor",
    "factory-droid": "factory-droid",
}


def real(folder: str) -> list[Path]:
    where = LOGS / folder
    if not where.is_dir():
        pytest.skip(f"real logs not present at {where}")
    return sorted(p for p in where.iterdir() if p.is_file())


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def roles(loaded: Any) -> Counter[str]:
    return Counter(m.role for m in loaded.messages)


def calls(loaded: Any) -> list[Any]:
    return [c for m in loaded.messages for c in m.tool_calls]


def answered(loaded: Any) -> dict[str, str]:
    """Tool results by call id (repairs left out)."""
    return {
        m.tool_call_id: m.content
        for m in loaded.messages
        if m.role == "tool" and m.content != NO_RESULT
    }


def test_every_real_log_is_taken_for_its_own_format() -> None:
    for folder, fmt in FORMATS.items():
        for path in real(folder):
            assert detect_format(path) == fmt, path
    assert detect_format(FIXTURES / "aider.chat.history.md") == "aider"
    assert detect_format(FIXTURES / "specstory.md") == "specstory"


# -- Gemini CLI ---------------------------------------------------------------------------


def _gemini_messages(path: Path) -> list[dict[str, Any]]:
    """The session's messages, last write of each id winning (the recorder's rule)."""
    if path.suffix == ".json":
        return json.loads(path.read_text())["messages"]
    by_id: dict[str, dict[str, Any]] = {}
    for record in lines(path):
        if "$rewindTo" in record:
            keys = list(by_id)
            cut = keys.index(record["$rewindTo"]) if record["$rewindTo"] in by_id else 0
            for key in keys[cut:]:
                del by_id[key]
        elif "$set" in record and isinstance(record["$set"].get("messages"), list):
            by_id = {m["id"]: m for m in record["$set"]["messages"]}
        elif "id" in record and "type" in record:
            by_id[record["id"]] = record
    return list(by_id.values())


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if "text" in p)


@pytest.mark.parametrize(
    "name", ["VibeCodingTracker__gemini.jsonl", "agent-history__gemini_golden.json"]
)
def test_gemini_cli_counts_roles_calls_and_usage(name: str) -> None:
    path = LOGS / "gemini-cli" / name
    if not path.is_file():
        pytest.skip("real logs not present")
    raw = _gemini_messages(path)
    users = [m for m in raw if m["type"] == "user" and _text(m["content"]).strip()]
    geminis = [
        m for m in raw if m["type"] == "gemini" and (_text(m["content"]) or m.get("toolCalls"))
    ]
    raw_calls = [c for m in geminis for c in m.get("toolCalls") or []]
    loaded = load(path)
    assert roles(loaded) == Counter(
        {"user": len(users), "assistant": len(geminis), "tool": len(raw_calls)}
    )
    assert [c.id for c in calls(loaded)] == [c["id"] for c in raw_calls]
    results = answered(loaded)
    for call in raw_calls:
        output = call["result"][0]["functionResponse"]["response"]["output"]
        assert results[call["id"]] == output
    assert [m.content for m in loaded.messages if m.role == "user"] == [
        _text(m["content"]) for m in users
    ]
    replies = [m for m in loaded.messages if m.role == "assistant"]
    for message, record in zip(replies, geminis, strict=True):
        usage = recorded_usage(message)
        tokens = record["tokens"]
        assert usage is not None
        assert usage.cache_read == tokens["cached"]
        assert usage.input_tokens == tokens["input"] + tokens.get("tool", 0)
        assert usage.output == tokens["output"] + tokens.get("thoughts", 0)
        assert message.meta["gemini_cli"]["model"] == record["model"]
        assert call_time(message) is not None


def test_gemini_cli_rewind_and_checkpoint_lines() -> None:
    meta = {"sessionId": "s", "projectHash": "p", "startTime": "2026-01-01T00:00:00Z"}

    def msg(i: str, kind: str, text: str) -> dict[str, Any]:
        return {"id": i, "timestamp": "2026-01-01T00:00:01Z", "type": kind, "content": text}

    records = [
        meta,
        msg("a", "user", "first try"),
        msg("b", "gemini", "first answer"),
        {"$rewindTo": "a"},
        msg("c", "user", "second try"),
        msg("d", "gemini", "second answer"),
        msg("d", "gemini", "second answer, rewritten"),
        {"$set": {"lastUpdated": "2026-01-01T00:00:02Z"}},
    ]
    loaded = loads("\n".join(json.dumps(r) for r in records))
    assert [m.content for m in loaded.messages] == ["second try", "second answer, rewritten"]
    checkpoint = [
        meta,
        msg("x", "user", "gone"),
        {"$set": {"messages": [msg("y", "user", "kept")]}},
    ]
    with pytest.raises(FormatError, match="yields no messages"):
        loads("\n".join(json.dumps(r) for r in [*checkpoint[:1], {"$set": {"messages": []}}]))
    only = loads("\n".join(json.dumps(r) for r in checkpoint))
    assert [m.content for m in only.messages] == ["kept"]


# -- Copilot CLI --------------------------------------------------------------------------


def test_copilot_cli_pairs_every_execution_with_its_call() -> None:
    (path,) = real("copilot-cli")
    events = lines(path)
    requested = [
        r
        for e in events
        if e["type"] == "assistant.message"
        for r in e["data"].get("toolRequests", [])
    ]
    asked = {r["toolCallId"] for r in requested}
    unrequested = [
        e["data"]
        for e in events
        if e["type"] == "tool.execution_start" and e["data"]["toolCallId"] not in asked
    ]
    completes = {
        e["data"]["toolCallId"]: e["data"] for e in events if e["type"] == "tool.execution_complete"
    }
    replies = [e for e in events if e["type"] == "assistant.message"]
    typed = [
        e["data"]["content"] for e in events if e["type"] == "user.message" and e["data"]["content"]
    ]
    loaded = load(path)
    in_order = [
        cid
        for e in events
        for cid in (
            [r["toolCallId"] for r in e["data"].get("toolRequests", [])]
            if e["type"] == "assistant.message"
            else [d["toolCallId"] for d in unrequested if d is e["data"]]
        )
    ]
    assert [c.id for c in calls(loaded)] == in_order
    assert answered(loaded) == {cid: d["result"]["content"] for cid, d in completes.items()}
    assert not loaded.repairs
    people = [m for m in loaded.messages if m.role == "user" and not m.meta.get(SYNTHETIC_KEY)]
    assert [m.content for m in people] == typed
    assert roles(loaded)["assistant"] == len(replies) + (1 if unrequested else 0)
    assert loaded.messages[0].role == "system"
    assert (
        loaded.skipped["system.message repeated"]
        == sum(e["type"] == "system.message" for e in events) - 1
    )
    model = next(e["data"]["newModel"] for e in events if e["type"] == "session.model_change")
    assert all(
        m.meta["copilot_cli"]["model"] == model for m in loaded.messages if m.role == "assistant"
    )


# -- OpenHands ----------------------------------------------------------------------------


def test_openhands_events_rebuild_the_model_responses() -> None:
    path = LOGS / "openhands" / "OpenHands__basic.json"
    if not path.is_file():
        pytest.skip("real logs not present")
    events = json.loads(path.read_text())
    responses: dict[str, dict[str, Any]] = {}
    for e in events:
        meta = e.get("tool_call_metadata")
        if "action" in e and meta:
            responses.setdefault(meta["model_response"]["id"], meta["model_response"])
    raw_calls = [c for r in responses.values() for c in r["choices"][0]["message"]["tool_calls"]]
    observed = {
        e["tool_call_metadata"]["tool_call_id"]: e["content"] for e in events if "observation" in e
    }
    loaded = load(path)
    assert [c.id for c in calls(loaded)] == [c["id"] for c in raw_calls]
    assert [c.arguments for c in calls(loaded)] == [c["function"]["arguments"] for c in raw_calls]
    assert answered(loaded) == observed
    unanswered = {c["id"] for c in raw_calls} - set(observed)
    assert {r.call_id for r in loaded.repairs} == unanswered
    people = [
        e["args"]["content"]
        for e in events
        if e.get("action") == "message" and e["source"] == "user"
    ]
    assert [m.content for m in loaded.messages if m.role == "user"] == people
    replies = [m for m in loaded.messages if m.role == "assistant"]
    assert len(replies) == len(responses)
    for message, response in zip(replies, responses.values(), strict=True):
        usage = recorded_usage(message)
        assert usage is not None
        assert usage.input_tokens == response["usage"]["prompt_tokens"]
        assert usage.cache_read == response["usage"]["cache_read_input_tokens"]
        assert usage.output == response["usage"]["completion_tokens"]


def test_openhands_eval_records_read_run_after_run() -> None:
    path = LOGS / "openhands" / "OpenHands__output.jsonl"
    if not path.is_file():
        pytest.skip("real logs not present")
    records = lines(path)
    history = [e for r in records for e in r["history"]]
    actions = [e for e in history if e.get("action") not in (None, "message", "finish")]
    observations = [e for e in history if "observation" in e]
    loaded = load(path)
    assert len(calls(loaded)) == len(actions)
    assert [c.name for c in calls(loaded)] == [e["action"] for e in actions]
    assert sorted(answered(loaded).values()) == sorted(e["content"] for e in observations)
    firsts = [m for m in loaded.messages if "run" in m.meta.get("openhands", {})]
    assert [m.content for m in firsts] == [r["history"][0]["content"] for r in records]
    assert roles(loaded)["user"] == len(records)


def test_openhands_is_not_taken_for_swe_agent() -> None:
    path = LOGS / "openhands" / "OpenHands__output.jsonl"
    if not path.is_file():
        pytest.skip("real logs not present")
    one = json.dumps(lines(path)[0])
    assert loads(one).format == "openhands"


# -- Cursor and Factory Droid -------------------------------------------------------------


def test_cursor_lines_keep_their_text_and_calls() -> None:
    (path,) = real("cursor")
    raw = lines(path)
    blocks = [(r["role"], b) for r in raw if "role" in r for b in r["message"]["content"]]
    tool_uses = [b for _, b in blocks if b["type"] == "tool_use"]
    loaded = load(path)
    assert roles(loaded)["user"] + roles(loaded)["assistant"] == len(raw)
    assert [c.name for c in calls(loaded)] == [b["name"] for b in tool_uses]
    assert [json.loads(c.arguments) for c in calls(loaded)] == [b["input"] for b in tool_uses]
    texts = [
        "\n".join(b["text"] for b in r["message"]["content"] if b["type"] == "text") for r in raw
    ]
    assert [m.content for m in loaded.messages if m.role != "tool"] == texts
    # Cursor records no results: every call is answered by a visible repair, none by made-up output.
    assert len(loaded.repairs) == len(tool_uses) and not answered(loaded)


def test_factory_droid_stream_json() -> None:
    (path,) = real("factory-droid")
    raw = lines(path)
    loaded = load(path)
    tool_calls = [r for r in raw if r["type"] == "tool_call"]
    results = {r["toolCallId"]: json.dumps(r["value"]) for r in raw if r["type"] == "tool_result"}
    assert [c.id for c in calls(loaded)] == [r["toolCallId"] for r in tool_calls]
    assert {k: json.loads(v) for k, v in answered(loaded).items()} == {
        k: json.loads(v) for k, v in results.items()
    }
    said = [r["text"] for r in raw if r["type"] == "message" and r["role"] == "user"]
    assert [m.content for m in loaded.messages if m.role == "user"] == said
    final = [r["finalText"] for r in raw if r["type"] == "completion"]
    assert loaded.messages[-1].role == "assistant" and loaded.messages[-1].content == final[-1]
    assert all(call_time(m) is not None for m in loaded.messages if m.role == "assistant")


REMINDED = "<system-reminder>\nBe safe.\n</system-reminder>\n\nRun ls"


def test_factory_droid_session_store_and_reminder() -> None:
    records = [
        {"type": "session_start", "id": "s1", "title": "t"},
        {"type": "message", "id": "m1", "timestamp": "2025-12-26T23:50:00.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": REMINDED}]}},
        {"type": "message", "id": "m2", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "tu1", "name": "Execute", "input": {"command": "ls"}}]}},
        {"type": "message", "id": "m3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu1", "content": "a.txt"}]}},
    ]  # fmt: skip
    loaded = loads("\n".join(json.dumps(r) for r in records))
    assert loaded.format == "factory-droid"
    assert [(m.role, m.content, bool(m.meta.get(SYNTHETIC_KEY))) for m in loaded.messages] == [
        ("user", "<system-reminder>\nBe safe.\n</system-reminder>", True),
        ("user", "Run ls", False),
        ("assistant", "", False),
        ("tool", "a.txt", False),
    ]


# -- aider and SpecStory ------------------------------------------------------------------


def test_aider_history_turns_and_output() -> None:
    path = FIXTURES / "aider.chat.history.md"
    text = path.read_text()
    typed = re.findall(r"^#### (.*)  $", text, re.M)
    quoted = re.findall(r"^> (.*)  $", text, re.M)
    loaded = load(path)
    inputs = [
        m for m in loaded.messages if m.role == "user" and "aider_output" not in m.meta["aider"]
    ]
    output = [m for m in loaded.messages if m.meta["aider"].get("aider_output")]
    assert "\n".join(m.content for m in inputs).split("\n") == typed
    commands = [m.content for m in inputs if m.meta.get(SYNTHETIC_KEY)]
    assert commands == [line for line in typed if line.startswith("/")]
    assert "\n".join(m.content for m in output).split("\n") == quoted
    replies = [m.content for m in loaded.messages if m.role == "assistant"]
    assert len(replies) == 2 and "#### A heading in the reply" in replies[0]
    assert {m.meta["aider"]["timestamp"] for m in loaded.messages} == set(
        re.findall(r"^# aider chat started at (.+)$", text, re.M)
    )


def test_specstory_turns_calls_and_outputs() -> None:
    path = FIXTURES / "specstory.md"
    text = path.read_text()
    loaded = load(path)
    named = re.findall(r'data-tool-name="([^"]+)"', text)
    listed = [
        n.strip()
        for group in re.findall(r"^_Tools used: (.+)_$", text, re.M)
        for n in group.split(",")
    ]
    early = re.findall(r"^Tool use: \*\*(.+)\*\*$", text, re.M)
    assert sorted(c.name for c in calls(loaded)) == sorted(named + listed + early)
    assert len(loaded.repairs) == len(listed)
    assert roles(loaded)["user"] == len(re.findall(r"^_\*\*User", text, re.M))
    assert "AttributeError" in answered(loaded)["specstory-1-2"]
    assert all(
        m.meta["specstory"].get("model") == "claude-sonnet-4"
        for m in loaded.messages[1:3]
        if m.role == "assistant"
    )


# -- shapes the shipped logs do not hold --------------------------------------------------


def test_openhands_condensation_is_a_native_compaction_and_pairs_read_in_order() -> None:
    events = [
        [{"action": "message", "args": {"content": "fix it"}}, {"observation": "null"}],
        [
            {"action": "run", "args": {"command": "ls", "thought": "look first"}},
            {"observation": "run", "content": "a.py"},
        ],
        [
            {"action": "condensation", "args": {"summary": "listed the files"}},
            {"observation": "null"},
        ],
        [
            {"action": "run", "args": {"command": "cat a.py"}},
            {"observation": "run", "content": "x=1"},
        ],
    ]
    loaded = loads(json.dumps({"instance_id": "i1", "history": events}))
    assert loaded.format == "openhands"
    summary = next(m for m in loaded.messages if m.content == "listed the files")
    assert summary.meta["boundary"]["kind"] == "compaction"
    assert summary.meta["boundary"]["agent"] == "openhands"
    assert [(c.name, json.loads(c.arguments)) for c in calls(loaded)] == [
        ("run", {"command": "ls"}),
        ("run", {"command": "cat a.py"}),
    ]
    assert list(answered(loaded).values()) == ["a.py", "x=1"]
    assert loaded.skipped["null observation"] == 2


def test_copilot_cli_new_system_prompt_mid_run_is_a_boundary() -> None:
    def event(kind: str, **data: Any) -> str:
        return json.dumps(
            {"type": kind, "data": data, "id": kind, "timestamp": "2026-01-01T00:00:00Z"}
        )

    text = "\n".join(
        [
            event("session.start", sessionId="s"),
            event("system.message", role="system", content="be brief"),
            event("user.message", content="hi"),
            event("assistant.message", content="hello", toolRequests=[]),
            event("system.message", role="system", content="be thorough"),
            event("user.message", content="", transformedContent="continue the task"),
        ]
    )
    loaded = loads(text)
    assert [m.role for m in loaded.messages] == ["system", "user", "assistant", "user", "user"]
    boundary = loaded.messages[3]
    assert boundary.meta["boundary"] == {"kind": "system"} and "be thorough" in boundary.content
    assert loaded.messages[4].meta[SYNTHETIC_KEY] is True
    assert [r.kind for r in loaded.repairs] == ["boundary"]


def test_gemini_cli_function_call_parts_and_errors() -> None:
    record = {
        "sessionId": "s",
        "projectHash": "p",
        "messages": [
            {"id": "u", "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": "go"},
            {
                "id": "g",
                "timestamp": "2026-01-01T00:00:01Z",
                "type": "gemini",
                "content": [
                    {"text": "thinking", "thought": True},
                    {"text": "running it"},
                    {"functionCall": {"id": "c1", "name": "shell", "args": {"cmd": "false"}}},
                    {"functionCall": {"id": "c2", "name": "shell", "args": {"cmd": "sleep"}}},
                ],
                "toolCalls": [
                    {
                        "id": "c1",
                        "name": "shell",
                        "args": {"cmd": "false"},
                        "status": "error",
                        "result": [
                            {"functionResponse": {"id": "c1", "response": {"error": "exit 1"}}}
                        ],
                    },
                    {
                        "id": "c2",
                        "name": "shell",
                        "args": {},
                        "status": "cancelled",
                        "result": None,
                    },
                ],
            },
        ],
    }
    loaded = loads(json.dumps(record))
    assert loaded.messages[1].content == "running it"
    assert [c.id for c in calls(loaded)] == ["c1", "c2"]
    assert answered(loaded) == {"c1": "Error: exit 1"}
    assert [(r.kind, r.call_id) for r in loaded.repairs] == [("no_result", "c2")]


def test_factory_droid_error_results_and_run_usage() -> None:
    events = [
        {"type": "system", "session_id": "s", "model": "droid-model", "timestamp": 1767812640310},
        {
            "type": "message",
            "session_id": "s",
            "role": "user",
            "text": "List files",
            "timestamp": 1767812641000,
        },
        {
            "type": "tool_call",
            "session_id": "s",
            "id": "call_1",
            "toolName": "Execute",
            "parameters": {"command": "ls"},
        },
        {
            "type": "tool_result",
            "session_id": "s",
            "id": "call_1",
            "isError": True,
            "value": "ls: no such dir",
        },
        {
            "type": "completion",
            "session_id": "s",
            "finalText": "Done",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        {"type": "error", "source": "cli", "message": "Authentication failed.", "session_id": "s"},
    ]
    loaded = loads("\n".join(json.dumps(e) for e in events))
    assert answered(loaded) == {"call_1": "Error: ls: no such dir"}
    last = loaded.messages[-1]
    assert (
        last.content == "Done" and last.meta["factory_droid"]["session_usage"]["input_tokens"] == 10
    )
    assert recorded_usage(last) is None  # the run's total is not one call's bill
    assert last.meta["recorded"]["model"] == "droid-model"
    assert loaded.skipped["error"] == 1


def test_openhands_runs_one_after_another_the_later_system_prompts_as_boundaries() -> None:
    def record(instance: str) -> str:
        history = [
            {"id": 0, "source": "agent", "action": "system", "args": {"content": "you are X"}},
            {"id": 1, "source": "user", "action": "message", "args": {"content": f"do {instance}"}},
            {"id": 2, "source": "agent", "action": "message", "args": {"content": "done"}},
        ]
        return json.dumps({"instance_id": instance, "history": history})

    loaded = loads(record("a") + "\n" + record("b"))
    roles_in_order = [m.role for m in loaded.messages]
    assert roles_in_order == ["system", "user", "assistant", "user", "user", "assistant"]
    assert loaded.messages[3].meta["boundary"] == {"kind": "system"}
    assert [m.meta["openhands"].get("run") for m in loaded.messages] == [
        "a",
        None,
        None,
        "b",
        None,
        None,
    ]
