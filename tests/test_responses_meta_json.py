"""A Responses conversation read by the adapter can be stored in a session and still be
written back as the items it came from: the calls it keeps in ``meta`` are plain JSON."""

from __future__ import annotations

import json
from pathlib import Path

from compaction.adapters.responses import from_responses, to_responses
from compaction.sessions import SessionStore

ITEMS = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix go.mod"}]},
    {"type": "reasoning", "summary": [], "content": None, "encrypted_content": None},
    {
        "type": "function_call",
        "name": "shell",
        "arguments": json.dumps({"command": ["bash", "-lc", "cat go.mod"]}),
        "call_id": "call_1",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "go 1.24"},
]


def test_a_responses_conversation_is_stored_and_written_back_unchanged(tmp_path: Path) -> None:
    messages = from_responses(ITEMS)
    json.dumps([dict(m.meta) for m in messages])  # raises if any meta is not JSON
    session = SessionStore.from_url(str(tmp_path / "sessions")).open("run")
    stored = session.add(messages)
    assert [m.tool_calls for m in stored] == [m.tool_calls for m in messages]
    # The assistant step is unchanged, so it is written back as its original items.
    assert to_responses(stored) == to_responses(messages)
    assert any(item.get("type") == "reasoning" for item in to_responses(stored))
