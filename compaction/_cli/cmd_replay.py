"""``compaction replay``: what each model call of a recorded run would have sent.

The transcript goes through :func:`compaction.replay.replay` with a
:class:`~compaction.trigger.Compactor` (compact at ``--compact-at`` of the window, down to
``--compact-to``), and every call is shown: tokens sent, whether it compacted (and with what),
and the share of the request a provider's prompt cache could have reused.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .batch import Batch
from .errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNREACHED, CliError
from .inputs import Source, load
from .ladder import build_counter, build_ladder, counter_label
from .render import Table, dump_json, render, say

__all__ = ["run"]


def _replay(loaded: Any, args: Any, counter: Any) -> tuple[list[Any], Any]:
    from ..replay import ReplayTotals, replay
    from ..trigger import Compactor

    pipeline = build_ladder(args.ladder, args.config, counter)
    tools = (getattr(loaded, "extra", None) or {}).get("tools")
    compactor = Compactor(
        pipeline,
        args.window,
        compact_at=args.compact_at,
        compact_to=args.compact_to,
        counter=counter,
        tools=tools if isinstance(tools, list) else None,
    )
    records = list(replay(loaded.messages, compactor))
    return records, ReplayTotals.of(records)


def _record(r: Any) -> dict[str, Any]:
    return {
        "call": r.call,
        "index": r.index,
        "messages": r.messages,
        "tokens_sent": r.tokens_sent,
        "estimate": r.estimate,
        "compacted": r.compacted,
        "strategies": list(r.strategies),
        "tokens_saved": r.tokens_saved,
        "prefix_tokens": r.prefix_tokens,
        "prefix_share": round(r.prefix_share, 4),
    }


def _totals(t: Any) -> dict[str, Any]:
    return {
        "calls": t.calls,
        "compactions": t.compactions,
        "tokens_sent": t.tokens_sent,
        "max_tokens_sent": t.max_tokens_sent,
        "tokens_saved": t.tokens_saved,
        "prefix_tokens": t.prefix_tokens,
        "cache_share": round(t.cache_share, 4),
        "strategies": dict(t.strategies),
    }


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _print_single(report: dict[str, Any]) -> None:
    t = report["totals"]
    say(
        f"{report['file']} ({report['format']}): {t['calls']} model calls, window "
        f"{report['window']:,}, compact at {report['compact_at']:,} tokens down to "
        f"{report['compact_to']:,} (counter: {report['counter']})",
        sys.stdout,
    )
    sys.stdout.write("\n")
    table = Table(
        ["call", "msg #", "messages", "tokens sent", "compacted", "saved", "prefix"],
        right=frozenset({"call", "msg #", "messages", "tokens sent", "saved", "prefix"}),
    )
    for r in report["calls"]:
        table.add(
            r["call"],
            r["index"],
            r["messages"],
            r["tokens_sent"],
            " -> ".join(r["strategies"]) if r["compacted"] else "",
            r["tokens_saved"] or "",
            _pct(r["prefix_share"]),
        )
    plural = "" if t["compactions"] == 1 else "s"
    table.footer = (
        "total",
        "",
        "",
        t["tokens_sent"],
        f"{t['compactions']} compaction{plural}",
        t["tokens_saved"],
        _pct(t["cache_share"]),
    )
    render(table)
    say(
        f"largest request: {t['max_tokens_sent']:,} tokens of a {report['window']:,} window; "
        f"prompt-cache share over the run: {_pct(t['cache_share'])}",
        sys.stdout,
    )


def _print_summary(reports: list[dict[str, Any]]) -> None:
    table = Table(
        ["file", "calls", "compactions", "max sent", "tokens sent", "cache share", "fits"],
        title="replay summary",
        right=frozenset({"calls", "compactions", "max sent", "tokens sent", "cache share"}),
    )
    for r in reports:
        t = r["totals"]
        table.add(
            r["file"],
            t["calls"],
            t["compactions"],
            t["max_tokens_sent"],
            t["tokens_sent"],
            _pct(t["cache_share"]),
            "yes" if r["fits"] else "NO",
        )
    render(table)


def run(args: Any) -> int:
    import math

    if not args.compact_to < args.compact_at:
        raise CliError(
            f"--compact-to ({args.compact_to}) must be below --compact-at ({args.compact_at})"
        )
    counter = build_counter(args.counter, args.encoding)
    build_ladder(args.ladder, args.config, counter)  # bad keys or config: fail before reading
    batch = Batch(args.files, "replaying")
    single = batch.single
    if args.plot and not single:
        raise CliError("--plot draws one transcript: give a single FILE")
    reports: list[dict[str, Any]] = []
    with batch:
        for source in batch:

            def replay(source: Source = source) -> tuple[Any, Any, Any]:
                loaded = load(source.path)
                return (loaded, *_replay(loaded, args, counter))

            done = batch.attempt(source, replay)
            if done is not None:
                loaded, records, totals = done
                calls = [_record(r) for r in records]
                reports.append(
                    {
                        "file": str(source.path),
                        "format": loaded.format,
                        "counter": counter_label(counter),
                        "window": args.window,
                        "compact_at": math.ceil(args.compact_at * args.window),
                        "compact_to": math.floor(args.compact_to * args.window),
                        "fits": all(c["tokens_sent"] <= args.window for c in calls),
                        "calls": calls,
                        "totals": _totals(totals),
                    }
                )
    if args.plot:
        from .plot import plot_replay

        plot_replay(reports[0], Path(args.plot))
    if args.json:
        dump_json(reports[0] if single else {"files": reports, "problems": batch.problems})
    elif single:
        _print_single(reports[0])
    else:
        _print_summary(reports)
    if args.plot:
        say(f"plot written to {args.plot}")
    batch.say_problems()
    for r in reports:
        if not r["fits"]:
            say(
                f"compaction: {r['file']}: a request exceeded the {args.window:,}-token window "
                "even after compaction"
            )
    if batch.failed:
        return EXIT_BAD_INPUT
    return EXIT_OK if all(r["fits"] for r in reports) else EXIT_UNREACHED
