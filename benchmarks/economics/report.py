"""The "Replay economics" section of RESULTS.md."""

from __future__ import annotations

from typing import Any

from ..common.report import _pct, table

__all__ = ["economics"]


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


def economics(econ: dict[str, Any]) -> list[str]:
    return _economics(econ, None)
