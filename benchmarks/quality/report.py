"""The quality suite's section of ``benchmarks/RESULTS.md``: goals, then three tables."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

from .identifiers import KINDS
from .suite import MIN_TARGET

__all__ = ["goals", "markdown"]

#: The "Done when" figures of the issue that asked for this suite.
BUDGET_MEDIAN_GOAL: Final = 0.95
BUDGET_MIN_GOAL: Final = 0.85
CALL_PATHS_GOAL: Final = 0.90
ERRORS_GOAL: Final = 0.80
_SHORT: Final = {"claude-code": "cc", "mini-swe-agent": "mini", "swe-agent": "swe"}


def _pct(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.1%}"


def _num(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def _target(value: Any) -> str:
    return "replay" if value == "replay" else f"{value:.0%}"


def _by_format(counts: dict[str, int], files: dict[str, int] | None = None) -> str:
    parts = []
    for fmt, n in counts.items():
        name = _SHORT.get(fmt, fmt)
        parts.append(f"{name} {n}/{files[fmt]}" if files else f"{name} {n}")
    return ", ".join(parts)


def _find(totals: Sequence[dict[str, Any]], ladder: str, target: Any) -> dict[str, Any] | None:
    return next((t for t in totals if t["ladder"] == ladder and t["target"] == target), None)


def goals(quality: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's "Done when" figures, judged on the default ladder (budget use: free ladder)."""
    totals = quality.get("totals") or []
    targets = quality.get("targets") or []
    default = [t for t in (_find(totals, "default", x) for x in targets) if t]
    replay = _find(totals, "default", "replay")
    out: list[dict[str, Any]] = []
    if default:
        lost = sum(t["task_lost"] for t in default)
        short = sum(t["task_short_not_verbatim"] for t in default)
        out.append(
            {
                "goal": "default ladder: the original task in every result (verbatim when at "
                "most 30% of the target, else head and tail)",
                "measured": "; ".join(
                    f"{_target(t['target'])}: lost in {t['task_lost']}/{t['files']}"
                    for t in default
                )
                + f"; cut though short (system prompt at most half the target): {short}",
                "met": lost == 0 and short == 0,
            }
        )
        over = sum(t["files"] - t["errors"] - t["fits"] - t["over_excusable"] for t in default)
        out.append(
            {
                "goal": "default ladder: every result within target whenever the system "
                f"prompt is at most half of it (targets under {MIN_TARGET} tokens not judged)",
                "measured": "; ".join(
                    f"{_target(t['target'])}: "
                    f"{t['files'] - t['errors'] - t['fits'] - t['over_excusable']} over"
                    + (f" ({t['over_tiny']} more under {MIN_TARGET} tokens)" * bool(t["over_tiny"]))
                    for t in default
                ),
                "met": over == 0,
            }
        )
        paths = [t["call_paths_share"] for t in default]
        out.append(
            {
                "goal": f"default ladder: paths in the arguments of dropped tool calls named in "
                f"what is kept, at least {CALL_PATHS_GOAL:.0%} pooled at every target",
                "measured": "; ".join(
                    f"{_target(t['target'])}: {_pct(t['call_paths_share'])}" for t in default
                ),
                "met": all(not math.isnan(p) and p >= CALL_PATHS_GOAL for p in paths),
            }
        )
        errors = [t["only_lost_share"]["errors"] for t in default]
        out.append(
            {
                "goal": "default ladder: error class names found only in dropped content "
                f"named in what is kept, at least {ERRORS_GOAL:.0%} pooled at every target",
                "measured": "; ".join(
                    f"{_target(t['target'])}: {_pct(t['only_lost_share']['errors'])}"
                    for t in default
                ),
                "met": all(not math.isnan(e) and e >= ERRORS_GOAL for e in errors),
            }
        )
    if replay:
        out.append(
            {
                "goal": "default ladder in replay: no call sent without the task, no request "
                "over the window",
                "measured": f"{replay['without_task']} calls without the task "
                f"({replay['files_without_task']} runs); {replay['over_window']} requests "
                f"over the window ({replay['files_over_window']} runs)"
                + (
                    f"; {replay['over_window_tiny']} more with a window under {MIN_TARGET} "
                    "tokens (not judged)"
                    if replay["over_window_tiny"]
                    else ""
                ),
                "met": replay["without_task"] == 0 and replay["over_window"] == 0,
            }
        )
    free = [t for t in (_find(totals, "free", x) for x in (0.4, 0.6)) if t]
    if free:
        out.append(
            {
                "goal": f"free ladder budget use at 40% and 60%: median ≥ {BUDGET_MEDIAN_GOAL}, "
                f"minimum ≥ {BUDGET_MIN_GOAL}",
                "measured": "; ".join(
                    f"{_target(t['target'])}: median {_num(t['budget_median'])}, "
                    f"min {_num(t['budget_min'])}"
                    for t in free
                ),
                "met": all(
                    t["budget_median"] >= BUDGET_MEDIAN_GOAL and t["budget_min"] >= BUDGET_MIN_GOAL
                    for t in free
                ),
            }
        )
    return out


def _note(t: dict[str, Any]) -> str:
    if not t["notes"]:
        return "none"
    return f"{t['notes']}: {_num(t['note_median'], 0)} / {_num(t['note_max'], 0)}"


_TASK: Final = {"verbatim": "kept", "cut": "cut", None: "**lost**", "none": "no task"}


def _per_file(quality: dict[str, Any], ladder: str) -> list[str]:
    """Every transcript under one ladder: where the task went, budget use, replay."""
    from ..common.report import table

    rows = [r for r in quality["rows"] if r["ladder"] == ladder]
    if not rows:
        return []
    targets = quality["targets"]
    cells: dict[str, dict[Any, dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault(r["name"], {})[r["target"]] = r

    def cell(r: dict[str, Any] | None) -> str:
        if r is None:
            return ""
        if "error" in r:
            return "error"
        return f"{_TASK[r['task']]}, {_num(r['budget_used'])}"

    def replay(r: dict[str, Any] | None) -> str:
        if r is None:
            return ""
        if "error" in r:
            return "error"
        return f"{r['without_task']} / {r['over_window']} of {r['calls']}"

    body = []
    for name, by_target in cells.items():
        first = next(iter(by_target.values()))
        body.append(
            [
                name,
                f"{first['tokens']:,}",
                f"{first['system']:,}",
                f"{first['task_tokens']:,}",
                *[cell(by_target.get(t)) for t in targets],
                replay(by_target.get("replay")),
            ]
        )
    return [
        f"<details><summary>Every transcript, {quality['ladders'][ladder]}</summary>",
        "",
        "Per target: the task (kept verbatim, cut, lost) and the budget use; replay: calls "
        "without the task / requests over the window, of all calls.",
        "",
        *table(
            [
                "file",
                "tokens",
                "system",
                "task",
                *[_target(t) for t in targets],
                "replay: no task / over window",
            ],
            body,
        ),
        "",
        "</details>",
    ]


def _dedupe(dedupe: dict[str, Any] | None) -> list[str]:
    """What the dedupe layer frees and keeps, every transcript given to it alone."""
    from ..common.report import table

    if not dedupe:
        return []
    t = dedupe["totals"]
    return [
        "",
        "### Repeated reads (dedupe)",
        "",
        "`dedupe` alone, target one token (every copy it may give up): tokens freed (pooled), "
        "the identifiers the superseded copies held that the result still names, and the "
        "ledger's facts (files, commands and exit codes, errors, failing tests) it still reads.",
        "",
        *table(
            [
                "files (with copies)",
                "copies",
                "tokens freed",
                "by format",
                *[f"{k} kept" for k in KINDS],
                "ledger facts kept",
            ],
            [
                [
                    f"{t['files']} ({t['files_with_copies']})",
                    t["copies"],
                    f"{t['freed']:,} of {t['tokens']:,} ({_pct(t['freed_share'])})",
                    ", ".join(
                        f"{_SHORT.get(f, f)} {_pct(v)}" for f, v in t["freed_by_format"].items()
                    ),
                    *[
                        f"{_pct(t['identifiers_kept'][k])} of {t['identifier_counts'][k]:,}"
                        for k in KINDS
                    ],
                    f"{_pct(t['facts_kept'])} of {t['facts']:,}",
                ]
            ],
        ),
    ]


def markdown(quality: dict[str, Any]) -> list[str]:
    """The "## Quality" section."""
    from ..common.report import goals_table, table

    lines = [
        "## Quality",
        "",
        "What each ladder keeps of every real transcript, compacted once to 25%, 40% and 60% "
        "of its size, and replayed call by call (window = half the largest request, compact "
        "at 70% of the window down to 40%). Judged by the benchmark's own rules "
        "(`benchmarks/quality_metrics.py`, `benchmarks/identifiers.py`), not the library's. "
        '**Task**: the first user message a person wrote (not `meta["synthetic"]`, not a '
        "SWE-agent demonstration), kept "
        "verbatim or as a cut that holds its first and last 80 characters. **Budget use**: "
        "tokens kept ÷ target. **Over, system > ½**: over target where the system prompt "
        "alone is over half the target. **Lost**: identifiers that occur in a message the "
        "result does not hold unchanged (dropped or rewritten); **only lost**: those that "
        "occur in no message kept unchanged; kept = named anywhere in the result (pooled over "
        "files). **Dropped-call paths**: paths in the arguments of tool calls the result no "
        'longer has. **Notes**: messages whose `meta["compaction"]` kind is a note or '
        "summary, new in the result: count, median / max tokens each. The LangChain peers run "
        "as LangChain applies them, on the full history before each call "
        '(`trim_messages(strategy="last", include_system=True, start_on="human")` to the '
        "target; `ClearToolUsesEdit(trigger=target, keep=1)`; in replay, trim when over 70% "
        "down to 40% and clear at 70%).",
        "",
    ]
    if "skipped" in quality:
        return [*lines, f"Skipped: {quality['skipped']}.", ""]
    lines += goals_table(goals(quality))
    for name, reason in (quality.get("skipped_ladders") or {}).items():
        lines += [f"Not run: {name} ({reason}).", ""]
    labels = quality["ladders"]
    totals = [t for t in quality["totals"] if t["target"] != "replay"]
    replays = [t for t in quality["totals"] if t["target"] == "replay"]
    lines += ["### Compaction to a share of the size", ""]
    lines += table(
        [
            "ladder",
            "target",
            "task kept (verbatim)",
            "task lost by format",
            "≤ target",
            "over, system > ½",
            "budget use median",
            "min",
            "summariser calls (runs)",
            "notes: n, median / max tokens",
            "errors",
        ],
        [
            [
                labels[t["ladder"]],
                _target(t["target"]),
                f"{t['task_kept']}/{t['files']} ({t['task_verbatim']})",
                _by_format(t["task_lost_by_format"], t["files_by_format"]),
                f"{t['fits']}/{t['files']}",
                t["over_excusable"],
                _num(t["budget_median"]),
                _num(t["budget_min"]),
                f"{t['summarizer_calls']} ({t['files_summarized']})",
                _note(t),
                t["errors"],
            ]
            for t in totals
        ],
    )
    lines += ["", "### Identifiers kept", ""]
    lines += table(
        [
            "ladder",
            "target",
            *[f"lost {k} kept" for k in KINDS],
            *[f"only-lost {k} kept" for k in KINDS],
            "dropped-call paths kept",
        ],
        [
            [
                labels[t["ladder"]],
                _target(t["target"]),
                *[f"{_pct(t['lost_share'][k])} of {t['lost_counts'][k]:,}" for k in KINDS],
                *[
                    f"{_pct(t['only_lost_share'][k])} of {t['only_lost_counts'][k]:,}"
                    for k in KINDS
                ],
                f"{_pct(t['call_paths_share'])} of {t['call_paths']:,}",
            ]
            for t in totals
        ],
    )
    lines += ["", "### Replay", ""]
    lines += table(
        [
            "ladder",
            "calls",
            "calls without the task (runs)",
            "by format",
            "requests over window (runs)",
            "prompt-cache share",
            "summariser calls",
            "notes: n, median / max tokens",
            "errors",
        ],
        [
            [
                labels[t["ladder"]],
                f"{t['calls']:,}",
                f"{t['without_task']} ({t['files_without_task']})",
                _by_format(t["without_task_by_format"]),
                f"{t['over_window']} ({t['files_over_window']})",
                _pct(t["cache_share"]),
                t["summarizer_calls"],
                _note(t),
                t["errors"],
            ]
            for t in replays
        ],
    )
    lines += _dedupe(quality.get("dedupe"))
    lines += ["", *_per_file(quality, "default")]
    errors = sorted({e for t in quality["totals"] for e in t.get("error_examples", ())})
    if errors:
        lines += ["", "Errors raised (first of each kind):", *[f"- `{e}`" for e in errors[:5]]]
    lines += [
        "",
        f"Prompt-cache share: tokens of each request that repeat the start of the previous "
        f"request unchanged, over all tokens of the calls after the first (pooled). Suite "
        f"time: {quality['seconds']:.0f} s.",
        "",
    ]
    return lines
