"""Scaling on real sessions: long conversations made by concatenating the real transcripts.

Synthetic sessions flatter the ledger (the person says little in them); real ones carry
hundreds of rules, facts and goals by the time they are long. Here the shared transcripts are
laid end to end, in a fixed order and again from the start as often as needed, until the
conversation holds N messages; every message is made distinct (its content opens with a
word of its own, so no count, no statement and no cached read is shared between two copies),
tool-call ids are made unique, and later parts lose their leading system messages.

Two measures per size, interleaved, each run on a fresh copy of the messages (pickled and
unpickled, so no cached hash or count survives between runs):

- **cold**: one ``default_pipeline().compact()`` to 40% of the size, against one counting
  pass (a fresh ``TiktokenCounter`` counting every message once);
- **live**: the session replayed call by call through ``Compactor.before_call`` with a 200k
  window (the ladder runs every time the window fills), against its floor (each message
  encoded once).

``python -m benchmarks.scaling.real --sizes 1000 3000 10000`` prints one row per size and
the fitted exponent of the cold run (``--json`` for the raw figures).
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
    __package__ = "benchmarks.scaling"

from compaction.adapters.rekey import rekey
from compaction.check import call_points
from compaction.ladder import default_pipeline
from compaction.messages import Message
from compaction.tokens import TiktokenCounter
from compaction.trigger import Compactor

from ..common.data import DEFAULT_TRANSCRIPTS, Case, load_cases
from ..common.ladders import LADDER_SHARE, forget_readings, warm_up
from ..common.measure import median, progress
from .fit import scaling_fit

__all__ = ["LIVE_WINDOW", "long_session", "run"]

LIVE_WINDOW = 200_000
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _word(i: int) -> str:
    """A lower-case word of its own for message ``i`` (no digit: it is no value)."""
    out = "q"
    while True:
        i, r = divmod(i, 26)
        out += _LETTERS[r]
        if i == 0:
            return out


def long_session(cases: Sequence[Case], n: int) -> tuple[Message, ...]:
    """``n`` distinct messages: the transcripts end to end, from the start again as needed."""
    parts = sorted(cases, key=lambda c: c.name)
    out: list[Message] = []
    k = 0
    while len(out) < n:
        for case in parts:
            part = list(case.messages)
            if out:
                while part and part[0].role == "system":
                    part.pop(0)
            for m in part:
                out.append(m.replace(content=f"{_word(k)} {m.content}"))
                k += 1
            if len(out) >= n:
                break
    # end on a whole step: a call's results come with it
    end = n
    while end < len(out) and out[end].role == "tool":
        end += 1
    return tuple(rekey(out[:end]))


def _floor(messages: Sequence[Message]) -> float:
    counter = TiktokenCounter()
    t0 = time.perf_counter()
    for m in messages:
        counter.count(m)
    return time.perf_counter() - t0


def _cold(messages: Sequence[Message], target: int) -> float:
    forget_readings()
    counter = TiktokenCounter()
    pipeline = default_pipeline(counter=counter)
    t0 = time.perf_counter()
    pipeline.compact(messages, target=target, counter=counter)
    return time.perf_counter() - t0


def _live(messages: Sequence[Message], window: int) -> tuple[float, int]:
    forget_readings()
    compactor = Compactor(None, window, counter=TiktokenCounter())
    history: list[Message] = []
    points = set(call_points(messages))
    t0 = time.perf_counter()
    for i, m in enumerate(messages):
        if i in points:
            compactor.before_call(history)
        history.append(m)
    return time.perf_counter() - t0, compactor.stats.compactions


def run(
    sizes: Sequence[int],
    *,
    transcripts: Path = DEFAULT_TRANSCRIPTS,
    repeats: int = 1,
    live: bool = True,
    live_max: int = 30_000,
) -> dict[str, Any]:
    """Rows per size (cold and live against their floors) and the fits of the cold run."""
    cases, _ = load_cases(transcripts)
    if not cases:
        return {"skipped": "no transcripts", "rows": []}
    warm_up()
    sizes = sorted(set(sizes))
    blobs = {}
    tokens = {}
    for n in sizes:
        messages = long_session(cases, n)
        tokens[n] = TiktokenCounter().count_messages(messages)
        blobs[n] = pickle.dumps(list(messages))
    floors: dict[int, list[float]] = {n: [] for n in sizes}
    colds: dict[int, list[float]] = {n: [] for n in sizes}
    live_rows: dict[int, dict[str, Any]] = {}
    for r in range(repeats):
        for n in sizes:
            gc.collect()
            floors[n].append(_floor(pickle.loads(blobs[n])))
            gc.collect()
            colds[n].append(_cold(pickle.loads(blobs[n]), int(tokens[n] * LADDER_SHARE)))
            progress(f"real scaling: {n:,} cold {colds[n][-1]:.2f} s, floor {floors[n][-1]:.2f} s")
            if live and n <= live_max and r == 0:
                gc.collect()
                live_floor = _floor(pickle.loads(blobs[n]))
                gc.collect()
                seconds, compactions = _live(pickle.loads(blobs[n]), LIVE_WINDOW)
                live_rows[n] = {
                    "live_floor_s": live_floor,
                    "live_s": seconds,
                    "live_ratio": seconds / live_floor,
                    "compactions": compactions,
                }
                progress(f"real scaling: {n:,} live {seconds:.2f} s ({compactions} runs)")
    rows = []
    for n in sizes:
        row = {
            "messages": len(pickle.loads(blobs[n])),
            "tokens": tokens[n],
            "floor_s": median(floors[n]),
            "cold_s": median(colds[n]),
            "cold_ratio": median(colds[n]) / median(floors[n]),
            **live_rows.get(n, {}),
        }
        rows.append(row)
    out: dict[str, Any] = {"rows": rows}
    if len(sizes) >= 2:
        out["fit"] = {"cold": scaling_fit(colds), "floor": scaling_fit(floors)}
    return out


def section(result: dict[str, Any]) -> list[str]:
    """The "### Real sessions" part of RESULTS.md's scaling section."""
    lines = ["### Real sessions, concatenated", ""]
    if result.get("skipped"):
        return [*lines, f"Skipped: {result['skipped']}.", ""]
    lines += [
        "The shared transcripts end to end (from the start again as needed), every message "
        "made distinct, fresh copies every run (`benchmarks/scaling/real.py`). Cold: "
        "`default_pipeline().compact()` to 40% against one counting pass. Live: the session "
        f"call by call through `Compactor.before_call`, window {LIVE_WINDOW:,}, against its "
        "floor (each message encoded once).",
        "",
    ]
    fit = result.get("fit")
    if fit:
        k = fit["cold"]["exponent"]
        lo, hi = fit["cold"]["exponent_interval"]
        spread = f" (95% interval {lo:.3f} to {hi:.3f})" if hi > lo else " (one run a size)"
        lines += [f"Cold `compact()`: k = {k:.3f}{spread}.", ""]
    lines += [
        "| messages | tokens | floor s | cold s | cold/floor | live floor s | live s | "
        "live/floor | ladder runs |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        live = (
            f"{r['live_floor_s']:.2f} | {r['live_s']:.2f} | {r['live_ratio']:.2f}x | "
            f"{r['compactions']}"
            if "live_s" in r
            else "- | - | - | -"
        )
        lines.append(
            f"| {r['messages']:,} | {r['tokens']:,} | {r['floor_s']:.2f} | {r['cold_s']:.2f} | "
            f"{r['cold_ratio']:.2f}x | {live} |"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling.real", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 3_000, 10_000, 30_000])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-live", action="store_true")
    parser.add_argument("--live-max", type=int, default=30_000)
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(
        args.sizes,
        transcripts=args.transcripts,
        repeats=args.repeats,
        live=not args.no_live,
        live_max=args.live_max,
    )
    print(json.dumps(result, indent=2) if args.json else "\n".join(section(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
