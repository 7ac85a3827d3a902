"""``compaction compact``: run a ladder over conversation files and report what each layer did.

Where the conversation goes: with one input file, ``-o FILE`` (or stdout); with several (or a
directory), ``-o DIR`` gets one file per input, at the same relative path. ``--dry-run``
writes nothing. ``--json`` puts the report on stdout, so it needs ``-o`` or ``--dry-run``:
the report and the conversation never share a stream.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .._atomic import check_destination
from .._text import plural
from .batch import Batch
from .destinations import (
    check_collisions,
    check_name,
    collision,
    destination,
    fit_written,
    in_directory,
    same_file,
    write,
)
from .errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNREACHED, CliError
from .inputs import STDIO, Source, check_format, load, output_format, write_stdout
from .ladder import cached, counter_label, ladder_names
from .render import Table, dump_json, render, say

__all__ = ["compact_file", "run"]

DEFAULT_RATIO = 0.4


def _target(args: Any) -> int:
    if args.target is not None:
        if args.ratio is not None:
            raise CliError("--ratio goes with --window, not with --target")
        return int(args.target)
    ratio = DEFAULT_RATIO if args.ratio is None else args.ratio
    # Exact decimal arithmetic: a float product would print 39,999,...,998,332,478,947,328
    # for a huge window at 0.4.
    target = math.floor(args.window * Fraction(str(ratio)))
    if target <= 0:
        raise CliError(f"--window {args.window} x --ratio {ratio} leaves no tokens to fit in")
    return target


def _limit(args: Any, target: int) -> int:
    """The hard limit: what the file must fit. With ``--window`` the window (the target is
    where compaction aims below it), else the target, unless ``--limit`` says otherwise."""
    given = getattr(args, "limit", None)
    limit = given if given is not None else (args.window or target)
    if limit < target:
        raise CliError(
            f"--limit {limit:,} is below the target ({target:,} tokens): the limit is what the "
            "file must fit, the target where compaction aims below it"
        )
    return int(limit)


def _steps(names: list[str], result: Any) -> list[dict[str, Any]]:
    """One record per layer, in ladder order: applied, declined (and why) or not reached."""
    applied = list(result.applied)
    declined = list(result.declined)
    steps = []
    for name in names:
        a = next((x for x in applied if x.strategy == name), None)
        if a is not None:
            applied.remove(a)
            steps.append(
                {
                    "strategy": name,
                    "status": "applied",
                    "before": a.before,
                    "after": a.after,
                    "saved": a.saved,
                    "seconds": a.seconds,
                }
            )
            continue
        d = next((x for x in declined if x.strategy == name), None)
        if d is not None:
            declined.remove(d)
            step = {
                "strategy": name,
                "status": "declined",
                "reason": d.reason,
                "before": d.tokens,
                "after": d.tokens,
                "saved": 0,
                "seconds": d.seconds,
            }
            if d.error is not None:
                step["error"] = f"{type(d.error).__name__}: {d.error}"
            steps.append(step)
            continue
        steps.append({"strategy": name, "status": "not_reached", "saved": 0, "seconds": 0.0})
    return steps


def compact_file(source: Source, options: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """One file compacted: its report and the bytes to write (run in a worker with ``-j``)."""
    args = SimpleNamespace(**options)
    counter = cached("counter", args.counter, args.encoding)
    pipeline = cached("ladder", args.ladder, args.config, args.counter, args.encoding)
    loaded = load(source, args.format)
    written = fit_written(pipeline, loaded, args.target, counter, args.to, limit=args.limit)
    result = written.result
    dest = destination(args, source, args.single, loaded)
    if dest is not None:
        check_name(dest, loaded, args.to)
    if dest is not None and same_file(dest, source.path):
        raise CliError(
            f"-o {dest} is the input file itself; write the result elsewhere "
            "(the input is the full record and is left as it is)"
        )
    report = _report(source, loaded, result, ladder_names(pipeline), args, counter, dest)
    report.update(
        target=args.target, limit=args.limit, tokens_after=written.tokens,
        fits=written.tokens <= args.limit, reached_target=written.tokens <= args.target,
        tokens_after_neutral=result.after,
        messages_after=written.messages,
    )  # fmt: skip
    return report, written.data


def _report(
    source: Source,
    loaded: Any,
    result: Any,
    names: list[str],
    args: Any,
    counter: Any,
    dest: Path | None,
) -> dict[str, Any]:
    return {
        "file": str(source.path),
        "format": loaded.format,
        "output": str(dest) if dest else (None if args.dry_run else STDIO),
        "output_format": output_format(loaded, args.to),
        "counter": counter_label(counter),
        "target": result.target,
        "tokens_before": result.before,
        "tokens_after": result.after,
        # What the layers saved, by the ladder's own count: 0 where none ran. The size as
        # written (``tokens_after``) is a re-count in the output's shape, not a saving.
        "saved": result.saved,
        "fits": result.fits,
        "messages_before": len(loaded.messages),
        "messages_after": len(result.messages),
        "seconds": result.seconds,
        "strategies": _steps(names, result),
        "repairs": [str(r) for r in getattr(loaded, "repairs", ())],
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _print_single(report: dict[str, Any]) -> None:
    err = sys.stderr
    where = report["output"] or "(not written: --dry-run)"
    if where == "-":
        where = "stdout"
    say(
        f"{report['file']} ({report['format']}, {report['messages_before']} messages) -> "
        f"{where} ({report['output_format']}, {report['messages_after']} messages)",
        err,
    )
    limit = report.get("limit", report["target"])
    extra = f"   limit: {limit:,} tokens" if limit != report["target"] else ""
    say(f"counter: {report['counter']}   target: {report['target']:,} tokens{extra}", err)
    if report["tokens_after_neutral"] != report["tokens_after"]:
        say(
            f"counted as written ({report['output_format']}): {report['tokens_after']:,} "
            f"tokens (the ladder's own count: {report['tokens_after_neutral']:,})",
            err,
        )
    for repair in report["repairs"]:
        say(f"repaired while reading: {repair}", err)
    table = Table(
        ["strategy", "result", "before", "after", "saved", "time"],
        right=frozenset({"before", "after", "saved", "time"}),
    )
    for step in report["strategies"]:
        status = step["status"]
        if status == "applied":
            table.add(
                step["strategy"],
                "applied",
                step["before"],
                step["after"],
                step["saved"],
                _ms(step["seconds"]),
            )
        elif status == "declined":
            reason = step["reason"]
            label = "declined" if reason == "declined" else f"declined: {reason}"
            table.add(
                step["strategy"], label, step["before"], step["after"], 0, _ms(step["seconds"])
            )
        else:
            table.add(step["strategy"], "not needed", "", "", "", "")
    table.footer = (
        "total",
        ("fits" if report["fits"] else "OVER LIMIT")
        if report.get("limit", report["target"]) != report["target"]
        else ("fits" if report["fits"] else "OVER TARGET"),
        report["tokens_before"],
        report["tokens_after"],
        report["saved"],
        _ms(report["seconds"]),
    )
    render(table, err)
    if not report["fits"]:
        say(_unreached_line(report), err)


def _unreached_line(report: dict[str, Any]) -> str:
    written = report["output"]
    where = ("stdout" if written == "-" else written) if written else None
    tail = f"; the best result was written to {where}" if where else ""
    limit = report.get("limit", report["target"])
    what = "the target" if limit == report["target"] else "the limit"
    return (
        f"compaction: could not reach {what} for {report['file']}: "
        f"{report['tokens_after']:,} tokens > {limit:,}{tail}"
    )


def _print_summary(reports: list[dict[str, Any]]) -> None:
    table = Table(
        ["file", "format", "messages", "before", "after", "saved", "fits"],
        title="compaction summary",
        right=frozenset({"messages", "before", "after", "saved"}),
    )
    for r in reports:
        table.add(
            r["file"],
            r["format"],
            f"{r['messages_before']} -> {r['messages_after']}",
            r["tokens_before"],
            r["tokens_after"],
            r["saved"],
            "yes" if r["fits"] else "NO",
        )
    before = sum(r["tokens_before"] for r in reports)
    after = sum(r["tokens_after"] for r in reports)
    table.footer = (
        plural(len(reports), "file"),
        "",
        "",
        before,
        after,
        sum(r["saved"] for r in reports),
        f"{sum(r['fits'] for r in reports)}/{len(reports)}",
    )
    render(table, sys.stderr)


def run(args: Any) -> int:
    check_format(args.format)
    target = _target(args)
    # Built here so that a bad key or config fails before any file is read.
    cached("ladder", args.ladder, args.config, args.counter, args.encoding)
    batch = Batch(args.files, "compacting", args.jobs, args.verbose)
    single = batch.single
    to_stdout = not args.dry_run and (not args.output or args.output == STDIO)
    if args.json and to_stdout:
        raise CliError(
            "--json prints the report on stdout: give -o for the conversation, or --dry-run"
        )
    if args.output and args.dry_run:
        raise CliError("-o and --dry-run exclude each other")
    if not single and to_stdout:
        raise CliError("several inputs: give -o DIR for the results, or --dry-run")
    if in_directory(args, single):
        existing = Path(args.output)
        if existing.exists() and not existing.is_dir():
            raise CliError(f"-o {args.output}: several inputs need a directory, not a file")
        check_collisions(args, batch.sources)
    elif args.output and args.output != STDIO:
        check_destination(args.output)  # a device, FIFO or symlink: refused before any work
    options = {
        k: getattr(args, k)
        for k in ("counter", "encoding", "ladder", "config", "to", "output", "dry_run", "format")
    }
    options.update(target=target, limit=_limit(args, target), single=single)

    reports: list[dict[str, Any]] = []
    written: dict[str, str] = {}
    with batch:
        for source, (report, data) in batch.run(compact_file, options):
            dest = report["output"]
            if dest == STDIO:
                write_stdout(data)
            elif dest is not None:
                if dest in written:  # never overwrite a result of this run
                    batch.attempt(source, partial(collision, written[dest], source, dest))
                    continue
                if batch.attempt(source, partial(write, Path(dest), data)) is None:
                    continue
                written[dest] = str(source.path)
            reports.append(report)

    problems = batch.problems
    if single:
        report = reports[0]
        if args.json:
            dump_json(report)
            if not report["fits"]:
                say(_unreached_line(report))
        else:
            _print_single(report)
    else:
        if args.json:
            dump_json({"files": reports, "problems": problems, "summary": _totals(reports)})
            batch.say_problems()
        else:
            _print_summary(reports)
            batch.say_problems()
            for r in reports:
                if not r["fits"]:
                    say(_unreached_line(r))
    if batch.failed:
        return EXIT_BAD_INPUT
    if any(not r["fits"] for r in reports):
        return EXIT_UNREACHED
    return EXIT_OK


def _totals(reports: list[dict[str, Any]]) -> dict[str, Any]:
    before = sum(r["tokens_before"] for r in reports)
    after = sum(r["tokens_after"] for r in reports)
    return {
        "files": len(reports),
        "tokens_before": before,
        "tokens_after": after,
        "saved": before - after,
        "fits": sum(r["fits"] for r in reports),
    }
