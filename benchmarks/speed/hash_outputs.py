"""One hash per (transcript, target) of what the default ladder outputs: a speed change must
leave every one of them as it was.

For every transcript under ``../shared/data/transcripts`` (or ``--transcripts DIR``) and each
target (25%, 40% and 60% of the transcript's size by ``TiktokenCounter``), the default ladder
compacts a fresh copy of the messages, and the result is hashed: every message's role,
content, tool calls (id, name, arguments), tool-call id, ``meta`` (as sorted JSON), and the
result's token counts (before, after, target) and the layers it applied. Timings are left out.

``--live`` hashes the live loop instead: every transcript replayed call by call through
``Compactor.before_call`` with a window of half its size, every call's answer hashed (what a
run reuses from an earlier run in the loop must not change what it writes). ``--long N``
hashes the same loop over one long session of N messages made of the transcripts end to end
(``benchmarks.scaling.real``), window 200k: the summary rounds of a long session, call by call.

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

from compaction.check import call_points
from compaction.ladder import default_pipeline
from compaction.result import CompactionResult
from compaction.tokens import TiktokenCounter
from compaction.trigger import Compactor

from ..common.data import DEFAULT_TRANSCRIPTS, load_cases

__all__ = ["TARGETS", "digest", "main"]

TARGETS = (0.25, 0.40, 0.60)


def _rows(h: Any, messages: Any) -> None:
    for m in messages:
        row: dict[str, Any] = {
            "role": m.role,
            "content": m.content,
            "calls": [(c.id, c.name, c.arguments) for c in m.tool_calls],
            "call_id": m.tool_call_id,
            "meta": m.meta,
        }
        h.update(json.dumps(row, sort_keys=True, default=repr).encode())
        h.update(b"\0")


def digest(result: CompactionResult) -> str:
    """The hash of everything ``result`` says except how long it took."""
    h = hashlib.sha256()
    _rows(h, result.messages)
    tail = {
        "before": result.before,
        "after": result.after,
        "target": result.target,
        "applied": [(a.strategy, a.before, a.after) for a in result.applied],
        "declined": [repr(getattr(d, "strategy", d)) for d in result.declined],
    }
    h.update(json.dumps(tail, sort_keys=True).encode())
    return h.hexdigest()[:16]


def live_digest(messages: Any, window: int) -> str:
    """The hash of every answer ``before_call`` gives over the session, call by call: each
    answer as how many messages of the last one it keeps at its head (equal by value), then
    the rest hashed in full (a long session's answers share most of their messages)."""
    compactor = Compactor(None, window, counter=TiktokenCounter())
    history: list[Any] = []
    points = set(call_points(messages))
    h = hashlib.sha256()
    last: list[Any] = []
    for i, m in enumerate(messages):
        if i in points:
            answer = list(compactor.before_call(history))
            kept = 0
            for old, new in zip(last, answer, strict=False):
                if old is not new and old != new:
                    break
                kept += 1
            h.update(f"\1{kept} {len(answer)}\1".encode())
            _rows(h, answer[kept:])
            last = answer
        history.append(m)
    h.update(str(compactor.stats.compactions).encode())
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.speed.hash_outputs")
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    parser.add_argument("--live", action="store_true", help="hash the live loop (window: half)")
    parser.add_argument("--long", type=int, nargs="*", default=[], metavar="N")
    args = parser.parse_args(argv)
    cases, _ = load_cases(args.transcripts)
    whole = hashlib.sha256()
    if args.long:
        from ..scaling.real import LIVE_WINDOW, long_session

        for n in args.long:
            line = f"long {n} {live_digest(long_session(cases, n), LIVE_WINDOW)}"
            whole.update(line.encode())
            print(line, flush=True)
        print(f"all {whole.hexdigest()[:16]}")
        return 0
    for case in cases:
        blob = pickle.dumps(list(case.messages))
        if args.live:
            window = max(1, case.tokens // 2)
            line = f"{case.name} live {live_digest(tuple(pickle.loads(blob)), window)}"
            whole.update(line.encode())
            print(line, flush=True)
            continue
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
