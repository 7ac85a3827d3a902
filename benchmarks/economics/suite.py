"""The economics suite: every transcript replayed through the Compactor with the reference
ladder and with one that has no window; tokens sent, compactions, summariser calls,
prompt-cache share. Answers a JSON-ready dict; ``economics_report`` turns it into tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from compaction import events
from compaction.tokens import TiktokenCounter

from ..common.data import Case
from ..common.ladders import _NO_TRANSCRIPTS, full_ladder, summary_ladder
from ..common.measure import progress, ratio

__all__ = ["ECONOMY_LADDERS", "economics", "economics_case", "economics_suite"]


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


# -- the suite entry (registered in benchmarks/run.py) ------------------------------------------


def economics_suite(ctx: Any) -> dict[str, Any]:
    if not ctx.cases:
        return {"skipped": ctx.transcripts_skipped or _NO_TRANSCRIPTS}
    return economics(ctx.cases, ctx.concat)
