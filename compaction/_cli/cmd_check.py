"""``compaction check``: replay logs through a trigger and ladder, and hold them to floors.

The measuring is [`compaction.check.run.check_log`][] (one log) and
[`CheckReport`][compaction.check.gate.CheckReport] (the verdict); this module reads the
options, runs the logs (``-j N`` in worker processes), prints the table and writes the JUnit
XML a CI job shows as test results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from .batch import Batch
from .errors import EXIT_OK, EXIT_UNREACHED, CliError
from .inputs import Source, check_format, load, write_atomic
from .ladder import cached
from .render import Table, dump_json, render, say

__all__ = ["check_source", "load_settings", "run"]


def load_settings(config: str | None) -> tuple[Any, Any]:
    """(the config, the floors): ``--config``, else the defaults; floors from the nearest
    pyproject.toml's [tool.compaction.check], then the config's [check] table."""
    from ..check.gate import find_pyproject_thresholds, thresholds_from
    from ..config import Config, load_config

    cfg = load_config(config) if config else Config()
    thresholds, _ = find_pyproject_thresholds()
    if cfg.check:
        thresholds = thresholds_from(cfg.check, f"{cfg.source} [check]", thresholds)
    return cfg, thresholds


def price_row(model: str | None) -> Any:
    """The price row for ``--price`` (None without it); an unknown model is bad usage."""
    if not model:
        return None
    from ..pricing.prices import PriceError, price_for

    try:
        return price_for(model)
    except PriceError as exc:
        raise CliError(str(exc)) from None


def check_source(source: Source, options: dict[str, Any]) -> Any:
    """One log's [`LogCheck`][compaction.check.run.LogCheck] (run in a worker with ``-j``)."""
    from ..check.run import check_log

    counter = cached("counter", options["counter"], options["encoding"])
    config, _ = load_settings(options["config"])
    loaded = load(source, options["format"])
    if not loaded.messages:
        raise CliError(f"{source.path}: no messages read (as {loaded.format})")
    return check_log(
        source.path,
        config,
        window=options["window"],
        price=price_row(options["price"]),
        counter=counter,
        messages=loaded.messages,
        format=loaded.format,
    )


def _share(kept: Any) -> str:
    return f"{kept.kept}/{kept.asked}" if kept.asked else "-"


def _usd(value: float | None) -> str:
    return "" if value is None else f"${value:.4f}"


def _print(report: Any) -> None:
    table = Table(
        ["log", "calls", "compactions", "over", "invalid", "task lost", "identifiers", "facts"]
        + (["cost", "default", "uncompacted"] if report.cost is not None else []),
        title="compaction check",
        right=frozenset(
            {"calls", "compactions", "over", "invalid", "task lost", "identifiers", "facts"}
            | {"cost", "default", "uncompacted"}
        ),
    )
    for log in report.logs:
        row = [
            Path(log.path).name,
            log.calls,
            log.compactions,
            log.over_window,
            log.invalid,
            log.task_lost,
            _share(log.identifiers_total),
            _share(log.facts),
        ]
        if report.cost is not None:
            row += [_usd(log.cost), _usd(log.default), _usd(log.uncompacted)]
        table.add(*row)
    footer = [
        f"{len(report.logs)} logs",
        sum(log.calls for log in report.logs),
        sum(log.compactions for log in report.logs),
        sum(log.over_window for log in report.logs),
        sum(log.invalid for log in report.logs),
        sum(log.task_lost for log in report.logs),
        f"{report.identifiers_total.share:.1%}",
        f"{report.facts.share:.1%}",
    ]
    if report.cost is not None:
        footer += [_usd(report.cost), _usd(report.default), _usd(report.uncompacted)]
    table.footer = footer
    render(table)


def junit_xml(report: Any) -> str:
    """The verdict as JUnit XML: one test case per log (its counts), one for the pooled
    shares and cost; a floor not held is a failure with its sentence."""
    cases: list[str] = []
    per_log = {log.path: [] for log in report.logs}  # type: dict[str, list[str]]
    pooled: list[str] = []
    for subject, sentence in report.findings:
        per_log.get(subject, pooled).append(f"{subject}: {sentence}")
    for path, failures in [*per_log.items(), ("all logs", pooled)]:
        body = "".join(f"<failure message={quoteattr(f)}>{escape(f)}</failure>" for f in failures)
        cases.append(
            f'<testcase classname="compaction.check" name={quoteattr(path)}>{body}</testcase>'
        )
    failed = sum(1 for c in cases if "<failure" in c)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<testsuite name="compaction check" tests="{len(cases)}" failures="{failed}">'
        + "".join(cases)
        + "</testsuite>\n"
    )


def run(args: Any) -> int:
    from ..check.gate import CheckReport

    _, thresholds = load_settings(args.config)  # a bad config fails before any log is read
    price_row(args.price)
    check_format(args.format)
    options = {
        "counter": args.counter,
        "encoding": args.encoding,
        "config": args.config,
        "window": args.window,
        "price": args.price,
        "format": args.format,
    }
    batch = Batch(args.files, "checking", args.jobs, args.verbose)
    with batch:
        checks = [c for _, c in batch.run(check_source, options)]
    unread = tuple((p["file"], p["error"]) for p in batch.problems)
    report = CheckReport(tuple(checks), thresholds, unread)
    if args.junit_xml:
        write_atomic(Path(args.junit_xml), junit_xml(report).encode("utf-8"))
    if args.json:
        dump_json(report.to_dict())
    else:
        if report.logs:
            _print(report)
        for failure in report.failures:
            say(f"compaction: check: {failure}")
        if not report.logs:
            say("compaction: check: no log could be read")
    return EXIT_OK if report.passed else EXIT_UNREACHED
