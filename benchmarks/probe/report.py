"""The ``probe`` section of RESULTS.md: facts of the real runs recovered after compaction,
pooled, per kind and per format, per target."""

from __future__ import annotations

from typing import Any, Final

from ..common.report import goals_table, table

__all__ = ["goals", "section", "tally"]

LISTED = 40
POOLED_GOAL: Final = 0.97
FAILING_TEST_GOAL: Final = 0.80


def tally(results: dict[str, Any]) -> dict[tuple[str, str, str], list[int]]:
    """(target, format, kind) -> [recovered, asked], pooled over files."""
    out: dict[tuple[str, str, str], list[int]] = {}
    for row in results["rows"].values():
        for target, found in row["targets"].items():
            for (kind, _), ok in zip(row["facts"], found["recovered"], strict=True):
                cell = out.setdefault((target, row["format"], kind), [0, 0])
                cell[0] += ok
                cell[1] += 1
    return out


def _sum(cells: dict[tuple[str, str, str], list[int]], **match: str) -> tuple[int, int]:
    names = ("target", "format", "kind")
    kept = total = 0
    for key, (k, n) in cells.items():
        if all(key[names.index(name)] == value for name, value in match.items()):
            kept += k
            total += n
    return kept, total


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    cells = {k: v for k, v in tally(results).items() if k[0] != "replay"}
    pooled = _sum(cells)
    tests = _sum(cells, kind="failing test")
    out = []
    for label, (k, n), want in (
        ("all answers pooled", pooled, POOLED_GOAL),
        ("failing test ids", tests, FAILING_TEST_GOAL),
    ):
        out.append(
            {
                "goal": f"{label} recoverable at 25/40/60%: ≥ {want:.0%}",
                "measured": f"{k / n:.1%} ({k}/{n})" if n else "n/a",
                "met": (k / n >= want) if n else None,
            }
        )
    return out


def _share(pair: tuple[int, int]) -> str:
    kept, total = pair
    return f"{kept / total:.0%} ({kept}/{total})" if total else "-"


def section(results: dict[str, Any]) -> list[str]:
    lines = [
        "## Facts of real runs after compaction (probe)",
        "",
        "Facts computed from the raw logs by `compaction.check`'s own reader "
        "(`compaction/check/logs.py`, `edits.py`, `facts.py`): the task's "
        "identifiers (issue ids, paths, function names), the last 3 files edited, the last "
        "failing test id, the last error type, the last command. Each transcript is compacted "
        "by the default ladder to 25/40/60% of its tokens; a fact counts when one of its "
        "literal forms appears in the compacted messages' content or tool-call arguments (the "
        "system prompt left out: the harness wrote it before the run). The replay feeds the run "
        "call by call through the trigger (window half the transcript, compact at 70% down to "
        "40%) and asks the request the agent would send next.",
        "",
    ]
    if "skipped" in results:
        return [*lines, f"Skipped: {results['skipped']}.", ""]
    lines += goals_table(goals(results))
    cells = tally(results)
    targets = [str(t) for t in results["targets"]] + ["replay"]
    formats = sorted({row["format"] for row in results["rows"].values()})
    rows = []
    for kind in results["kinds"]:
        rows.append([kind, *(_share(_sum(cells, target=t, kind=kind)) for t in targets)])
    rows.append(["**all**", *(f"**{_share(_sum(cells, target=t))}**" for t in targets)])
    header = ["fact", *(t if t == "replay" else f"{float(t):.0%}" for t in targets)]
    lines += ["### By kind", "", *table(header, rows), ""]
    rows = []
    for fmt in formats:
        files = sum(row["format"] == fmt for row in results["rows"].values())
        rows.append(
            [
                f"{fmt} ({files} files)",
                *(_share(_sum(cells, target=t, format=fmt)) for t in targets),
            ]
        )
    lines += ["### By format", "", *table(header, rows), ""]
    rows = []
    for fmt in formats:
        for kind in results["kinds"]:
            shares = [_sum(cells, target=t, format=fmt, kind=kind) for t in targets]
            if any(n for _, n in shares):
                rows.append([fmt, kind, *(_share(s) for s in shares)])
    lines += ["### By format and kind", "", *table(["format", *header], rows), ""]
    lost = [
        f"{name} at {t if t == 'replay' else f'{float(t):.0%}'}: {kind} `{answer}`"
        for name, row in results["rows"].items()
        for t, found in row["targets"].items()
        for (kind, answer), ok in zip(row["facts"], found["recovered"], strict=True)
        if not ok and kind != "task id"
    ]
    if lost:
        lines += [
            f"Lost, other than task ids ({len(lost)}):",
            "",
            *(f"- {item}" for item in lost[:LISTED]),
            *([f"- ... and {len(lost) - LISTED} more"] if len(lost) > LISTED else []),
            "",
        ]
    absent = [
        f"{name}: {kind} `{answer}`"
        for name, row in results["rows"].items()
        for kind, answer in row["absent"]
    ]
    if absent:
        lines += [
            f"Not asked ({len(absent)}): in the raw log but not in the loaded messages even "
            "before compaction:",
            "",
            *(f"- {a}" for a in absent[:LISTED]),
            *([f"- ... and {len(absent) - LISTED} more"] if len(absent) > LISTED else []),
            "",
        ]
    errors = [
        f"{name} at {t}: {found['error']}"
        for name, row in results["rows"].items()
        for t, found in row["targets"].items()
        if "error" in found
    ]
    if errors or results["unread"]:
        lines += ["Errors and files not read:", "", *(f"- {e}" for e in errors + results["unread"])]
        lines.append("")
    return lines
