"""The quality suite's rows summed up per ladder and target (pure: rows in, dicts out).

Percentages are **pooled**: identifiers kept over identifiers lost, summed over every
transcript, so a file with 300 paths weighs more than one with 3 (a mean of per-file shares
would let the small files decide).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from .identifiers import KINDS

__all__ = ["pooled", "totals"]


def pooled(kept: int, total: int) -> float:
    """``kept / total``, NaN when there was nothing to keep."""
    return kept / total if total else math.nan


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def _sum_kinds(rows: Sequence[dict[str, Any]], key: str) -> dict[str, int]:
    return {kind: sum(r[key][kind] for r in rows) for kind in KINDS}


def _compaction_totals(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in rows if "error" not in r]
    budget = [r["budget_used"] for r in done]
    notes = [n for r in done for n in r["note_tokens"]]
    lost, lost_kept = _sum_kinds(done, "lost"), _sum_kinds(done, "lost_kept")
    only, only_kept = _sum_kinds(done, "only_lost"), _sum_kinds(done, "only_lost_kept")
    formats = sorted({r["format"] for r in rows})
    return {
        "files": len(rows),
        "errors": len(rows) - len(done),
        "error_examples": sorted({r["error"] for r in rows if "error" in r})[:3],
        "task_kept": sum(1 for r in done if r["task"] in ("verbatim", "cut")),
        "task_verbatim": sum(1 for r in done if r["task"] == "verbatim"),
        "task_lost": sum(1 for r in done if r["task"] is None),
        # A short task is owed verbatim only where the system prompt leaves room for it (at
        # most half the target): past that, the policy cuts the task before the system prompt.
        "task_short_not_verbatim": sum(
            1 for r in done if r["task_short"] and r["task"] == "cut" and not r["system_over_half"]
        ),
        "task_lost_by_format": {
            f: sum(1 for r in done if r["format"] == f and r["task"] is None) for f in formats
        },
        "files_by_format": {f: sum(1 for r in rows if r["format"] == f) for f in formats},
        "fits": sum(1 for r in done if r["fits"]),
        "over_excusable": sum(
            1 for r in done if not r["fits"] and (r["system_over_half"] or r.get("tiny"))
        ),
        "over_tiny": sum(1 for r in done if not r["fits"] and r.get("tiny")),
        "budget_median": _median(budget),
        "budget_min": min(budget) if budget else math.nan,
        "budget_max": max(budget) if budget else math.nan,
        "lost_share": {k: pooled(lost_kept[k], lost[k]) for k in KINDS},
        "only_lost_share": {k: pooled(only_kept[k], only[k]) for k in KINDS},
        "lost_counts": lost,
        "only_lost_counts": only,
        "call_paths": sum(r["call_paths"] for r in done),
        "call_paths_share": pooled(
            sum(r["call_paths_kept"] for r in done), sum(r["call_paths"] for r in done)
        ),
        "summarizer_calls": sum(r["summarizer_calls"] for r in done),
        "files_summarized": sum(1 for r in done if r["summarizer_calls"]),
        "notes": len(notes),
        "note_median": _median(notes),
        "note_max": max(notes) if notes else math.nan,
        "seconds": sum(r["seconds"] for r in rows),
    }


def _replay_totals(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in rows if "error" not in r]
    notes = [n for r in done for n in r["note_tokens"]]
    sent = sum(r["sent_after_first"] for r in done)
    formats = sorted({r["format"] for r in rows})
    return {
        "files": len(rows),
        "errors": len(rows) - len(done),
        "error_examples": sorted({r["error"] for r in rows if "error" in r})[:3],
        "calls": sum(r["calls"] for r in done),
        "without_task": sum(r["without_task"] for r in done),
        "files_without_task": sum(1 for r in done if r["without_task"]),
        "without_task_by_format": {
            f: sum(r["without_task"] for r in done if r["format"] == f) for f in formats
        },
        "over_window": sum(r["over_window"] for r in done if not r.get("tiny")),
        "files_over_window": sum(1 for r in done if r["over_window"] and not r.get("tiny")),
        "over_window_tiny": sum(r["over_window"] for r in done if r.get("tiny")),
        "cache_share": pooled(sum(r["prefix_after_first"] for r in done), sent),
        "summarizer_calls": sum(r["summarizer_calls"] for r in done),
        "notes": len(notes),
        "note_median": _median(notes),
        "note_max": max(notes) if notes else math.nan,
        "seconds": sum(r["seconds"] for r in rows),
    }


def totals(rows: Sequence[dict[str, Any]], ladders: Sequence[str]) -> list[dict[str, Any]]:
    """One dict per (ladder, target) in ``ladders`` order, targets ascending, replay last."""
    out: list[dict[str, Any]] = []
    for ladder in ladders:
        mine = [r for r in rows if r["ladder"] == ladder]
        targets = sorted({r["target"] for r in mine if r["target"] != "replay"})
        for target in targets:
            part = [r for r in mine if r["target"] == target]
            out.append({"ladder": ladder, "target": target, **_compaction_totals(part)})
        replayed = [r for r in mine if r["target"] == "replay"]
        if replayed:
            out.append({"ladder": ladder, "target": "replay", **_replay_totals(replayed)})
    return out
