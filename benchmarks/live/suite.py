"""The live loop: a whole session replayed call by call through the trigger, against its floor.

An agent calls ``Compactor.before_call`` before every model call with its whole history. The
loop's floor is what any compactor must pay: each new message encoded once (a fresh
``TiktokenCounter`` counting the session's messages one time each). Over that, the trigger
checks each call's list and, when the window fills, runs the ladder; this suite times the whole
session both ways, on fresh copies of the messages for every run (pickled and unpickled, so no
cached hash or count survives from one run to the next), interleaved, the best of a few runs.

Two windows: 128k (most sessions never compact: the quiet-call cost) and half of each session's
own size (the ladder runs a few times per session, so the runs dominate). Goals: with the
window at half the session, at most 1.5x the floor at the median and 3x for the worst file
whose floor is at least 5 ms; with 128k, at most 1.1x at the median.

``python -m benchmarks.live.suite`` prints the table; it is the ``live`` suite of
``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.live"

from compaction.check import call_points
from compaction.messages import Message
from compaction.tokens import TiktokenCounter
from compaction.trigger import Compactor

from ..common.data import DEFAULT_TRANSCRIPTS, Case, load_cases
from ..common.ladders import forget_readings, warm_up
from ..common.measure import median, progress

__all__ = ["GOALS", "run"]

REPEATS = 3
MIN_FLOOR_S = 0.005  # the worst-file goal is judged on files at least this long to count
GOALS = {"half": (1.5, 3.0), "128k": (1.1, None)}


def _fresh(blob: bytes) -> tuple[Message, ...]:
    return tuple(pickle.loads(blob))


def _floor(messages: Sequence[Message]) -> float:
    counter = TiktokenCounter()
    started = time.perf_counter()
    for m in messages:
        counter.count(m)
    return time.perf_counter() - started


def _loop(messages: Sequence[Message], window: int) -> tuple[float, int]:
    # What the library keeps by text (not by the message objects, which are fresh copies)
    # would carry over from the last repeat: each loop starts from nothing, as a user's does.
    forget_readings()
    compactor = Compactor(None, window, counter=TiktokenCounter())
    history: list[Message] = []
    points = set(call_points(messages))
    started = time.perf_counter()
    for i, m in enumerate(messages):
        if i in points:
            compactor.before_call(history)
        history.append(m)
    return time.perf_counter() - started, compactor.stats.compactions


def measure(case: Case, window_name: str, repeats: int = REPEATS) -> dict[str, Any]:
    """Best-of-``repeats`` seconds for the floor and the loop on one session."""
    window = case.tokens // 2 if window_name == "half" else 128_000
    blob = pickle.dumps(list(case.messages))
    floors, loops, compactions = [], [], 0
    for _ in range(repeats):
        gc.collect()
        floors.append(_floor(_fresh(blob)))
        gc.collect()
        seconds, compactions = _loop(_fresh(blob), max(window, 1))
        loops.append(seconds)
    floor, loop = min(floors), min(loops)
    return {
        "name": case.name,
        "format": case.format,
        "messages": case.size,
        "tokens": case.tokens,
        "window": window_name,
        "floor_s": floor,
        "loop_s": loop,
        "ratio": loop / floor if floor else float("inf"),
        "compactions": compactions,
    }


def _judge(rows: Sequence[dict[str, Any]], window_name: str) -> dict[str, Any]:
    mine = [r for r in rows if r["window"] == window_name]
    if not mine:
        return {"window": window_name, "files": 0}
    med_goal, worst_goal = GOALS[window_name]
    long = [r for r in mine if r["floor_s"] >= MIN_FLOOR_S]
    worst = max(long, key=lambda r: r["ratio"]) if long else None
    out = {
        "window": window_name,
        "files": len(mine),
        "median": median([r["ratio"] for r in mine]),
        "median_goal": med_goal,
        "worst_long": worst["ratio"] if worst else None,
        "worst_long_file": worst["name"] if worst else None,
        "worst_goal": worst_goal,
    }
    out["met"] = out["median"] <= med_goal and (
        worst_goal is None or worst is None or worst["ratio"] <= worst_goal
    )
    return out


def run(
    transcripts: Path = DEFAULT_TRANSCRIPTS,
    *,
    quick: bool = False,
    limit: int | None = None,
    cases: Sequence[Case] | None = None,
) -> dict[str, Any]:
    """Rows per session and window, and the goals judged over them."""
    if cases is None:
        cases, _ = load_cases(transcripts, limit=3 if quick else limit)
    if not cases:
        return {"skipped": "no transcripts", "rows": [], "goals": []}
    warm_up()
    rows = []
    for case in cases:
        for window_name in ("half", "128k"):
            rows.append(measure(case, window_name, 1 if quick else REPEATS))
        progress(f"live: {case.name} {rows[-2]['ratio']:.2f}x / {rows[-1]['ratio']:.2f}x")
    return {"rows": rows, "goals": [_judge(rows, w) for w in ("half", "128k")]}


def suite(ctx: Any) -> dict[str, Any]:
    """The suite entry of ``python -m benchmarks.run`` (see its ``SUITES``)."""
    return run(quick=bool(getattr(ctx, "quick", False)), cases=ctx.cases)


def section(result: dict[str, Any]) -> list[str]:
    """The "## Live loop" section of RESULTS.md."""
    lines = ["## Live loop", ""]
    if result.get("skipped"):
        return [*lines, f"Skipped: {result['skipped']}.", ""]
    lines += [
        "Each session replayed call by call through `Compactor.before_call`, against the "
        "loop's floor (each message encoded once by a fresh counter); fresh copies of the "
        f"messages every run, best of {REPEATS}. Window: half the session's size, or 128k.",
        "",
        "| window | files | median | goal | worst (floor ≥ 5 ms) | goal | met |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for g in result["goals"]:
        if not g.get("files"):
            continue
        worst = f"{g['worst_long']:.2f}x ({g['worst_long_file']})" if g["worst_long"] else "-"
        goal = f"{g['worst_goal']}x" if g["worst_goal"] else "-"
        lines.append(
            f"| {g['window']} | {g['files']} | {g['median']:.2f}x | {g['median_goal']}x | "
            f"{worst} | {goal} | {'yes' if g['met'] else 'NO'} |"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.live.suite", description=__doc__)
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.transcripts, quick=args.quick, limit=args.limit)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(section(result)))
        for r in sorted(result["rows"], key=lambda r: -r["ratio"])[:10]:
            print(
                f"{r['window']:>5} {r['ratio']:6.2f}x floor {r['floor_s'] * 1000:7.1f} ms "
                f"compactions {r['compactions']:3d} {r['name']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
