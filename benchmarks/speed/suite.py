"""The cold and warm suites: the counting floor and the cold ladder, and the warm turn (a
model call through the Compactor). Each answers a JSON-ready dict; ``cold_warm_report`` turns
them into tables.

The reference for every time is the **counting floor**: one pass of a *new* ``TiktokenCounter``
(cold cache) over the same conversation, measured in the same run, interleaved with the
measurement it is compared to (so a slower moment of the machine hits both). Counts are cached
per message, so a second pass over the same messages costs dictionary look-ups only: the floor
is the price of reading a conversation once, and a ladder that costs about that much does no
more than read it.
"""

from __future__ import annotations

import gc
import math
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

from compaction.messages import Message
from compaction.tokens import TiktokenCounter
from compaction.validate import is_valid

from ..common.data import Case
from ..common.ladders import (
    _NO_TRANSCRIPTS,
    LADDER_SHARE,
    call_points,
    forget_readings,
    free_ladder,
    fresh,
)
from ..common.measure import median, p99, progress, ratio, timed

__all__ = ["cold_case", "cold_ladder", "cold_suite", "warm_case", "warm_suite", "warm_turn"]


# -- counting floor and cold ladder -----------------------------------------------------------


def _floor_once(messages: Sequence[Message]) -> tuple[float, int]:
    counter = TiktokenCounter()
    seconds, tokens = timed(lambda: counter.count_messages(messages))
    return seconds, tokens


def _ladder_once(messages: Sequence[Message], target: int) -> tuple[float, Any, int]:
    # The default ladder, as every integration and the CLI run it: the free layers, the
    # offline summary and the last resort, whose cut must cost no more than reading the
    # conversation once (it is the only layer that runs on some files).
    from compaction.ladder import default_pipeline

    counter = TiktokenCounter()
    pipeline = default_pipeline(counter=counter)
    seconds, result = timed(lambda: pipeline.compact(messages, target=target, counter=counter))
    return seconds, result, counter.encoded


def cold_case(case: Case, repeats: int) -> dict[str, Any]:
    """Floor and cold ladder on one conversation, ``repeats`` interleaved pairs, medians.

    Each run gets a fresh copy of the messages (unpickled before the clock starts) and the
    readings the library keeps by text are emptied before each ladder: what a one-shot run in
    a new process pays, not what a second run over the same objects pays."""
    target = int(case.tokens * LADDER_SHARE)
    blob = pickle.dumps(tuple(case.messages))
    floors: list[float] = []
    ladders: list[float] = []
    result = None
    encoded = 0
    for _ in range(repeats):
        floors.append(_floor_once(fresh(blob))[0])
        messages = fresh(blob)
        forget_readings()
        seconds, result, encoded = _ladder_once(messages, target)
        ladders.append(seconds)
    assert result is not None
    floor, ladder = median(floors), median(ladders)
    return {
        "name": case.name,
        "format": case.format,
        "messages": case.size,
        "tokens": case.tokens,
        "target": target,
        "floor_s": floor,
        "ladder_s": ladder,
        "ratio": ratio(ladder, floor),
        "after": result.after,
        "fits": result.fits,
        "valid": is_valid(result.messages),
        "applied": [a.strategy for a in result.applied],
        "encoded": encoded,
    }


def _group(name: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    floor = sum(r["floor_s"] for r in rows)
    ladder = sum(r["ladder_s"] for r in rows)
    ratios = [r["ratio"] for r in rows]
    return {
        "name": name,
        "files": len(rows),
        "messages": sum(r["messages"] for r in rows),
        "tokens": sum(r["tokens"] for r in rows),
        "floor_s": floor,
        "ladder_s": ladder,
        "ratio": ratio(ladder, floor),
        "median_ratio": median(ratios),
        "worst_ratio": max(ratios),
        "worst": max(rows, key=lambda r: r["ratio"])["name"],
        "within_goal": sum(1 for x in ratios if x <= 1.5),
        "valid": sum(1 for r in rows if r["valid"]),
        "fits": sum(1 for r in rows if r["fits"]),
    }


def cold_ladder(cases: Sequence[Case], concat: Case | None, repeats: int) -> dict[str, Any]:
    """The counting floor and the cold default ladder to 40% on every transcript and the
    concat."""
    rows = []
    for i, case in enumerate(cases):
        rows.append(cold_case(case, repeats))
        if (i + 1) % 10 == 0 or i + 1 == len(cases):
            progress(f"cold ladder: {i + 1}/{len(cases)} transcripts")
    groups = []
    for fmt in sorted({r["format"] for r in rows}):
        groups.append(_group(fmt, [r for r in rows if r["format"] == fmt]))
    if rows:
        groups.append(_group("all transcripts", rows))
    concat_row = None
    if concat is not None:
        progress(f"cold ladder: concatenation ({concat.size} messages)")
        concat_row = cold_case(concat, repeats)
    return {"share": LADDER_SHARE, "cases": rows, "groups": groups, "concat": concat_row}


# -- warm turn --------------------------------------------------------------------------------


def _replay_timed(
    messages: tuple[Message, ...], window: int, pipeline_factory: Callable[..., Any]
) -> tuple[list[float], list[bool]]:
    """Time ``before_call`` at every model call of the transcript, the way an agent makes
    them: one list that it keeps appending to (copying the list per call would be the
    harness's cost, and would flush the CPU caches before every timed call)."""
    from compaction.trigger import Compactor

    counter = TiktokenCounter()
    compactor = Compactor(pipeline_factory(counter), window, counter=counter)
    times: list[float] = []
    ran: list[bool] = []
    perf = time.perf_counter
    agent: list[Message] = []
    for i in call_points(messages):
        agent.extend(messages[len(agent) : i])
        start = perf()
        compactor.before_call(agent)
        times.append(perf() - start)
        ran.append(compactor.last_result is not None)
    return times, ran


def _counting_new(messages: tuple[Message, ...]) -> list[float]:
    """Per call, the time a fresh counter takes to count only what was appended since the
    previous call: the least any trigger must spend."""
    counter = TiktokenCounter()
    perf = time.perf_counter
    times: list[float] = []
    previous = 0
    for i in call_points(messages):
        new = messages[previous:i]
        start = perf()
        counter.count_messages(new)
        times.append(perf() - start)
        previous = i
    return times


def warm_case(case: Case, repeats: int, floor_s: float | None) -> dict[str, Any]:
    """Replay ``case`` ``repeats`` times; per call, the median over the repeats (a call that
    the machine happened to interrupt once does not become the p99)."""
    window = max(1, case.tokens // 2)
    runs: list[list[float]] = []
    counts: list[list[float]] = []
    ran: list[bool] = []
    for _ in range(repeats):
        gc.collect()
        times, ran = _replay_timed(case.messages, window, free_ladder)
        gc.collect()
        runs.append(times)
        counts.append(_counting_new(case.messages))
    per_call = [median(ts) for ts in zip(*runs, strict=True)]
    per_count = [median(ts) for ts in zip(*counts, strict=True)]
    quiet = [t for t, r in zip(per_call, ran, strict=True) if not r]
    busy = [t for t, r in zip(per_call, ran, strict=True) if r]
    overhead = [t - c for t, c, r in zip(per_call, per_count, ran, strict=True) if not r]
    total = median([sum(ts) for ts in runs])
    return {
        "name": case.name,
        "format": case.format,
        "messages": case.size,
        "tokens": case.tokens,
        "window": window,
        "calls": len(per_call),
        "quiet": quiet,
        "busy": busy,
        "overhead": overhead,
        "total_s": total,
        "total_vs_floor": ratio(total, floor_s) if floor_s else math.nan,
    }


def _summary(name: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    quiet = [t for r in rows for t in r["quiet"]]
    busy = [t for r in rows for t in r["busy"]]
    overhead = [t for r in rows for t in r["overhead"]]
    totals = [r["total_s"] for r in rows]
    floors = [r["total_s"] / r["total_vs_floor"] for r in rows if r["total_vs_floor"] > 0]
    return {
        "name": name,
        "files": len(rows),
        "quiet_calls": len(quiet),
        "quiet_median_us": median(quiet) * 1e6,
        "quiet_p99_us": p99(quiet) * 1e6,
        "busy_calls": len(busy),
        "busy_median_ms": median(busy) * 1e3,
        "busy_p99_ms": p99(busy) * 1e3,
        "overhead_median_us": median(overhead) * 1e6,
        "overhead_p99_us": p99(overhead) * 1e6,
        "total_s": sum(totals),
        "total_vs_floor": ratio(sum(totals), sum(floors)) if floors else math.nan,
    }


def warm_turn(
    cases: Sequence[Case],
    concat: Case | None,
    repeats: int,
    floors: dict[str, float],
) -> dict[str, Any]:
    """Replay every transcript through the Compactor (window = half its size, free ladder):
    time per model call, with and without a compaction."""
    rows = []
    for i, case in enumerate(cases):
        rows.append(warm_case(case, repeats, floors.get(case.name)))
        if (i + 1) % 10 == 0 or i + 1 == len(cases):
            progress(f"warm turn: {i + 1}/{len(cases)} transcripts")
    groups = [
        _summary(fmt, [r for r in rows if r["format"] == fmt])
        for fmt in sorted({r["format"] for r in rows})
    ]
    if rows:
        groups.append(_summary("all transcripts", rows))
    concat_row = None
    if concat is not None:
        progress("warm turn: concatenation")
        concat_row = _summary(concat.name, [warm_case(concat, repeats, floors.get(concat.name))])
    return {"groups": groups, "concat": concat_row}


# -- the suite entries (registered in benchmarks/run.py) --------------------------------------


def cold_suite(ctx: Any) -> dict[str, Any]:
    if not ctx.cases:
        return {"skipped": ctx.transcripts_skipped or _NO_TRANSCRIPTS}
    return cold_ladder(ctx.cases, ctx.concat, ctx.repeats)


def warm_suite(ctx: Any) -> dict[str, Any]:
    if not ctx.cases:
        return {"skipped": ctx.transcripts_skipped or _NO_TRANSCRIPTS}
    # The replay/floor column uses the floors the cold suite measured, when it ran first.
    cold = ctx.results.get("cold") or {}
    floors = {
        row["name"]: row["floor_s"]
        for row in [*cold.get("cases", ()), *([cold["concat"]] if cold.get("concat") else [])]
    }
    return warm_turn(ctx.cases, ctx.concat, ctx.repeats, floors)
