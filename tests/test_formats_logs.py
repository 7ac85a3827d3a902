"""Every public agent log in ../shared/data/logs is read, with the calls, results, usage and
times its raw file holds.

The counts are taken here from the raw files with parsers of their own (a few lines per
format, written from the formats' documentation, not from the readers), so a reader that
drops, duplicates or invents a message, a call or a result fails. A log whose reader is not
registered yet is skipped, never passed.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from compaction.formats import dumps, load, loads
from compaction.formats.registry import readers
from compaction.memory.transcript import is_note, is_person_written
from compaction.pricing.recorded import call_time, recorded_usage
from compaction.validate import validate
from tests.conftest import ROOT

pytestmark = pytest.mark.transcripts

LOGS = ROOT.parent / "shared" / "data" / "logs"

#: The format each folder's logs must be read as.
FOLDERS = {
    "claude-code": "claude-code",
    "codex": "codex",
    "mini-swe-agent-v2": "mini-swe-agent",
    "copilot-cli": "copilot-cli",
    "cursor": "cursor",
    "factory-droid": "factory-droid",
    "gemini-cli": "gemini-cli",
    "openhands": "openhands",
}


def _files() -> list[Path]:
    if not LOGS.is_dir():
        return []
    return sorted(p for p in LOGS.glob("*/*") if p.is_file() and p.parent.name in FOLDERS)


FILES = _files()


def _ids(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, lines that are none left out."""
    out = []
    for x in path.read_text().split("\n"):
        try:
            value = json.loads(x) if x.strip() else None
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


# --- independent counts ------------------------------------------------------------------


def _codex(path: Path) -> dict[str, Any]:
    """Messages, calls and results as a Codex rollout records them."""
    people = outputs = steps = calls = compacted = usage = 0
    stamps: set[str] = set()
    in_step = False
    system = 0
    for r in _lines(path):
        kind, p = r["type"], r["payload"]
        if kind == "session_meta":
            base = p.get("base_instructions")
            text = p.get("instructions") or (base.get("text") if isinstance(base, dict) else None)
            system = int(bool(text))
        elif kind == "compacted":
            compacted += 1
            in_step = False
        elif kind == "event_msg" and p.get("type") == "token_count" and p.get("info"):
            usage += 1
        elif kind == "response_item":
            t = p.get("type")
            if t == "message" and p.get("role") in ("user", "developer", "system"):
                people += 1
                in_step = False
            elif t.endswith("_call_output"):
                outputs += 1
                in_step = False
            else:
                stamps.add(r["timestamp"])
                steps += not in_step
                in_step = True
                calls += t.endswith("_call") and bool(p.get("call_id"))
    return {
        "messages": system + people + outputs + steps + compacted,
        "calls": calls,
        "results": outputs,
        "summaries": compacted,
        "usage": usage,
        "stamps": stamps,
    }


_MSWEA = re.compile(r"```mswea_bash_command\s*\n(.*?)\n```", re.DOTALL)


def _mini(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    msgs = data["messages"] if isinstance(data, dict) else data
    msgs = [m for m in msgs if m["role"] != "exit"]
    if any(m.get("tool_calls") for m in msgs):
        calls = sum(len(m.get("tool_calls") or ()) for m in msgs)
        results = sum(m["role"] == "tool" for m in msgs)
        messages = len(msgs)
    else:
        calls = results = 0
        for i, m in enumerate(msgs):
            if m["role"] == "assistant" and len(_MSWEA.findall(m["content"])) == 1:
                calls += 1
                results += i + 1 < len(msgs) and msgs[i + 1]["role"] == "user"
        messages = len(msgs)
    usage = sum(
        1
        for m in msgs
        if m["role"] == "assistant"
        and isinstance((m.get("extra") or {}).get("response"), dict)
        and "usage" in m["extra"]["response"]
    )
    return {
        "messages": messages,
        "calls": calls,
        "results": results,
        "summaries": 0,
        "usage": usage,
        "stamps": None,
    }


def _claude_code(path: Path) -> dict[str, Any]:
    def readable(r: dict[str, Any]) -> bool:
        message = r.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return isinstance(content, str) or (
            isinstance(content, list) and all(isinstance(b, dict) for b in content)
        )

    chat = [r for r in _lines(path) if r.get("type") in ("user", "assistant") and readable(r)]
    if any(not r.get("isSidechain") for r in chat):
        chat = [r for r in chat if not r.get("isSidechain")]
    seen: set[str] = set()
    uses: set[str] = set()
    results = summaries = 0
    for r in chat:
        if r.get("uuid") in seen:
            continue
        seen.add(r.get("uuid"))
        content = r["message"]["content"]
        summaries += bool(r.get("isCompactSummary"))
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_use":
                uses.add(block["id"])
            results += block.get("type") == "tool_result"
    return {
        "messages": None,
        "calls": len(uses),
        "results": results,
        "summaries": summaries,
        "usage": None,
        "stamps": None,
    }


RAW = {"codex": _codex, "mini-swe-agent-v2": _mini, "claude-code": _claude_code}


def _registered(fmt: str) -> bool:
    return any(r.name == fmt for r in readers())


@pytest.mark.skipif(not FILES, reason=f"public agent logs not present at {LOGS}")
@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_every_log_is_read_as_its_format_and_is_a_valid_conversation(path):
    fmt = FOLDERS[path.parent.name]
    if not _registered(fmt):
        pytest.skip(f"no {fmt} reader registered on this branch")
    loaded = load(path)
    assert loaded.format == fmt
    validate(loaded.messages)
    assert any(m.content.strip() or m.tool_calls for m in loaded.messages)
    assert any(is_person_written(m) for m in loaded.messages)
    # what is written back reads again with the same calls and results
    again = loads(dumps(loaded.messages, loaded.output_format), name=f"{path.name} (written)")
    assert [c for m in again.messages for c in m.tool_calls] == [
        c for m in loaded.messages for c in m.tool_calls
    ]
    assert [(m.tool_call_id, m.content) for m in again.messages if m.role == "tool"] == [
        (m.tool_call_id, m.content) for m in loaded.messages if m.role == "tool"
    ]


CHECKED = [p for p in FILES if p.parent.name in RAW]


@pytest.mark.skipif(not CHECKED, reason=f"public agent logs not present at {LOGS}")
@pytest.mark.parametrize("path", CHECKED, ids=_ids)
def test_counts_match_the_raw_log(path):
    raw = RAW[path.parent.name](path)
    loaded = load(path)
    repairs = Counter(r.kind for r in loaded.repairs)
    calls = sum(len(m.tool_calls) for m in loaded.messages)
    results = sum(m.role == "tool" for m in loaded.messages)
    assert calls == raw["calls"]
    assert results == raw["results"] + repairs["no_result"] - repairs["orphan_result"]
    assert results == calls
    if raw["messages"] is not None:
        assert len(loaded.messages) == raw["messages"] + repairs["no_result"]
    assert sum(is_note(m) for m in loaded.messages) == raw["summaries"]
    assistants = [m for m in loaded.messages if m.role == "assistant"]
    if raw["usage"] is not None:
        assert sum(recorded_usage(m) is not None for m in assistants) == raw["usage"]
    if raw["stamps"] is not None:
        assert all(call_time(m) is not None for m in assistants)
        assert {m.meta["recorded"]["timestamp"] for m in assistants} <= raw["stamps"]


def test_codex_usage_is_the_calls_own_token_count():
    path = LOGS / "codex" / "VibeCodingTracker__codex.jsonl"
    if not path.is_file():
        pytest.skip("the Codex log is not present")
    counts = [
        r["payload"]["info"]["last_token_usage"]
        for r in _lines(path)
        if r["type"] == "event_msg" and r["payload"].get("type") == "token_count"
    ]
    loaded = load(path)
    usage = [recorded_usage(m) for m in loaded.messages if m.role == "assistant"]
    got = [(u.cache_read + u.uncached, u.cache_read, u.output) for u in usage if u is not None]
    want = [(c["input_tokens"], c["cached_input_tokens"], c["output_tokens"]) for c in counts]
    assert got == want
    models = {m.meta["recorded"]["model"] for m in loaded.messages if m.role == "assistant"}
    turn_models = {r["payload"]["model"] for r in _lines(path) if r["type"] == "turn_context"}
    assert models == turn_models


def test_codex_compaction_is_kept_as_a_native_summary_of_what_came_before():
    path = LOGS / "codex" / "agent-history__session_with_compaction.jsonl"
    if not path.is_file():
        pytest.skip("the Codex log is not present")
    summary_text = next(r["payload"]["message"] for r in _lines(path) if r["type"] == "compacted")
    loaded = load(path)
    [at] = [i for i, m in enumerate(loaded.messages) if is_note(m)]
    summary = loaded.messages[at]
    assert summary.content == summary_text
    assert summary.meta["boundary"]["kind"] == "compaction"
    assert len(summary.meta["compaction"]["replaces"]) == at
    assert not is_person_written(summary)


@pytest.mark.parametrize(
    "name",
    [
        "codex/VibeCodingTracker__codex.jsonl",
        "mini-swe-agent-v2/mini-swe-agent__django__django-10914.traj.json",
    ],
)
def test_the_bill_check_and_priced_replay_run_on_logs_that_record_usage(name):
    from compaction.pricing.bill_check import check_bill
    from compaction.pricing.prices import price_for

    path = LOGS / name
    if not path.is_file():
        pytest.skip(f"{name} is not present")
    loaded = load(path)
    with_usage = [m for m in loaded.messages if recorded_usage(m) is not None]
    bill = check_bill(loaded.messages, price_for("gpt-5"))
    assert bill is not None and bill.calls == len(with_usage)
    assert bill.recorded_read == sum(recorded_usage(m).cache_read for m in with_usage)
