"""The cold and warm sections of RESULTS.md, each with the goals it judges."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from ..common.report import _ms, _num, _with_goals, _x, table

__all__ = ["COLD_GOAL", "OVERHEAD_GOAL_US", "cold", "warm"]


COLD_GOAL = 1.5
#: The goals for the default ladder (a cold one-shot must stay well below a model call): among
#: the files whose counting floor is at least ``COLD_FLOOR_S``, the median file at most
#: ``COLD_MEDIAN_GOAL``, every file at most ``COLD_WORST_GOAL``; below it a ratio says little
#: (a run's fixed cost is a large share of a millisecond), so those files are judged by the
#: time the ladder takes above the floor, at most ``COLD_SMALL_OVER_S``.
COLD_MEDIAN_GOAL = 1.25
COLD_WORST_GOAL = 2.0
COLD_FLOOR_S = 0.005
COLD_SMALL_OVER_S = 0.002
OVERHEAD_GOAL_US = 50.0


def _cold(cold: dict[str, Any] | None, skipped: str | None) -> list[str]:
    lines = [
        "## Counting floor and cold ladder",
        "",
        "Floor: one pass of a new `TiktokenCounter` (cold cache) over the conversation. Cold "
        "ladder: the default ladder (`Dedupe` → `ToolResults` → `SlidingWindow` → `Summary` "
        "with the offline extractive summariser → `Fit`) down to 40% of the size, with a new "
        "counter, "
        "so its time includes all of its own counting plus input validation. Ratio = ladder / "
        "floor, both medians of interleaved runs, each run on a fresh copy of the messages "
        "(unpickled, so no hash, count or reading cached by an earlier run survives).",
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
        *_per_file_goals(cold.get("cases", ())),
        {
            "goal": "every output of the cold ladder passes validate()",
            "measured": f"{len(bad)} invalid",
            "met": not bad,
        },
    ]


def _per_file_goals(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-file clause: a ratio where the floor is large enough to carry one, an absolute
    ceiling on the time above the floor below that."""
    if not rows:
        return []
    big = [r for r in rows if r["floor_s"] >= COLD_FLOOR_S]
    small = [r for r in rows if r["floor_s"] < COLD_FLOOR_S]
    floor_ms = COLD_FLOOR_S * 1e3
    out = []
    if big:
        ratios = [r["ratio"] for r in big]
        worst = max(big, key=lambda r: r["ratio"])
        out.append(
            {
                "goal": f"default ladder, files whose floor is ≥ {floor_ms:g} ms: median at most "
                f"{COLD_MEDIAN_GOAL}x, every file at most {COLD_WORST_GOAL}x the floor",
                "measured": f"{len(big)} files: median {_x(statistics.median(ratios))}, worst "
                f"{_x(worst['ratio'])} ({worst['name']})",
                "met": statistics.median(ratios) <= COLD_MEDIAN_GOAL
                and worst["ratio"] <= COLD_WORST_GOAL,
            }
        )
    if small:
        over = [r["ladder_s"] - r["floor_s"] for r in small]
        worst = max(small, key=lambda r: r["ladder_s"] - r["floor_s"])
        out.append(
            {
                "goal": f"default ladder, files whose floor is under {floor_ms:g} ms: at most "
                f"{COLD_SMALL_OVER_S * 1e3:g} ms above the floor",
                "measured": f"{len(small)} files: median {statistics.median(over) * 1e3:.2f} ms, "
                f"worst {max(over) * 1e3:.2f} ms ({worst['name']})",
                "met": max(over) <= COLD_SMALL_OVER_S,
            }
        )
    return out


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
