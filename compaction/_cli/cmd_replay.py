"""``compaction replay``: what each model call of a recorded run would have sent.

The transcript goes through [`compaction.replay.replay`][] with a
[`Compactor`][compaction.trigger.Compactor] (compact at ``--compact-at`` of the window, down to
``--compact-to``), and every call is shown: tokens sent, whether it compacted (and with what),
and the share of the request a provider's prompt cache could have reused.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import attrs

from ..pricing.recorded import MAX_TOKENS
from .batch import Batch
from .errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNREACHED, CliError
from .inputs import STDIO, Source, check_format, load
from .ladder import build_ladder, cached, counter_label
from .render import Table, dump_json, render, say
from .replay_cost import _cost, _earnings, _price, _price_info

__all__ = ["replay_file", "run"]


def replay_file(source: Source, options: dict[str, Any]) -> dict[str, Any]:
    """The report for one file (run in a worker process with ``-j``)."""
    import math

    from ..pricing.recorded import RecordedUsageError
    from ..replay import ReplayTotals, replay

    counter = cached("counter", options["counter"], options["encoding"])
    pipeline = build_ladder(options["ladder"], options["config"], counter)
    loaded = load(source, options["format"])
    tools = (getattr(loaded, "extra", None) or {}).get("tools")
    window = options["window"]
    compactor = _compactor(
        pipeline, options, counter, tools if isinstance(tools, list) else None, str(source.path)
    )
    price = _price(options)
    try:
        records = list(
            replay(
                loaded.messages,
                compactor,
                price=price,
                ttl=options["ttl"],
                cadence=options["cadence"],
                overhead=options["overhead"],
            )
        )
    except RecordedUsageError as exc:  # what the log recorded cannot be true
        line = _line_of(source, exc.message_id)
        raise CliError(f"{source.path}{f':{line}' if line else ''}: {exc}") from None
    calls = [_record(r) for r in records]
    report = {
        "file": str(source.path),
        "format": loaded.format,
        "repairs": [str(r) for r in loaded.repairs],
        "counter": counter_label(counter),
        "window": window,
        "compact_at": math.ceil(options["compact_at"] * window),
        "compact_to": math.floor(options["compact_to"] * window),
        "fits": all(c["tokens_sent"] <= window for c in calls),
        "calls": calls,
        "totals": _totals(ReplayTotals.of(records), priced=price is not None),
    }
    if price is not None:
        report["price"] = _price_info(price, compactor, options)
        report["compactions"] = _earnings(records, price)
    return report


def _line_of(source: Source, message_id: str | None) -> int | None:
    """The first line of ``source`` that holds ``message_id`` as a JSON string: the line of
    the record to fix (readers keep ids, not line numbers)."""
    if not message_id or source.stdin:
        return None
    import json

    from .inputs import read_input

    needle = json.dumps(message_id).encode()
    for number, line in enumerate(read_input(source).splitlines(), 1):
        if needle in line:
            return number
    return None


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
        **(
            {
                "at": r.at,
                "timed": r.timed,
                "cost": _cost(r.cost),
                "uncompacted_tokens": r.baseline_tokens,
                "uncompacted": _cost(r.baseline),
            }
            if r.cost is not None
            else {}
        ),
    }


def _totals(t: Any, *, priced: bool = False) -> dict[str, Any]:
    """The totals of a report; a priced replay always carries its cost, zero when the
    transcript holds no model call (a session that ended before the first answer)."""
    from ..pricing.cost import CostTotals

    if priced and t.cost is None:
        t = attrs.evolve(t, cost=CostTotals(), baseline=CostTotals())
    return {
        "calls": t.calls,
        "compactions": t.compactions,
        "tokens_sent": t.tokens_sent,
        "max_tokens_sent": t.max_tokens_sent,
        "tokens_saved": t.tokens_saved,
        "prefix_tokens": t.prefix_tokens,
        "cache_share": round(t.cache_share, 4),
        "strategies": dict(t.strategies),
        **(
            {
                "cost": _cost(t.cost),
                "uncompacted": _cost(t.baseline),
                "uncompacted_max_tokens": t.baseline_max_tokens,
            }
            if t.cost is not None
            else {}
        ),
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
    for repair in report.get("repairs", ()):
        say(f"repaired while reading: {repair}")
    sys.stdout.write("\n")
    if "price" in report:
        from .replay_cost import print_priced

        print_priced(report)
        return
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
    priced = all("price" in r for r in reports)
    columns = ["file", "calls", "compactions", "max sent", "tokens sent", "cache share", "fits"]
    if priced:
        columns += ["cost $", "uncompacted $"]
    table = Table(
        columns,
        title="replay summary",
        right=frozenset(set(columns) - {"file", "fits"}),
    )
    sent = prefix = 0
    for r in reports:
        t = r["totals"]
        sent += t["tokens_sent"]
        prefix += t["prefix_tokens"]
        row = [
            r["file"],
            t["calls"],
            t["compactions"],
            t["max_tokens_sent"],
            t["tokens_sent"],
            _pct(t["cache_share"]),
            "yes" if r["fits"] else "NO",
        ]
        if priced:
            row += [f"{t['cost']['usd']:.4f}", f"{t['uncompacted']['usd']:.4f}"]
        table.add(*row)
    # Totals over the files: counts add up; the cache share is weighted by tokens sent.
    footer = [
        f"total ({len(reports)} files)",
        sum(r["totals"]["calls"] for r in reports),
        sum(r["totals"]["compactions"] for r in reports),
        max((r["totals"]["max_tokens_sent"] for r in reports), default=0),
        sent,
        _pct(prefix / sent if sent else 0.0),
        "yes" if all(r["fits"] for r in reports) else "NO",
    ]
    if priced:
        footer += [
            f"{sum(r['totals']['cost']['usd'] for r in reports):.4f}",
            f"{sum(r['totals']['uncompacted']['usd'] for r in reports):.4f}",
        ]
    table.footer = tuple(footer)
    render(table)


def _compactor(
    pipeline: Any, options: dict[str, Any], counter: Any, tools: Any, where: str | None
) -> Any:
    """The trigger for these options; settings it refuses (a window too small to compact
    into, tool schemas that take all of it) are bad usage, not a bug."""
    from ..trigger import Compactor

    policy = None
    if options.get("policy") == "cache-aware":
        from ..pricing.cache_policy import CacheAware

        price = _price(options)
        if price is None:
            raise CliError("--policy cache-aware needs --price MODEL (it weighs the cache)")
        policy = CacheAware(price, ttl=options.get("ttl"))
    elif options.get("cache_aware") is not None:
        policy = options["cache_aware"].policy(_price(options))
    try:
        return Compactor(
            pipeline,
            options["window"],
            compact_at=options["compact_at"],
            compact_to=options["compact_to"],
            counter=counter,
            tools=tools,
            policy=policy,
            min_saving=options.get("min_saving", 0.05),
        )
    except ValueError as exc:
        text = " ".join(str(exc).split())
        where = where or f"--window {options['window']}"
        raise CliError(f"{where}: {text}") from None


def _apply_config(args: Any) -> None:
    """The trigger settings of ``--config`` (a config file's [trigger]) where no flag gave
    them: the marks, the minimum saving and the cache-aware policy."""
    from ..config import Config, load_config

    config = load_config(args.config) if args.config else Config()
    if args.compact_at is None:
        args.compact_at = config.compact_at
    if args.compact_to is None:
        args.compact_to = config.compact_to
    args.min_saving = config.min_saving
    args.cache_aware = config if config.cache_aware is not None else None


def run(args: Any) -> int:
    check_format(args.format)
    _apply_config(args)
    if not args.compact_to < args.compact_at:
        raise CliError(
            f"--compact-to ({args.compact_to}) must be below --compact-at ({args.compact_at})"
        )
    counter = cached("counter", args.counter, args.encoding)
    options = {
        k: getattr(args, k)
        for k in (
            "counter",
            "encoding",
            "ladder",
            "config",
            "window",
            "compact_at",
            "compact_to",
            "price",
            "prices",
            "ttl",
            "cadence",
            "overhead",
            "policy",
            "min_saving",
            "cache_aware",
            "format",
        )
    }
    if args.prices and not args.price:
        raise CliError("--prices FILE needs --price MODEL (which row of the table to use)")
    if not (args.cadence >= 0 and args.cadence < float("inf")):
        raise CliError(f"--cadence must be a number of seconds >= 0, got {args.cadence}")
    if not 0 <= args.overhead <= MAX_TOKENS:
        raise CliError(
            f"--overhead must be a number of tokens from 0 to {MAX_TOKENS:,}, got {args.overhead}"
        )
    _price(options)
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
