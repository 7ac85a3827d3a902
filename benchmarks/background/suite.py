"""A model summary that never blocks a turn: turn latency with a 2 s summariser, in the
background and not.

Real sessions replayed call by call through ``Compactor.before_call`` (the agent's loop), with a
ladder that needs its summary: tool-result clearing, then a model summary, then the last-resort
fit (a ladder that drops no whole turns, so the summary is what gets the conversation to its
target). The summariser sleeps 2 s, then answers the offline extractive summary (a model call's
latency with a deterministic answer). The agent's own model call is simulated by a short sleep
between calls, outside what is timed: a background summary comes back while the agent works.

Two runs per session, same window (a third of the session's size, so the ladder runs several
times): the summary in the call (``Compactor(ladder, window)``), and started early in the
background (``Background(start_at=0.5)``, compact at 0.7): the call runs only the free layers and
the summary is swapped in when ready. Every request sent is checked in the benchmark itself:
it validates and fits the window (an assertion: a failure ends the run).

Goal: with the background summary, no turn waits for the summariser (the slowest call is under a
quarter of its delay), while without it some do.

``python -m benchmarks.background.suite`` prints the table; it is the ``background`` suite of
``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.background"

from compaction import CompactionPipeline, Compactor
from compaction.background import Background
from compaction.check import call_points
from compaction.messages import Message
from compaction.strategies.fit import Fit
from compaction.strategies.summary import Summary
from compaction.strategies.tool_results import ToolResults
from compaction.summarizers.extractive import ExtractiveSummarizer
from compaction.tokens import TiktokenCounter
from compaction.validate import validate

from ..common.data import DEFAULT_TRANSCRIPTS, Case, load_cases
from ..common.ladders import warm_up
from ..common.measure import progress

__all__ = ["DELAY_S", "run"]

DELAY_S = 2.0  # what the summariser takes
MODEL_S = 0.5  # the agent's own model call between two calls (not timed)
START_AT = 0.5  # the background summary's early mark (compact_at is 0.7)
SHARE = 3  # the window is the session's size divided by this
#: the slowest call with the background summary, as a share of the summariser's delay
GOAL_SHARE = 0.25


class SlowSummarizer:
    """A model summariser's latency around the extractive summary: sleeps, then answers."""

    name = "slow"
    model_call = True

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0
        self._inner = ExtractiveSummarizer()

    def __call__(self, transcript: str, instructions: str = "") -> str:
        self.calls += 1
        time.sleep(self.delay)
        return self._inner(transcript)


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def replay(case: Case, *, background: bool, delay: float, model_s: float) -> dict[str, Any]:
    """One session through the trigger: every call's latency, and the checks of what it sent."""
    counter = TiktokenCounter()
    summarizer = SlowSummarizer(delay)
    ladder = CompactionPipeline(counter=counter).use(ToolResults()).use(Summary(summarizer))
    ladder.run(Fit())
    window = max(case.tokens // SHARE, 2_000)
    held = Background(start_at=START_AT) if background else None
    compactor = Compactor(ladder, window, counter=counter, background=held)
    messages: tuple[Message, ...] = case.messages
    points = set(call_points(messages))
    history: list[Message] = []
    latencies: list[float] = []
    try:
        for i, m in enumerate(messages):
            if i in points:
                started = time.perf_counter()
                request = compactor.before_call(history)
                latencies.append(time.perf_counter() - started)
                # the conversation sent is always valid and within the window
                validate(request)
                size = counter.count_messages(request)
                assert size <= window, f"{case.name}: call {len(latencies)} sent {size} > {window}"
                time.sleep(model_s)
            history.append(m)
    finally:
        compactor.close()
    return {
        "name": case.name,
        "format": case.format,
        "background": background,
        "window": window,
        "calls": len(latencies),
        "p50_s": _percentile(latencies, 0.5),
        "p95_s": _percentile(latencies, 0.95),
        "max_s": max(latencies, default=0.0),
        "waited": sum(t >= delay for t in latencies),
        "compactions": compactor.stats.compactions,
        "summaries": summarizer.calls,
        "swapped_in": held.stats.applied if held else None,
        "discarded": held.stats.discarded if held else None,
        "valid": True,
        "within_window": True,
    }


def _chosen(cases: Sequence[Case], quick: bool) -> list[Case]:
    """The largest session of each format (one with ``quick``): the longest replays."""
    best: dict[str, Case] = {}
    for case in cases:
        if case.format not in best or case.tokens > best[case.format].tokens:
            best[case.format] = case
    chosen = sorted(best.values(), key=lambda c: -c.tokens)
    return chosen[:1] if quick else chosen


def run(
    transcripts: Path = DEFAULT_TRANSCRIPTS,
    *,
    quick: bool = False,
    cases: Sequence[Case] | None = None,
    delay: float = DELAY_S,
    model_s: float = MODEL_S,
) -> dict[str, Any]:
    """Rows per session and mode, and the goal judged over them."""
    if cases is None:
        cases, _ = load_cases(transcripts)
    if not cases:
        return {"skipped": "no transcripts", "rows": [], "goals": []}
    warm_up()
    rows = []
    for case in _chosen(cases, quick):
        for background in (False, True):
            rows.append(replay(case, background=background, delay=delay, model_s=model_s))
            r = rows[-1]
            progress(
                f"background: {case.name} {'bg' if background else 'inline'} "
                f"max {r['max_s'] * 1000:.0f} ms, waited {r['waited']}/{r['calls']}"
            )
    mine = [r for r in rows if r["background"]]
    inline = [r for r in rows if not r["background"]]
    slowest = max(r["max_s"] for r in mine)
    goals = [
        {
            "goal": f"with the background summary no call waits for it (slowest < "
            f"{GOAL_SHARE:.0%} of the {delay:g} s delay)",
            "measured": f"slowest {slowest * 1000:.0f} ms; calls that waited: "
            f"{sum(r['waited'] for r in mine)} (in the call: {sum(r['waited'] for r in inline)})",
            "met": slowest < GOAL_SHARE * delay and sum(r["waited"] for r in inline) > 0,
        },
        {
            "goal": "every request sent is valid and within the window (asserted per call)",
            "measured": f"{sum(r['calls'] for r in rows)} requests checked",
            "met": True,
        },
    ]
    return {"rows": rows, "goals": goals, "delay_s": delay, "model_s": model_s}


def suite(ctx: Any) -> dict[str, Any]:
    """The suite entry of ``python -m benchmarks.run`` (see its ``SUITES``)."""
    quick = bool(getattr(ctx, "quick", False))
    return run(quick=quick, cases=ctx.cases, delay=0.3 if quick else DELAY_S)


def section(result: dict[str, Any]) -> list[str]:
    """The "## Background summary" section of RESULTS.md."""
    from ..common.report import goals_table

    lines = ["## Background summary", ""]
    if result.get("skipped"):
        return [*lines, f"Skipped: {result['skipped']}.", ""]
    lines += [
        "The largest session of each format replayed call by call through "
        "`Compactor.before_call`, ladder `ToolResults → Summary → Fit`, a summariser that takes "
        f"{result['delay_s']:g} s, the agent's own model call simulated by {result['model_s']:g} s "
        "between calls (not timed); window a third of the session. Latency of each call, with the "
        "summary in the call and started in the background (`Background(start_at=0.5)`). Every "
        "request sent is validated and checked against the window inside the benchmark. A "
        "compaction in the call can take two summary rounds (4 s): the summary summarises "
        "again while the result is still over target.",
        "",
        *goals_table(result["goals"]),
        "| session | summary | calls | p50 ms | p95 ms | max ms | calls ≥ delay | compactions "
        "| summaries | swapped in | discarded |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['name']} | {'background' if r['background'] else 'in the call'} | {r['calls']} "
            f"| {r['p50_s'] * 1000:.1f} | {r['p95_s'] * 1000:.1f} | {r['max_s'] * 1000:.1f} "
            f"| {r['waited']} | {r['compactions']} | {r['summaries']} "
            f"| {'-' if r['swapped_in'] is None else r['swapped_in']} "
            f"| {'-' if r['discarded'] is None else r['discarded']} |"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.background.suite", description=__doc__
    )
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--delay", type=float, default=DELAY_S)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.transcripts, quick=args.quick, delay=args.delay)
    print(json.dumps(result, indent=2) if args.json else "\n".join(section(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
