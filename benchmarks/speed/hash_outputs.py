"""One hash per (transcript, target) of what the default ladder outputs: a speed change must
leave every one of them as it was.

For every transcript under ``../shared/data/transcripts`` (or ``--transcripts DIR``) and each
target (25%, 40% and 60% of the transcript's size by ``TiktokenCounter``), the default ladder
compacts a fresh copy of the messages, and the result is hashed: every message's role,
content, tool calls (id, name, arguments), tool-call id, ``meta`` (as sorted JSON), and the
result's token counts (before, after, target) and the layers it applied. Timings are left out.

``python -m benchmarks.speed.hash_outputs > before.txt``, change the code, run it again and
``diff`` the two: one line per output, then one line hashing them all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.speed"

from compaction.ladder import default_pipeline
from compaction.result import CompactionResult
from compaction.tokens import TiktokenCounter

from ..common.data import DEFAULT_TRANSCRIPTS, load_cases

__all__ = ["TARGETS", "digest", "main"]

TARGETS = (0.25, 0.40, 0.60)


def digest(result: CompactionResult) -> str:
    """The hash of everything ``result`` says except how long it took."""
    h = hashlib.sha256()
    for m in result.messages:
        row: dict[str, Any] = {
            "role": m.role,
            "content": m.content,
            "calls": [(c.id, c.name, c.arguments) for c in m.tool_calls],
            "call_id": m.tool_call_id,
            "meta": m.meta,
        }
        h.update(json.dumps(row, sort_keys=True, default=repr).encode())
        h.update(b"\0")
    tail = {
        "before": result.before,
        "after": result.after,
        "target": result.target,
        "applied": [(a.strategy, a.before, a.after) for a in result.applied],
        "declined": [repr(getattr(d, "strategy", d)) for d in result.declined],
    }
    h.update(json.dumps(tail, sort_keys=True).encode())
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.speed.hash_outputs")
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    args = parser.parse_args(argv)
    cases, _ = load_cases(args.transcripts)
    whole = hashlib.sha256()
    for case in cases:
        blob = pickle.dumps(list(case.messages))
        for share in TARGETS:
            counter = TiktokenCounter()
            result = default_pipeline(counter=counter).compact(
                tuple(pickle.loads(blob)), target=max(1, int(case.tokens * share))
            )
            line = f"{case.name} {share:.2f} {digest(result)}"
            whole.update(line.encode())
            print(line, flush=True)
    print(f"all {whole.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
