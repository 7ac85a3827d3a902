"""The results as Markdown (benchmarks/RESULTS.md) and the goals, judged plainly."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

__all__ = [
    "COLD_GOAL",
    "cold",
    "economics",
    "goals_table",
    "peers",
    "table",
    "warm",
]

COLD_GOAL = 1.5
OVERHEAD_GOAL_US = 50.0


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


def _cold(cold: dict[str, Any] | None, skipped: str | None) -> list[str]:
    lines = [
        "## Counting floor and cold ladder",
        "",
        "Floor: one pass of a new `TiktokenCounter` (cold cache) over the conversation. Cold "
        "ladder: `ToolResults` → `SlidingWindow` down to 40% of the size, with a new counter, "
        "so its time includes all of its own counting plus input validation. Ratio = ladder / "
        "floor, both medians of interleaved runs.",
        "",
    ]
    if not cold or (not cold.get("cases") and not cold.get("concat")):
        reason = (cold or {}).get("skipped") or skipped or "no transcripts"
        return [*lines, f"Skipped: {reason}.", ""]
    rows = []
    for g in cold["groups"]:
        rows.append(
            [
                g["name"],
                g["files"],
                f"{g['messages']:,}",
                f"{g['tokens']:,}",
                _ms(g["floor_s"]),
                _ms(g["ladder_s"]),
                _x(g["ratio"]),
                _x(g["median_ratio"]),
                _x(g["worst_ratio"]),
                f"{g['within_goal']}/{g['files']}",
                f"{g['valid']}/{g['files']}",
                f"{g['fits']}/{g['files']}",
            ]
        )
    c = cold.get("concat")
    if c:
        rows.append(
            [
                f"**{c['name']}**",
                1,
                f"{c['messages']:,}",
                f"{c['tokens']:,}",
                _ms(c["floor_s"]),
                _ms(c["ladder_s"]),
                f"**{_x(c['ratio'])}**",
                "",
                "",
                "1/1" if c["ratio"] <= COLD_GOAL else "0/1",
                "1/1" if c["valid"] else "0/1",
                "1/1" if c["fits"] else "0/1",
            ]
        )
    lines += table(
        [
            "transcripts",
            "files",
            "messages",
            "tokens",
            "floor ms",
            "ladder ms",
            "ladder/floor (sum)",
            "median per file",
            "worst file",
            f"files ≤ {COLD_GOAL}x",
            "valid",
            "fit target",
        ],
        rows,
    )
    lines += ["", "<details><summary>Every transcript</summary>", ""]
    lines += table(
        [
            "file",
            "messages",
            "tokens",
            "floor ms",
            "ladder ms",
            "ratio",
            "after",
            "applied",
            "encoded",
        ],
        [
            [
                r["name"],
                r["messages"],
                f"{r['tokens']:,}",
                _ms(r["floor_s"]),
                _ms(r["ladder_s"]),
                _x(r["ratio"]),
                f"{r['after']:,}",
                " → ".join(r["applied"]) or "none",
                r["encoded"],
            ]
            for r in cold["cases"]
        ],
    )
    lines += ["", "</details>", ""]
    return lines


def _warm(warm: dict[str, Any] | None, skipped: str | None) -> list[str]:
    lines = [
        "## Warm turn",
        "",
        "Each transcript replayed through `Compactor(ToolResults → SlidingWindow, window = half "
        "its size)`: one `before_call` per model call (before every assistant message). *Quiet* "
        "calls need no compaction; *compacting* calls run the ladder. Overhead = quiet call "
        "time minus the time a fresh counter takes to count just the messages appended since "
        "the previous call. Replay/floor = all calls of the run against one counting pass.",
        "",
    ]
    if not warm or not (warm.get("groups") or warm.get("concat")):
        reason = (warm or {}).get("skipped") or skipped or "no transcripts"
        return [*lines, f"Skipped: {reason}.", ""]
    rows = []
    for g in [*warm["groups"], *([warm["concat"]] if warm.get("concat") else [])]:
        rows.append(
            [
                g["name"],
                g["quiet_calls"],
                _num(g["quiet_median_us"]),
                _num(g["quiet_p99_us"]),
                _num(g["overhead_median_us"]),
                _num(g["overhead_p99_us"]),
                g["busy_calls"],
                _num(g["busy_median_ms"], 2),
                _num(g["busy_p99_ms"], 2),
                _x(g["total_vs_floor"]),
            ]
        )
    lines += table(
        [
            "transcripts",
            "quiet calls",
            "quiet median µs",
            "quiet p99 µs",
            "overhead median µs",
            "overhead p99 µs",
            "compacting calls",
            "compacting median ms",
            "compacting p99 ms",
            "replay/floor",
        ],
        rows,
    )
    return [*lines, ""]


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


def _economics(econ: dict[str, Any] | None, skipped: str | None) -> list[str]:
    lines = [
        "## Replay economics",
        "",
        "Each transcript replayed once (`compaction.replay`) through a `Compactor` with a "
        "window of half its size (compact at 70%, down to 40%), with the reference ladder and "
        "with a ladder that has no window (so the summariser is reached whenever clearing "
        "tool output is not enough). Summary uses the offline extractive summariser. Tokens "
        "sent = sum over model calls of the request size; uncompacted = what the same calls "
        "would have sent without compaction. Prefix share = the part of a request that "
        "repeats the previous request's start exactly (what a prompt cache can serve), mean "
        "over calls after the first (weighted by calls); cached share = the same over all "
        "tokens sent. Summariser calls counted from `compaction.events.summarized`.",
        "",
    ]
    if not econ or not econ.get("rows"):
        reason = (econ or {}).get("skipped") or skipped or "no transcripts"
        return [*lines, f"Skipped: {reason}.", ""]
    header = [
        "transcripts",
        "ladder",
        "files",
        "calls",
        "tokens sent",
        "uncompacted",
        "saved",
        "compactions",
        "summariser calls (failed)",
        "mean prefix share",
        "cached share",
        "calls over window",
    ]
    lines += table(
        header,
        [
            [
                t["name"],
                t["ladder"],
                t["files"],
                f"{t['calls']:,}",
                f"{t['tokens_sent']:,}",
                f"{t['tokens_uncompacted']:,}",
                _pct(t["saved_share"]),
                t["compactions"],
                f"{t['summarizer_calls']} ({t['summarizer_failures']})",
                _pct(t["mean_prefix_share"]),
                _pct(t["cache_share"]),
                t["over_window"],
            ]
            for t in econ["totals"]
        ],
    )
    lines += ["", "<details><summary>Every transcript</summary>", ""]
    lines += table(
        [
            "file",
            "ladder",
            "window",
            "calls",
            "tokens sent",
            "saved",
            "compactions",
            "summariser calls",
            "mean prefix share",
        ],
        [
            [
                r["name"],
                r["ladder"],
                f"{r['window']:,}",
                r["calls"],
                f"{r['tokens_sent']:,}",
                _pct(r["saved_share"]),
                r["compactions"],
                r["summarizer_calls"],
                _pct(r["mean_prefix_share"]),
            ]
            for r in econ["rows"]
        ],
    )
    return [*lines, "", "</details>", ""]


# -- the sections, each with the goals it judges ------------------------------------------------


def _cold_goals(cold: dict[str, Any]) -> list[dict[str, Any]]:
    concat = cold.get("concat")
    total = next((g for g in cold.get("groups", ()) if g["name"] == "all transcripts"), None)
    parts = []
    ok = True
    if concat:
        parts.append(f"concatenation {_x(concat['ratio'])}")
        ok = ok and concat["ratio"] <= COLD_GOAL
    if total:
        parts.append(f"all transcripts together {_x(total['ratio'])}")
        parts.append(
            f"{total['within_goal']}/{total['files']} files within it on their own "
            f"(worst {_x(total['worst_ratio'])})"
        )
        ok = ok and total["ratio"] <= COLD_GOAL
    bad = [r["name"] for r in cold.get("cases", ()) if not r["valid"]]
    if concat and not concat["valid"]:
        bad.append(concat["name"])
    return [
        {
            "goal": f"cold ladder to 40% costs at most {COLD_GOAL}x the counting floor",
            "measured": "; ".join(parts),
            "met": ok,
        },
        {
            "goal": "every output of the cold ladder passes validate()",
            "measured": f"{len(bad)} invalid",
            "met": not bad,
        },
    ]


def _cold_findings(cold: dict[str, Any]) -> list[str]:
    """Plain sentences about what the numbers show, computed from them (not written by hand)."""
    small = [r for r in cold.get("cases", ()) if r["floor_s"] < 0.010]
    over = [r for r in cold.get("cases", ()) if r["ratio"] > COLD_GOAL]
    if not (small and over):
        return []
    extra = statistics.median(r["ladder_s"] - r["floor_s"] for r in small)
    return [
        f"The files over {COLD_GOAL}x the floor on their own are small ones (largest floor "
        f"among them {max(r['floor_s'] for r in over) * 1e3:.1f} ms): below about 10 ms of "
        "counting, a run's fixed cost (parsing the transcript once per layer, validating input "
        "and output, encoding the placeholders and the note, sending the events) shows; the "
        f"median extra cost over the floor for files under 10 ms is {extra * 1e3:.2f} ms."
    ]


def _with_goals(section: list[str], goals: Sequence[dict[str, Any]]) -> list[str]:
    """``section`` with its goals table after the heading's paragraph."""
    at = section.index("", 2) + 1 if "" in section[2:] else len(section)
    return [*section[:at], *goals_table(goals), *section[at:]]


def cold(cold: dict[str, Any]) -> list[str]:
    lines = _cold(cold, cold.get("skipped"))
    if cold.get("cases") or cold.get("concat"):
        lines = _with_goals(lines, _cold_goals(cold))
        lines += [f"- {n}" for n in _cold_findings(cold)]
        lines += [""] if lines[-1] else []
    return lines


def warm(warm: dict[str, Any]) -> list[str]:
    lines = _warm(warm, warm.get("skipped"))
    total = next((g for g in warm.get("groups") or () if g["name"] == "all transcripts"), None)
    if total:
        goal = {
            "goal": "a call that needs no compaction costs only the counting of the newly "
            f"appended messages (median overhead beyond it under {OVERHEAD_GOAL_US:.0f} µs)",
            "measured": f"real transcripts: {_num(total['overhead_median_us'])} µs",
            "met": total["overhead_median_us"] <= OVERHEAD_GOAL_US,
        }
        lines = _with_goals(lines, [goal])
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


def economics(econ: dict[str, Any]) -> list[str]:
    return _economics(econ, None)
