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
from pathlib import Path
from typing import Any

from .batch import Batch
from .errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNREACHED, CliError
from .inputs import Source, load, output_format, serialize, write_atomic
from .ladder import build_counter, build_ladder, counter_label, ladder_names
from .render import Table, dump_json, render, say

__all__ = ["run"]

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


def _destination(args: Any, source: Source, single: bool, loaded: Any) -> Path | None:
    if args.dry_run or not args.output:
        return None
    out = Path(args.output)
    if single and not out.is_dir():
        return out
    relative = out / source.relative
    # JSONL stays JSONL only when written back in its own format (see formats.dumps).
    jsonl = loaded.container == "jsonl" and output_format(loaded, args.to) == loaded.format
    if relative.suffix in {".jsonl", ".traj"} and not jsonl:
        relative = relative.with_suffix(".json")
    return relative


def _same_file(dest: Path, source: Path) -> bool:
    try:
        return dest.exists() and dest.samefile(source)
    except OSError:
        return False


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
        "output": str(dest) if dest else ("-" if not (args.dry_run or args.output) else None),
        "output_format": output_format(loaded, args.to),
        "counter": counter_label(counter),
        "target": result.target,
        "tokens_before": result.before,
        "tokens_after": result.after,
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
    say(f"counter: {report['counter']}   target: {report['target']:,} tokens", err)
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
        "fits" if report["fits"] else "OVER TARGET",
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
    return (
        f"compaction: could not reach the target for {report['file']}: "
        f"{report['tokens_after']:,} tokens > {report['target']:,}{tail}"
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
        f"{len(reports)} files",
        "",
        "",
        before,
        after,
        before - after,
        f"{sum(r['fits'] for r in reports)}/{len(reports)}",
    )
    render(table, sys.stderr)


def run(args: Any) -> int:
    counter = build_counter(args.counter, args.encoding)
    target = _target(args)
    pipeline = build_ladder(args.ladder, args.config, counter)
    names = ladder_names(pipeline)
    batch = Batch(args.files, "compacting")
    single = batch.single
    if args.json and not (args.output or args.dry_run):
        raise CliError(
            "--json prints the report on stdout: give -o for the conversation, or --dry-run"
        )
    if args.output and args.dry_run:
        raise CliError("-o and --dry-run exclude each other")
    if not single:
        if not (args.output or args.dry_run):
            raise CliError("several inputs: give -o DIR for the results, or --dry-run")
        if args.output and Path(args.output).is_file():
            raise CliError(f"-o {args.output}: several inputs need a directory, not a file")

    reports: list[dict[str, Any]] = []
    with batch:
        for source in batch:

            def compact(source: Source = source) -> tuple[Any, Any, bytes, Path | None]:
                loaded = load(source.path)
                result = pipeline.compact(loaded.messages, target=target, counter=counter)
                data = serialize(result.messages, loaded, args.to)
                dest = _destination(args, source, single, loaded)
                if dest is not None and _same_file(dest, source.path):
                    raise CliError(
                        f"-o {dest} is the input file itself; write the result elsewhere "
                        "(the input is the full record and is left as it is)"
                    )
                return loaded, result, data, dest

            done = batch.attempt(source, compact)
            if done is None:
                continue
            loaded, result, data, dest = done
            if dest is not None:
                write_atomic(dest, data)
            elif single and not args.dry_run:
                sys.stdout.buffer.write(data)
                sys.stdout.flush()
            reports.append(_report(source, loaded, result, names, args, counter, dest))

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
