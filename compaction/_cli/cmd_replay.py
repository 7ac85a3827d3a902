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
from .inputs import STDIO, Source, load
from .ladder import build_ladder, cached, counter_label
from .render import Table, dump_json, render, say

__all__ = ["replay_file", "run"]


def replay_file(source: Source, options: dict[str, Any]) -> dict[str, Any]:
    """The report for one file (run in a worker process with ``-j``)."""
    import math

    from ..replay import ReplayTotals, replay

    counter = cached("counter", options["counter"], options["encoding"])
    pipeline = build_ladder(options["ladder"], options["config"], counter)
    loaded = load(source)
    tools = (getattr(loaded, "extra", None) or {}).get("tools")
    window = options["window"]
    compactor = _compactor(
        pipeline, options, counter, tools if isinstance(tools, list) else None, str(source.path)
    )
    records = list(replay(loaded.messages, compactor))
    calls = [_record(r) for r in records]
    return {
        "file": str(source.path),
        "format": loaded.format,
        "counter": counter_label(counter),
        "window": window,
        "compact_at": math.ceil(options["compact_at"] * window),
        "compact_to": math.floor(options["compact_to"] * window),
        "fits": all(c["tokens_sent"] <= window for c in calls),
        "calls": calls,
        "totals": _totals(ReplayTotals.of(records)),
    }


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


def _compactor(
    pipeline: Any, options: dict[str, Any], counter: Any, tools: Any, where: str | None
) -> Any:
    """The trigger for these options; settings it refuses (a window too small to compact
    into, tool schemas that take all of it) are bad usage, not a bug."""
    from ..trigger import Compactor

    try:
        return Compactor(
            pipeline,
            options["window"],
            compact_at=options["compact_at"],
            compact_to=options["compact_to"],
            counter=counter,
            tools=tools,
        )
    except ValueError as exc:
        text = " ".join(str(exc).split())
        where = where or f"--window {options['window']}"
        raise CliError(f"{where}: {text}") from None


def run(args: Any) -> int:
    if not args.compact_to < args.compact_at:
        raise CliError(
            f"--compact-to ({args.compact_to}) must be below --compact-at ({args.compact_at})"
        )
    counter = cached("counter", args.counter, args.encoding)
    options = {
        k: getattr(args, k)
        for k in ("counter", "encoding", "ladder", "config", "window", "compact_at", "compact_to")
    }
    # Bad keys, config or window: fail before reading any file.
    _compactor(build_ladder(args.ladder, args.config, counter), options, counter, None, None)
    batch = Batch(args.files, "replaying", args.jobs, args.verbose)
    single = batch.single
    if args.plot == STDIO:
        raise CliError("--plot writes a PNG file: give a file name, not '-'")
    if args.plot and not single:
        raise CliError("--plot draws one transcript: give a single FILE")
    with batch:
        reports = [r for _, r in batch.run(replay_file, options)]
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
