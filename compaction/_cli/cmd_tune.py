"""``compaction tune``: the cheapest trigger and ladder settings that keep what the default
keeps, chosen on half of the logs and reported on the other half
([`compaction.check.tune`][])."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .cmd_check import load_settings, price_row
from .errors import EXIT_OK, EXIT_UNREACHED, CliError
from .inputs import check_format, expand, load, write_atomic
from .ladder import cached
from .render import Table, dump_json, progress, render, say

__all__ = ["run"]


def _settings(config: Any) -> str:
    parts = [f"at {config.compact_at:.2f}", f"to {config.compact_to:.2f}"]
    parts.append(f"min_saving {config.min_saving:.2f}")
    if config.ladder is not None:
        for layer in config.ladder.get("use", []):
            if isinstance(layer, dict) and "keep_steps" in layer:
                parts.append(f"{layer['strategy']} keep {layer['keep_steps']}")
    if config.cache_aware is not None:
        ca = config.cache_aware
        parts.append(f"cache-aware late {ca['late']:.2f} early {ca['early']:.2f}")
    return ", ".join(parts)


def _header(result: Any, price: Any, shuffle: int) -> str:
    lines = [
        "# Written by `compaction tune` (model "
        f"{price.model}, --shuffle {shuffle}, {len(result.trials)} trials).",
        "# Chosen on: " + ", ".join(Path(p).name for p in result.tuning),
        "# Held out:  " + ", ".join(Path(p).name for p in result.held_out),
    ]
    if result.held_out_saving is not None:
        lines.append(
            f"# Held-out priced cost {result.held_out_saving:.1%} below the default trigger "
            "(reproduce: compaction check HELD-OUT-LOGS --config THIS --price "
            f"{price.model})."
        )
    return "\n".join(lines) + "\n"


def _report(result: Any) -> dict[str, Any]:
    best = result.best
    return {
        "tuning": list(result.tuning),
        "held_out": list(result.held_out),
        "trials": [
            {
                "number": t.number,
                "feasible": t.feasible,
                "cost": round(t.cost, 6),
                "identifiers_share": round(t.report.identifiers_total.share, 4),
                "facts_share": round(t.report.facts.share, 4),
                "settings": _settings(t.config),
            }
            for t in result.trials
        ],
        "best": None if best is None else best.config.to_toml(),
        "default_held_out": result.default_held_out.to_dict()["totals"],
        "best_held_out": (
            None if result.best_held_out is None else result.best_held_out.to_dict()["totals"]
        ),
        "held_out_saving": result.held_out_saving,
    }


def run(args: Any) -> int:
    from ..check.tune import tune

    if args.trials < 1:
        raise CliError(f"--trials must be at least 1, got {args.trials}")
    if args.config:
        raise CliError("tune searches the settings itself: --config is for check, not tune")
    price = price_row(args.price)
    _, thresholds = load_settings(None)
    counter = cached("counter", args.counter, args.encoding)
    del counter  # the check builds its own per log; loaded once here to fail early
    logs = []
    check_format(args.format)
    for source in expand(args.files):
        loaded = load(source, args.format)
        if not loaded.messages:
            raise CliError(f"{source.path}: no messages read (as {loaded.format})")
        logs.append((str(source.path), loaded.messages))
    with progress(args.trials, "tuning") as bar:
        result = tune(
            logs,
            price,
            window=args.window,
            trials=args.trials,
            shuffle=args.shuffle,
            thresholds=thresholds,
            progress=lambda done, total: bar.advance(f"trial {done}/{total}"),
        )
    if args.output and result.best is not None:
        text = _header(result, price, args.shuffle) + result.best.config.to_toml()
        write_atomic(Path(args.output), text.encode("utf-8"))
    if args.json:
        dump_json(_report(result))
    else:
        table = Table(
            ["trial", "holds floors", "cost (tuning logs)", "identifiers", "facts", "settings"],
            title=f"compaction tune: {len(result.trials)} trials on {len(result.tuning)} logs",
            right=frozenset({"trial", "cost (tuning logs)", "identifiers", "facts"}),
        )
        table.add(
            "default",
            "-",
            f"${result.default_tuning.cost or 0:.4f}",
            f"{result.default_tuning.identifiers_total.share:.1%}",
            f"{result.default_tuning.facts.share:.1%}",
            "compact at 0.70 to 0.40",
        )
        for t in sorted(result.trials, key=lambda t: (not t.feasible, t.cost))[:10]:
            table.add(
                t.number,
                "yes" if t.feasible else "no",
                f"${t.cost:.4f}",
                f"{t.report.identifiers_total.share:.1%}",
                f"{t.report.facts.share:.1%}",
                _settings(t.config),
            )
        render(table)
        held = result.default_held_out
        if result.best_held_out is None:
            say("compaction: tune: no setting held every floor; nothing written")
        else:
            say(
                f"held out ({len(result.held_out)} logs): default ${held.cost or 0:.4f}, "
                f"chosen ${result.best_held_out.cost or 0:.4f} "
                f"({result.held_out_saving or 0:.1%} saved); floors "
                + ("held" if not result.best_held_out.failures else "NOT held: ")
                + "; ".join(result.best_held_out.failures)
            )
            if args.output:
                say(f"written: {args.output}")
    return EXIT_OK if result.best is not None else EXIT_UNREACHED
