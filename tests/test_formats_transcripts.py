"""Every real transcript present loads, validates, and holds exactly the calls its file holds.

The counts are taken here from the raw JSON, independently of the readers, so a reader that
drops, duplicates or invents a call or a result fails.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from compaction.formats import dumps, load, loads
from compaction.memory.transcript import is_note, parse
from compaction.validate import validate
from tests.conftest import TRANSCRIPTS, transcript_files

pytestmark = pytest.mark.transcripts

FILES = transcript_files()


def _raw_counts(path: Path) -> tuple[int, int, int]:
    """(tool calls, tool results, compaction summaries) as the raw file records them."""
    name = path.name
    if name.endswith(".jsonl"):
        records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        chat = [r for r in records if r.get("type") in ("user", "assistant")]
        if any(not r.get("isSidechain") for r in chat):
            chat = [r for r in chat if not r.get("isSidechain")]
        uses, results, summaries = set(), 0, 0
        for r in chat:
            content = r["message"]["content"]
            summaries += bool(r.get("isCompactSummary"))
            for block in content if isinstance(content, list) else ():
                if block.get("type") == "tool_use":
                    uses.add(block["id"])
                results += block.get("type") == "tool_result"
        return len(uses), results, summaries
    data = json.loads(path.read_text())
    if name.endswith(".traj.json"):
        msgs = data["messages"]
        calls = results = 0
        for i, m in enumerate(msgs):
            if (
                m["role"] == "assistant"
                and len(re.findall(r"```bash\s*\n(.*?)\n```", m["content"], re.DOTALL)) == 1
            ):
                calls += 1
                results += i + 1 < len(msgs) and msgs[i + 1]["role"] == "user"
        return calls, results, 0
    history = data["history"]
    if any(h.get("tool_calls") for h in history):
        calls = sum(len(h.get("tool_calls") or ()) for h in history)
        results = sum(len(h.get("tool_call_ids") or ()) for h in history)
        return calls, results, 0
    calls = results = 0
    for i, h in enumerate(history):
        if h["role"] == "assistant" and (h.get("action") or "").strip():
            calls += 1
            nxt = history[i + 1] if i + 1 < len(history) else None
            results += bool(nxt and nxt["role"] == "user" and not nxt.get("is_demo"))
    return calls, results, 0


@pytest.mark.skipif(not FILES, reason=f"real transcripts not present at {TRANSCRIPTS}")
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TRANSCRIPTS)))
def test_real_transcript_loads_with_every_call_and_result(path):
    loaded = load(path)
    validate(loaded.messages)
    expected_format = {
        "claude-code": "claude-code",
        "mini-swe-agent": "mini-swe-agent",
        "swe-agent": "swe-agent",
    }[path.relative_to(TRANSCRIPTS).parts[0]]
    assert loaded.format == expected_format

    raw_calls, raw_results, raw_summaries = _raw_counts(path)
    repairs = Counter(r.kind for r in loaded.repairs)
    calls = sum(len(m.tool_calls) for m in loaded.messages)
    results = sum(m.role == "tool" for m in loaded.messages)
    assert calls == raw_calls
    assert results == raw_results + repairs["no_result"] - repairs["orphan_result"]
    assert sum(is_note(m) for m in loaded.messages) == raw_summaries
    if raw_calls:
        assert results == calls

    transcript = parse(loaded.messages)
    if transcript.anchor is not None:
        assert not is_note(loaded.messages[transcript.groups[transcript.anchor].start])
    if loaded.format == "claude-code":
        assert all(m.id for m in loaded.messages if "repair" not in m.meta)

    # written back in its output shape, it reads again with the same calls and results
    text = dumps(loaded.messages, loaded.output_format)
    again = loads(text, name=f"{path.name} (written)")
    if again.format != loaded.output_format:
        # text-only user/assistant turns look the same in both shapes; they read as OpenAI
        written = json.loads(text)["messages"]
        assert again.format == "openai"
        assert all(
            isinstance(m["content"], str) or {b["type"] for b in m["content"]} <= {"text"}
            for m in written
        )
    validate(again.messages)
    assert [c for m in again.messages for c in m.tool_calls] == [
        c for m in loaded.messages for c in m.tool_calls
    ]
    assert [(m.tool_call_id, m.content) for m in again.messages if m.role == "tool"] == [
        (m.tool_call_id, m.content) for m in loaded.messages if m.role == "tool"
    ]


@pytest.mark.skipif(not FILES, reason=f"real transcripts not present at {TRANSCRIPTS}")
def test_real_transcripts_written_in_the_other_shape_are_sdk_requests():
    pydantic = pytest.importorskip("pydantic")
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionMessageParam

    from compaction.adapters.anthropic import to_anthropic
    from compaction.adapters.openai import to_openai

    openai_check = pydantic.TypeAdapter(list[ChatCompletionMessageParam])
    anthropic_check = pydantic.TypeAdapter(list[MessageParam])
    for path in FILES:
        messages = load(path).messages
        openai_check.validate_python(to_openai(messages))
        out = to_anthropic(messages).messages
        anthropic_check.validate_python(out)
        roles = [m["role"] for m in out]
        assert all(a != b for a, b in itertools.pairwise(roles)), path
