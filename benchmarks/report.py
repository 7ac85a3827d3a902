"""The results as Markdown (benchmarks/RESULTS.md) and the goals, judged plainly."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["SECTIONS", "goals", "markdown"]

#: Section headings every report has (the smoke test checks them).
SECTIONS = (
    "## Goals",
    "## Counting floor and cold ladder",
    "## Warm turn",
    "## Scaling",
    "## Side by side with LangChain",
    "## Replay economics",
)

COLD_GOAL = 1.5
SCALING_GOAL = 12.0
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


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each goal of the issue with the measured value and met / not met (None: not measured)."""
    out: list[dict[str, Any]] = []
    cold = results.get("cold")
    if cold and (cold.get("concat") or cold.get("groups")):
        concat = cold.get("concat")
        total = next((g for g in cold["groups"] if g["name"] == "all transcripts"), None)
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
        out.append(
            {
                "goal": f"cold ladder to 40% costs at most {COLD_GOAL}x the counting floor",
                "measured": "; ".join(parts),
                "met": ok,
            }
        )
    else:
        out.append({"goal": "cold ladder at most 1.5x the floor", "measured": "", "met": None})

    warm = results.get("warm")
    scaling = results.get("scaling")
    overheads = []
    if warm and warm.get("groups"):
        total = next((g for g in warm["groups"] if g["name"] == "all transcripts"), None)
        if total:
            overheads.append(("real transcripts", total["overhead_median_us"]))
    if scaling and scaling.get("rows"):
        for row in scaling["rows"]:
            overheads.append((f"{row['messages']:,} messages", row["overhead_median_us"]))
    if overheads:
        worst = max(v for _, v in overheads)
        out.append(
            {
                "goal": "a call that needs no compaction costs only the counting of the newly "
                f"appended messages (median overhead beyond it under {OVERHEAD_GOAL_US:.0f} µs, "
                "at every conversation length)",
                "measured": ", ".join(f"{k}: {_num(v)} µs" for k, v in overheads),
                "met": worst <= OVERHEAD_GOAL_US,
            }
        )
    if scaling and scaling.get("steps"):
        steps = scaling["steps"]
        out.append(
            {
                "goal": f"10x more messages costs at most {SCALING_GOAL:.0f}x the time "
                "(cold ladder)",
                "measured": ", ".join(
                    f"{s['from']:,}→{s['to']:,}: {_x(s['ladder_x'])}" for s in steps
                ),
                "met": all(s["ladder_x"] <= SCALING_GOAL for s in steps),
            }
        )
    valid_parts = []
    all_valid = True
    if cold and cold.get("cases"):
        bad = [r["name"] for r in cold["cases"] if not r["valid"]]
        concat = cold.get("concat")
        if concat and not concat["valid"]:
            bad.append(concat["name"])
        valid_parts.append(f"cold ladder: {len(bad)} invalid")
        all_valid = all_valid and not bad
    peers = results.get("peers")
    if peers and "cases" in peers:
        rows = list(peers["cases"]) + ([peers["concat"]] if peers.get("concat") else [])
        bad = sum(
            1 for r in rows for k in ("sliding_window", "tool_results") if not r[k].get("valid")
        )
        valid_parts.append(f"side by side (ours): {bad} invalid")
        all_valid = all_valid and bad == 0
    if valid_parts:
        out.append(
            {
                "goal": "every output of ours passes validate()",
                "measured": "; ".join(valid_parts),
                "met": all_valid,
            }
        )
    return out


def _met(value: bool | None) -> str:
    return {True: "met", False: "**NOT met**", None: "not measured"}[value]


def _machine(info: dict[str, Any]) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items())
    return [
        f"- Date: {info['date']}",
        f"- CPU: {info['cpu']} ({info['cores']} cores)",
        f"- Python: {info['python']}",
        f"- Packages: {versions}",
        f"- Command: `{info['command']}` (repeats: {info['repeats']}; medians of the repeats)",
        f"- Total run time: {info.get('elapsed_s', 0):.0f} s ("
        + ", ".join(f"{k} {v:.0f} s" for k, v in info.get("section_seconds", {}).items())
        + ")",
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
    lines += _table(
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
    lines += _table(
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
    lines += _table(
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


def _scaling(scaling: dict[str, Any] | None) -> list[str]:
    lines = [
        "## Scaling",
        "",
        "Synthetic agent conversations (`benchmarks/synthetic.py`, seeded: a long system "
        "prompt, user turns, steps of one to three tool calls with log-normal output sizes). "
        "Cold ladder to 40% as above; conversations under 10k messages get proportionally "
        "more runs (up to 50), since a median over a few millisecond-long runs is mostly "
        "noise. Quiet call = a `before_call` at the end of the "
        "conversation that needs no compaction (200 calls, one appended message each). Peak "
        "memory: growth of the peak resident set size across one run, in a fresh process "
        "where the conversation is already built (`benchmarks/memory.py`; a separate pass "
        "from the timed runs; `tracemalloc` would trace millions of token-id allocations "
        "and take minutes at 100k messages). A lower bound: the few MiB freed while "
        "building the conversation are reused first, which hides most of it at 1k messages. "
        "It is mostly the counter's per-message cache and, for the ladder, the rewritten "
        "messages.",
        "",
    ]
    if not scaling or not scaling.get("rows"):
        return [*lines, f"Skipped: {(scaling or {}).get('skipped', 'no sizes')}.", ""]
    rows = [
        [
            f"{r['messages']:,}",
            f"{r['tokens']:,}",
            _ms(r["floor_s"]),
            _ms(r["ladder_s"]),
            _x(r["ratio"]),
            _num(r["quiet_median_us"]),
            _num(r["overhead_median_us"]),
            _num(r.get("floor_peak_bytes", math.nan) / 2**20),
            _num(r.get("ladder_peak_bytes", math.nan) / 2**20),
            "yes" if r["valid"] else "NO",
        ]
        for r in scaling["rows"]
    ]
    lines += _table(
        [
            "messages",
            "tokens",
            "floor ms",
            "ladder ms",
            "ladder/floor",
            "quiet call median µs",
            "overhead median µs",
            "floor peak RSS growth MiB",
            "ladder peak RSS growth MiB",
            "valid",
        ],
        rows,
    )
    lines += [""]
    lines += _table(
        ["step", "messages x", "ladder time x", "floor time x", f"≤ {SCALING_GOAL:.0f}x"],
        [
            [
                f"{s['from']:,} → {s['to']:,}",
                _num(s["messages_x"], 0),
                _x(s["ladder_x"]),
                _x(s["floor_x"]),
                "met" if s["ladder_x"] <= SCALING_GOAL else "**NOT met**",
            ]
            for s in scaling["steps"]
        ],
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
        lines += _table(
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
        lines += _table(
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
    lines += _table(
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
    lines += _table(
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


def markdown(results: dict[str, Any]) -> str:
    info = results["machine"]
    skipped = results.get("transcripts_skipped")
    lines = [
        "# Benchmark results",
        "",
        *_machine(info),
        "",
        "Absolute times vary between machines and between runs (this machine is shared); the "
        "ratios, each against the counting floor measured in the same run, are what count.",
        "",
    ]
    if results.get("transcripts_note"):
        lines += [results["transcripts_note"], ""]
    lines += ["## Goals", ""]
    lines += _table(
        ["goal", "measured", "result"],
        [[g["goal"], g["measured"], _met(g["met"])] for g in results["goals"]],
    )
    lines += [""]
    lines += _cold(results.get("cold"), skipped)
    lines += _warm(results.get("warm"), skipped)
    lines += _scaling(results.get("scaling"))
    lines += _peers(results.get("peers"), skipped)
    lines += _economics(results.get("economics"), skipped)
    if results.get("notes"):
        lines += ["## Notes", "", *[f"- {n}" for n in results["notes"]], ""]
    return "\n".join(lines)
