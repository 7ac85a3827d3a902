"""The benchmarks themselves. Each answers a JSON-ready dict; ``report`` turns them into tables.

The reference for every time is the **counting floor**: one pass of a *new* ``TiktokenCounter``
(cold cache) over the same conversation, measured in the same run, interleaved with the
measurement it is compared to (so a slower moment of the machine hits both). Counts are cached
per message, so a second pass over the same messages costs dictionary look-ups only: the floor
is the price of reading a conversation once, and a ladder that costs about that much does no
more than read it.
"""

from __future__ import annotations

import contextlib
import gc
import math
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from compaction import events
from compaction.messages import Message
from compaction.pipeline import CompactionPipeline
from compaction.tokens import TiktokenCounter
from compaction.validate import is_valid

from .data import Case
from .measure import median, p99, progress, ratio, timed

__all__ = [
    "LADDER_SHARE",
    "cold_ladder",
    "cold_suite",
    "economics_suite",
    "peers_suite",
    "warm_suite",
    "economics",
    "free_ladder",
    "side_by_side",
    "warm_turn",
]

#: The cold ladder and the side by side compact to this share of the conversation's size.
LADDER_SHARE = 0.4


def free_ladder(counter: TiktokenCounter | None = None) -> CompactionPipeline:
    """ToolResults -> SlidingWindow: the two layers that cost no model call."""
    from compaction.strategies.sliding_window import SlidingWindow
    from compaction.strategies.tool_results import ToolResults

    return CompactionPipeline(counter=counter).use(ToolResults).use(SlidingWindow)


def full_ladder(counter: TiktokenCounter | None = None) -> CompactionPipeline:
    """The reference ladder: ToolResults -> SlidingWindow -> Summary (offline extractive)."""
    from compaction.strategies.summary import Summary

    return free_ladder(counter).run(Summary())


def summary_ladder(counter: TiktokenCounter | None = None) -> CompactionPipeline:
    """ToolResults -> Summary: no window, so the summariser is reached whenever clearing
    tool output is not enough (what the summariser costs over a run)."""
    from compaction.strategies.summary import Summary
    from compaction.strategies.tool_results import ToolResults

    return CompactionPipeline(counter=counter).use(ToolResults).run(Summary())


def warm_up() -> None:
    """Pay the one-time costs (lazy imports, first encodings, first events) before anything
    is timed, so the first measured conversation does not carry them."""
    from .synthetic import conversation

    messages = conversation(300, seed=1)
    counter = TiktokenCounter()
    tokens = counter.count_messages(messages)
    free_ladder(TiktokenCounter()).compact(messages, target=int(tokens * LADDER_SHARE))
    with contextlib.suppress(ImportError):
        full_ladder(TiktokenCounter()).compact(messages, target=int(tokens * 0.1))
    from compaction.trigger import Compactor

    compactor = Compactor(free_ladder(counter), window=tokens, counter=counter)
    for i in call_points(messages):
        compactor.before_call(messages[:i])


# -- counting floor and cold ladder -----------------------------------------------------------


def _floor_once(messages: Sequence[Message]) -> tuple[float, int]:
    counter = TiktokenCounter()
    seconds, tokens = timed(lambda: counter.count_messages(messages))
    return seconds, tokens


def _ladder_once(messages: Sequence[Message], target: int) -> tuple[float, Any, int]:
    counter = TiktokenCounter()
    pipeline = free_ladder(counter)
    seconds, result = timed(lambda: pipeline.compact(messages, target=target, counter=counter))
    return seconds, result, counter.encoded


def cold_case(case: Case, repeats: int) -> dict[str, Any]:
    """Floor and cold ladder on one conversation, ``repeats`` interleaved pairs, medians."""
    target = int(case.tokens * LADDER_SHARE)
    floors: list[float] = []
    ladders: list[float] = []
    result = None
    encoded = 0
    for _ in range(repeats):
        floors.append(_floor_once(case.messages)[0])
        seconds, result, encoded = _ladder_once(case.messages, target)
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
    """The counting floor and the cold free ladder to 40% on every transcript and the concat."""
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


def call_points(messages: Sequence[Message]) -> list[int]:
    """Where the agent called the model, as :func:`compaction.replay.replay` sees it: before
    each assistant message that follows a non-assistant one (some logs store one answer as
    several assistant messages). ``messages[:i]`` is what it sent."""
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "assistant" and i > 0 and messages[i - 1].role != "assistant"
    ]


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


# -- side by side -----------------------------------------------------------------------------


class _TimeLimit(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Stop a peer that runs longer than ``seconds`` (POSIX main thread only)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _TimeLimit

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _measure(
    run: Callable[[], Sequence[Message]], repeats: int, target: int, limit: float
) -> dict[str, Any]:
    times: list[float] = []
    output: Sequence[Message] = ()
    for _ in range(repeats):
        try:
            with _time_limit(limit):
                seconds, output = timed(run)
        except _TimeLimit:
            return {"stopped_after_s": limit}
        times.append(seconds)
    kept = TiktokenCounter().count_messages(output)
    return {
        "seconds": median(times),
        "kept": kept,
        "budget_used": ratio(kept, target),
        "valid": is_valid(output),
        "messages_out": len(output),
    }


def side_by_side_case(case: Case, repeats: int, slow_repeats: int, limit: float) -> dict[str, Any]:
    from compaction.strategies.sliding_window import SlidingWindow
    from compaction.strategies.tool_results import ToolResults

    from . import peers

    messages = peers.roundtrip(case.messages)
    lc_messages = peers.to_langchain(messages)
    ours = TiktokenCounter()
    tokens = ours.count_messages(messages)
    theirs = peers.langchain_counter(ours)
    lc_tokens = sum(theirs(m) for m in lc_messages)
    if lc_tokens != tokens:
        raise AssertionError(f"{case.name}: counters disagree ({tokens} vs {lc_tokens})")
    target = int(tokens * LADDER_SHARE)

    def our(strategy_cls: type) -> Callable[[], Sequence[Message]]:
        def run() -> Sequence[Message]:
            return strategy_cls().apply(messages, target, counter=TiktokenCounter())

        return run

    def trim() -> Sequence[Message]:
        return peers.from_langchain(peers.trim_last(lc_messages, target, theirs))

    def clear(stop: bool) -> Callable[[], Sequence[Message]]:
        def run() -> Sequence[Message]:
            out = peers.clear_tool_uses(lc_messages, target, tokens, theirs, stop_at_target=stop)
            return peers.from_langchain(out)

        return run

    return {
        "name": case.name,
        "format": case.format,
        "messages": case.size,
        "tokens": tokens,
        "target": target,
        "sliding_window": _measure(our(SlidingWindow), repeats, target, limit),
        "trim_messages": _measure(trim, repeats, target, limit),
        "tool_results": _measure(our(ToolResults), repeats, target, limit),
        "clear_tool_uses": _measure(clear(False), repeats, target, limit),
        "clear_tool_uses_to_target": _measure(clear(True), slow_repeats, target, limit),
    }


PAIRS = (
    ("sliding_window", "trim_messages"),
    ("tool_results", "clear_tool_uses"),
    ("tool_results", "clear_tool_uses_to_target"),
)
CONTENDERS = (
    "sliding_window",
    "trim_messages",
    "tool_results",
    "clear_tool_uses",
    "clear_tool_uses_to_target",
)


def _peer_totals(name: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "files": len(rows)}
    for key in CONTENDERS:
        done = [r[key] for r in rows if "seconds" in r[key]]
        out[key] = {
            "seconds": sum(d["seconds"] for d in done),
            "completed": len(done),
            "stopped": len(rows) - len(done),
            "valid": sum(1 for d in done if d["valid"]),
            "median_budget_used": median([d["budget_used"] for d in done]),
            "within_budget": sum(1 for d in done if d["budget_used"] <= 1.0),
        }
    return out


def side_by_side(
    cases: Sequence[Case],
    concat: Case | None,
    repeats: int,
    *,
    slow_repeats: int = 1,
    limit: float = 20.0,
) -> dict[str, Any]:
    """Our SlidingWindow and ToolResults against LangChain's trim_messages and
    ClearToolUsesEdit, same messages, same encoding, same target (40% of the size)."""
    from . import peers

    reason = peers.available()
    if reason is not None:
        return {"skipped": reason}
    rows = []
    for i, case in enumerate(cases):
        rows.append(side_by_side_case(case, repeats, slow_repeats, limit))
        if (i + 1) % 10 == 0 or i + 1 == len(cases):
            progress(f"side by side: {i + 1}/{len(cases)} transcripts")
    concat_row = None
    if concat is not None:
        progress("side by side: concatenation (LangChain's recounting is slow here)")
        concat_row = side_by_side_case(concat, repeats, slow_repeats, limit)
    return {
        "share": LADDER_SHARE,
        "limit_s": limit,
        "totals": _peer_totals("all transcripts", rows) if rows else None,
        "cases": rows,
        "concat": concat_row,
    }


# -- replay economics -------------------------------------------------------------------------


def economics_case(case: Case, pipeline_factory: Callable[..., Any]) -> dict[str, Any]:
    """One replay (``compaction.replay``) through the Compactor, window = half the size."""
    from compaction.replay import ReplayTotals, replay
    from compaction.trigger import Compactor

    window = max(1, case.tokens // 2)
    counter = TiktokenCounter()
    compactor = Compactor(pipeline_factory(counter), window, counter=counter)
    summaries: list[dict[str, Any]] = []

    def on_summarized(sender: Any, **kw: Any) -> None:
        summaries.append(kw)

    events.summarized.connect(on_summarized)
    try:
        records = list(replay(case.messages, compactor))
    finally:
        events.summarized.disconnect(on_summarized)
    totals = ReplayTotals.of(records)
    # What the same calls would have sent with no compaction: every prefix, in full.
    running, raw, k = 0, 0, 0
    for r in records:
        while k < r.index:
            running += counter.count(case.messages[k])
            k += 1
        raw += running
    shares = [r.prefix_share for r in records[1:]]
    return {
        "name": case.name,
        "format": case.format,
        "messages": case.size,
        "tokens": case.tokens,
        "window": window,
        "calls": totals.calls,
        "tokens_sent": totals.tokens_sent,
        "tokens_uncompacted": raw,
        "saved_share": 1 - ratio(totals.tokens_sent, raw) if raw else math.nan,
        "compactions": totals.compactions,
        "strategies": dict(totals.strategies),
        "summarizer_calls": len(summaries),
        "summarizer_failures": sum(1 for s in summaries if not s.get("ok", True)),
        "mean_prefix_share": sum(shares) / len(shares) if shares else math.nan,
        "cache_share": totals.cache_share,
        "max_sent": totals.max_tokens_sent,
        "over_window": sum(1 for r in records if r.tokens_sent > window),
    }


ECONOMY_LADDERS = {
    "ToolResults → SlidingWindow → Summary": full_ladder,
    "ToolResults → Summary": summary_ladder,
}


def _economy_totals(name: str, ladder: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    sent = sum(r["tokens_sent"] for r in rows)
    raw = sum(r["tokens_uncompacted"] for r in rows)
    shares = [r["mean_prefix_share"] for r in rows if not math.isnan(r["mean_prefix_share"])]
    calls = sum(r["calls"] for r in rows)
    return {
        "name": name,
        "ladder": ladder,
        "files": len(rows),
        "calls": calls,
        "tokens_sent": sent,
        "tokens_uncompacted": raw,
        "saved_share": 1 - ratio(sent, raw) if raw else math.nan,
        "compactions": sum(r["compactions"] for r in rows),
        "summarizer_calls": sum(r["summarizer_calls"] for r in rows),
        "summarizer_failures": sum(r["summarizer_failures"] for r in rows),
        # Weighted by calls, so a 3-call subagent does not count as much as a 500-call session.
        "mean_prefix_share": (
            sum(r["mean_prefix_share"] * max(0, r["calls"] - 1) for r in rows if r["calls"] > 1)
            / max(1, sum(r["calls"] - 1 for r in rows if r["calls"] > 1))
            if shares
            else math.nan
        ),
        "cache_share": ratio(sum(r["cache_share"] * r["tokens_sent"] for r in rows), sent),
        "over_window": sum(r["over_window"] for r in rows),
    }


def economics(cases: Sequence[Case], concat: Case | None) -> dict[str, Any]:
    """Replay every transcript with the reference ladder, and with ToolResults -> Summary."""
    try:
        full_ladder()
    except ImportError as exc:
        return {"skipped": f"Summary unavailable ({exc})"}
    rows: list[dict[str, Any]] = []
    totals: list[dict[str, Any]] = []
    for ladder, factory in ECONOMY_LADDERS.items():
        mine = []
        for case in cases:
            row = economics_case(case, factory)
            row["ladder"] = ladder
            mine.append(row)
        progress(f"replay economics: {len(cases)} transcripts with {ladder}")
        for fmt in sorted({r["format"] for r in mine}):
            totals.append(_economy_totals(fmt, ladder, [r for r in mine if r["format"] == fmt]))
        totals.append(_economy_totals("all transcripts", ladder, mine))
        if concat is not None:
            row = economics_case(concat, factory)
            row["ladder"] = ladder
            totals.append(_economy_totals(concat.name, ladder, [row]))
        rows.extend(mine)
    return {"rows": rows, "totals": totals}


# -- the suite entries (registered in benchmarks/run.py) --------------------------------------

_NO_TRANSCRIPTS = "no transcripts"


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


def peers_suite(ctx: Any) -> dict[str, Any]:
    if not ctx.cases:
        return {"skipped": ctx.transcripts_skipped or _NO_TRANSCRIPTS}
    return side_by_side(
        ctx.cases,
        ctx.concat,
        repeats=max(1, min(ctx.repeats, 3)),
        slow_repeats=1,
        limit=5.0 if ctx.quick else 30.0,
    )


def economics_suite(ctx: Any) -> dict[str, Any]:
    if not ctx.cases:
        return {"skipped": ctx.transcripts_skipped or _NO_TRANSCRIPTS}
    return economics(ctx.cases, ctx.concat)
