"""One tool-call id, one call: ``validate`` refuses reuse across messages, and everything that
reads conversations in (adapters and transcript readers) re-keys reuse visibly, so that
``--to anthropic`` never writes two ``tool_use`` blocks with one id (which Anthropic refuses).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import Message, ToolCall
from compaction.adapters.anthropic import from_anthropic, to_anthropic
from compaction.adapters.openai import from_openai, to_openai
from compaction.formats import load
from compaction.validate import InvalidConversationError, is_valid, validate
from tests.test_cli import run

ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")


def _call(call_id: str, name: str = "bash") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


OPENAI = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": None, "tool_calls": [_call("call_1")]},
    {"role": "tool", "tool_call_id": "call_1", "content": "first"},
    {"role": "assistant", "content": None, "tool_calls": [_call("call_1"), _call("call_2")]},
    {"role": "tool", "tool_call_id": "call_1", "content": "second"},
    {"role": "tool", "tool_call_id": "call_2", "content": "third"},
    {"role": "assistant", "content": "done"},
]


def _tool_use_ids(messages: list[dict]) -> list[str]:
    return [
        b["id"]
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]


def test_validate_refuses_an_id_used_by_two_messages() -> None:
    messages = [
        Message("user", "go"),
        Message("assistant", "", tool_calls=(ToolCall("a", "f", "{}"),)),
        Message("tool", "1", tool_call_id="a"),
        Message("assistant", "", tool_calls=(ToolCall("a", "f", "{}"),)),
        Message("tool", "2", tool_call_id="a"),
    ]
    with pytest.raises(InvalidConversationError) as caught:
        validate(messages)
    assert caught.value.index == 3 and "already used by message 1" in str(caught.value)


def test_from_openai_rekeys_visibly_and_anthropic_gets_unique_ids() -> None:
    messages = from_openai(OPENAI)
    assert is_valid(messages)
    second = messages[4]
    assert [c.id for c in second.tool_calls] == ["call_1-r2", "call_2"]
    assert second.meta["rekeyed"] == {"call_1-r2": "call_1"}
    assert messages[5].tool_call_id == "call_1-r2" and messages[5].content == "second"
    assert messages[5].meta["rekeyed"] == {"call_1-r2": "call_1"}
    assert messages[3].tool_call_id == "call_1" and "rekeyed" not in messages[3].meta
    _, out = to_anthropic(messages)
    ids = _tool_use_ids(out)
    assert len(ids) == len(set(ids)) == 3
    results = [
        b["tool_use_id"] for m in out if isinstance(m["content"], list) for b in m["content"]
        if b.get("type") == "tool_result"
    ]  # fmt: skip
    assert results == ["call_1", "call_1-r2", "call_2"]
    # OpenAI out carries the new ids too, so results still answer their own calls.
    written = to_openai(messages)
    assert written[4]["tool_calls"][0]["id"] == written[5]["tool_call_id"] == "call_1-r2"


def test_from_anthropic_rekeys() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}
    raw = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "a"}]},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "b"}]},
    ]  # fmt: skip
    messages = from_anthropic(raw)
    assert is_valid(messages)
    assert messages[3].tool_calls[0].id == "toolu_1-r2" == messages[4].tool_call_id
    _, out = to_anthropic(messages)
    assert _tool_use_ids(out) == ["toolu_1", "toolu_1-r2"]


def test_readers_report_the_rekey_and_the_cli_writes_unique_ids(tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(OPENAI))
    loaded = load(chat)
    assert [(r.kind, r.call_id, r.index) for r in loaded.repairs] == [("rekeyed", "call_1", 4)]
    out = tmp_path / "out.json"
    result = run("compact", str(chat), "--target", "100000", "--to", "anthropic", "-o", str(out))
    assert result.returncode == 0, result.stderr
    ids = _tool_use_ids(json.loads(out.read_text())["messages"])
    assert len(ids) == len(set(ids)) == 3
    assert "rekeyed" in result.stderr or "new id" in result.stderr

    # SWE-agent (function calling) and Claude Code logs that reuse ids.
    swe = tmp_path / "run.traj"
    history = [dict(m, **({"tool_call_ids": [m["tool_call_id"]]} if m["role"] == "tool" else {}))
               for m in OPENAI]  # fmt: skip
    swe.write_text(json.dumps({"history": history}))
    swe_loaded = load(swe)
    assert is_valid(swe_loaded.messages)
    assert [r.kind for r in swe_loaded.repairs] == ["rekeyed"]

    cc = tmp_path / "session.jsonl"
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    records = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "uuid": "a1", "message": {"id": "m1", "role": "assistant",
                                                        "content": [use]}},
        {"type": "user", "uuid": "r1", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "first"}]}},
        {"type": "assistant", "uuid": "a2", "message": {"id": "m2", "role": "assistant",
                                                        "content": [use]}},
        {"type": "user", "uuid": "r2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "second"}]}},
    ]  # fmt: skip
    cc.write_text("".join(json.dumps(r) + "\n" for r in records))
    cc_loaded = load(cc)
    assert is_valid(cc_loaded.messages)
    assert [
        (m.role, m.tool_call_id, m.content) for m in cc_loaded.messages if m.role == "tool"
    ] == [
        ("tool", "toolu_1", "first"),
        ("tool", "toolu_1-r2", "second"),
    ]  # each result stays with its own call; nothing became an orphan
    assert [r.kind for r in cc_loaded.repairs] == ["rekeyed"]


@settings(max_examples=200, deadline=None)
@given(
    groups=st.lists(
        st.lists(
            st.sampled_from(["a", "b", "a-r2", "a~2", "a.b:0"]), min_size=1, max_size=3, unique=True
        ),
        max_size=6,
    )
)
def test_any_reuse_of_ids_reads_in_valid(groups: list[list[str]]) -> None:
    raw: list[dict] = [{"role": "user", "content": "go"}]
    for ids in groups:
        raw.append({"role": "assistant", "content": None, "tool_calls": [_call(i) for i in ids]})
        raw += [{"role": "tool", "tool_call_id": i, "content": f"r-{i}"} for i in ids]
    messages = from_openai(raw)
    validate(messages)
    _, out = to_anthropic(messages)
    ids = _tool_use_ids(out)
    assert len(ids) == len(set(ids)) == sum(len(g) for g in groups)
    assert all(ANTHROPIC_ID.fullmatch(i) for i in ids)
