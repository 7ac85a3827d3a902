"""The peers suite: our SlidingWindow and ToolResults side by side with LangChain's
trim_messages and ClearToolUsesEdit (the conversions are in ``peers``). Answers a JSON-ready
dict; ``side_by_side_report`` turns it into tables.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from compaction.messages import Message
from compaction.tokens import TiktokenCounter
from compaction.validate import is_valid

from ..common.data import Case
from ..common.ladders import _NO_TRANSCRIPTS, LADDER_SHARE
from ..common.measure import median, progress, ratio, timed

__all__ = ["CONTENDERS", "PAIRS", "peers_suite", "side_by_side", "side_by_side_case"]


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

    from ..common import peers

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
    from ..common import peers

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


# -- the suite entry (registered in benchmarks/run.py) ------------------------------------------


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
