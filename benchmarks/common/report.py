"""The results as Markdown (benchmarks/RESULTS.md): what every section shares, the number
formats, the Markdown table, and the goals table (each goal judged plainly).

The sections are in ``cold_warm_report``, ``side_by_side_report``, ``economics_report``,
``quality_report``, and the ``markdown``/``section`` functions of the other suites.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["goals_table", "table"]


def _ms(seconds: float) -> str:
    if seconds is None or math.isnan(seconds):
        return "n/a"
    return f"{seconds * 1e3:,.1f}"


def _x(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.2f}x"


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.1%}"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _met(value: bool | str | None) -> str:
    if isinstance(value, str):
        return value
    return {True: "met", False: "**NOT met**", None: "not measured"}[value]


def goals_table(goals: Sequence[dict[str, Any]]) -> list[str]:
    """The goals a section judges: goal, what was measured, met or not (None: not measured)."""
    if not goals:
        return []
    return [
        *table(
            ["goal", "measured", "result"],
            [[g["goal"], g["measured"], _met(g["met"])] for g in goals],
        ),
        "",
    ]


def _with_goals(section: list[str], goals: Sequence[dict[str, Any]]) -> list[str]:
    """``section`` with its goals table after the heading's paragraph."""
    at = section.index("", 2) + 1 if "" in section[2:] else len(section)
    return [*section[:at], *goals_table(goals), *section[at:]]
