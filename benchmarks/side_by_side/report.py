"""The "Side by side with LangChain" section of RESULTS.md, with the goal it judges."""

from __future__ import annotations

from typing import Any

from ..common.report import _ms, _with_goals, _x, table

__all__ = ["peers"]


_LABELS = {
    "sliding_window": "ours: SlidingWindow",
    "trim_messages": "LangChain trim_messages(last)",
    "tool_results": "ours: ToolResults",
    "clear_tool_uses": "LangChain ClearToolUsesEdit",
    "clear_tool_uses_to_target": "LangChain ClearToolUsesEdit, clear_at_least to target",
}


def _peer_cell(d: dict[str, Any]) -> list[str]:
    if "seconds" not in d:
        return [f"stopped after {d['stopped_after_s']:.0f} s", "", "", ""]
    return [
        _ms(d["seconds"]),
        f"{d['kept']:,}",
        _x(d["budget_used"]),
        "yes" if d["valid"] else "**NO**",
    ]


def _peers(peers: dict[str, Any] | None, skipped: str | None) -> list[str]:
    lines = [
        "## Side by side with LangChain",
        "",
        "Same messages (converted to LangChain messages), same tiktoken encoding and per-message "
        "envelope on both sides (the totals are checked equal), same target (40% of the size), "
        "same process. LangChain's counter has no cache (it has none of its own); ours starts "
        'cold each run. `trim_messages(strategy="last", include_system=True, '
        'start_on="human")` against `SlidingWindow`; `ClearToolUsesEdit(trigger=target, '
        "keep=1)` (what `ContextEditingMiddleware` applies; called directly, without the "
        "middleware's deepcopy) against `ToolResults` (keeps the newest step). With "
        "`clear_at_least` set to reach the target, LangChain recounts the whole conversation "
        "after every clear. Budget used = tokens kept / target (over 1x means over target). "
        "Valid = the output converted back passes `compaction.validate`.",
        "",
    ]
    if not peers or "skipped" in peers:
        reason = (peers or {}).get("skipped") or skipped or "no transcripts"
        return [*lines, f"Skipped: {reason}.", ""]
    t = peers.get("totals")
    if t:
        lines += [f"All {t['files']} transcripts (times summed):", ""]
        rows = []
        for key in _LABELS:
            d = t[key]
            rows.append(
                [
                    _LABELS[key],
                    _ms(d["seconds"]),
                    f"{d['completed']}/{t['files']}",
                    f"{d['valid']}/{d['completed']}",
                    _x(d["median_budget_used"]),
                    f"{d['within_budget']}/{d['completed']}",
                ]
            )
        lines += table(
            ["", "total ms", "completed", "valid", "median budget used", "within target"], rows
        )
        lines += [""]
    c = peers.get("concat")
    if c:
        lines += [
            f"{c['name']} ({c['messages']:,} messages, {c['tokens']:,} tokens, "
            f"target {c['target']:,}):",
            "",
        ]
        lines += table(
            ["", "ms", "tokens kept", "budget used", "valid"],
            [[_LABELS[k], *_peer_cell(c[k])] for k in _LABELS],
        )
        lines += [""]
    stopped = [r["name"] for r in peers["cases"] if any("seconds" not in r[k] for k in _LABELS)]
    if stopped:
        lines += [f"Stopped at the {peers['limit_s']:.0f} s limit: {', '.join(stopped)}.", ""]
    return lines


def peers(peers: dict[str, Any]) -> list[str]:
    lines = _peers(peers, None)
    if "cases" in peers:
        rows = list(peers["cases"]) + ([peers["concat"]] if peers.get("concat") else [])
        bad = sum(
            1 for r in rows for k in ("sliding_window", "tool_results") if not r[k].get("valid")
        )
        goal = {
            "goal": "every output of ours passes validate()",
            "measured": f"{bad} invalid",
            "met": bad == 0,
        }
        lines = _with_goals(lines, [goal])
    return lines
