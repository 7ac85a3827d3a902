"""Small Claude Code logs for the cost tests, written as the real thing writes them (one JSON
record per line, timestamps and usage on the assistant lines), so they go through the real
reader."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

START = datetime(2026, 2, 11, 20, 0, 0, tzinfo=timezone.utc)


def _stamp(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def claude_code_log(
    path: Path,
    gaps: Sequence[float],
    *,
    output_size: int = 400,
    usage: bool = True,
    model: str = "claude-sonnet-4-5-20250929",
) -> Path:
    """A session of ``len(gaps)`` tool steps; step *i* happens ``gaps[i]`` seconds after the
    previous one; each tool result is ``output_size`` words."""
    records = [
        {
            "type": "user",
            "uuid": "u0",
            "timestamp": _stamp(0),
            "message": {"role": "user", "content": "Fix the failing test in parser.py please."},
        }
    ]
    at = 0.0
    for i, gap in enumerate(gaps):
        at += gap
        message = {
            "id": f"msg_{i}",
            "role": "assistant",
            "model": model,
            "content": [
                {"type": "text", "text": f"Step {i}: running the tests."},
                {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"i": i}},
            ],
        }
        if usage:
            message["usage"] = {
                "input_tokens": 3,
                "cache_read_input_tokens": 1000 * i,
                "cache_creation_input_tokens": 1000,
                "output_tokens": 50,
            }
        records.append(
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "timestamp": _stamp(at),
                "requestId": f"req_{i}",
                "message": message,
            }
        )
        records.append(
            {
                "type": "user",
                "uuid": f"t{i}",
                "timestamp": _stamp(at + 1),
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"toolu_{i}",
                            "content": f"result {i} "
                            + " ".join(f"w{i}x{k}" for k in range(output_size)),
                        }
                    ],
                },
            }
        )
    records.append(
        {
            "type": "assistant",
            "uuid": "end",
            "timestamp": _stamp(at + 5),
            "message": {
                "id": "msg_end",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": "Done."}],
            },
        }
    )
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path
