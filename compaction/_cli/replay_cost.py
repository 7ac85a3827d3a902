"""The priced half of ``compaction replay``: the price row, per-call costs, the table.

Kept apart from ``compaction._cli.cmd_replay`` so the plain replay stays readable; see
"What a compaction costs" in the docs for the model behind the figures.
"""

from __future__ import annotations

import sys
from typing import Any

from .errors import CliError
from .render import Table, render, say

__all__ = ["print_priced"]


def _price(options: dict[str, Any]) -> Any:
    """The price row asked for (None: no pricing); a bad table or model is bad usage."""
    from ..pricing.prices import PriceError, load_prices, price_for

    if not options.get("price"):
        return None
    try:
        # No table given: genai-prices where installed, else the shipped table.
        table = load_prices(options["prices"]) if options.get("prices") else None
        price = price_for(options["price"], table)
        price.write_price(options.get("ttl"))
    except PriceError as exc:
        raise CliError(str(exc)) from None
    return price


def _price_info(price: Any, compactor: Any, options: dict[str, Any]) -> dict[str, Any]:
    ttl = options.get("ttl") or price.ttl[0]
    return {
        "model": price.model,
        "source": price.source,
        "date": price.date,
        "cache": price.cache,
        "ttl": ttl,
        "cadence": options["cadence"],
        "overhead": options["overhead"],
        "policy": options.get("policy", "default"),
    }


def _earnings(records: Any, price: Any) -> list[dict[str, Any]]:
    from ..pricing.earnings import earnings

    return [
        {
            "call": e.call,
            "calls": e.calls,
            "rewrite_usd": round(e.rewrite, 6),
            "summary_usd": round(e.summary, 6),
            "saved_usd": round(e.saved, 6),
            "net_usd": round(e.net, 6),
        }
        for e in earnings(records, price)
    ]


def _cost(c: Any) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "cache_read": c.cache_read,
        "cache_write": c.cache_write,
        "uncached": c.uncached,
        "output": c.output,
        "usd": round(c.cost, 6),  # the summariser's calls included
        "summary_usd": round(c.summary, 6),
    }


def _usd(value: float) -> str:
    return f"{value:.4f}"


def print_priced(report: dict[str, Any]) -> None:
    """The per-call table with cache columns and cost, and compacted-vs-uncompacted totals."""
    t = report["totals"]
    info = report["price"]
    table = Table(
        [
            "call",
            "tokens sent",
            "compacted",
            "cache read",
            "cache write",
            "uncached",
            "output",
            "cost $",
            "uncompacted $",
        ],
        right=frozenset(
            {
                "call",
                "tokens sent",
                "cache read",
                "cache write",
                "uncached",
                "output",
                "cost $",
                "uncompacted $",
            }
        ),
    )
    for r in report["calls"]:
        c, b = r["cost"], r["uncompacted"]
        table.add(
            r["call"],
            r["tokens_sent"],
            " -> ".join(r["strategies"]) if r["compacted"] else "",
            c["cache_read"],
            c["cache_write"],
            c["uncached"],
            c["output"],
            _usd(c["usd"]),
            _usd(b["usd"]),
        )
    c, b = t["cost"], t["uncompacted"]
    plural = "" if t["compactions"] == 1 else "s"
    table.footer = (
        "total",
        t["tokens_sent"],
        f"{t['compactions']} compaction{plural}",
        c["cache_read"],
        c["cache_write"],
        c["uncached"],
        c["output"],
        _usd(c["usd"]),
        _usd(b["usd"]),
    )
    render(table)
    out = sys.stdout
    timed = sum(1 for r in report["calls"] if r["timed"])
    origin = f"prices of {info['date']}, " if info["date"] else "prices from "
    say(
        f"priced as {info['model']} ({info['cache']} cache, TTL {info['ttl']}s; {origin}"
        f"{info['source'] or 'an undated table'}); time from the log for {timed} of "
        f"{len(report['calls'])} calls, else {info['cadence']:g}s apart",
        out,
    )
    fits = t["uncompacted_max_tokens"] <= report["window"]
    say(
        f"compacted: ${c['usd']:.4f}; with no compaction: ${b['usd']:.4f} "
        f"(largest request {t['uncompacted_max_tokens']:,} tokens: "
        f"{'fits' if fits else 'does NOT fit'} the {report['window']:,} window)",
        out,
    )
    for e in report.get("compactions", []):
        say(
            f"compaction at call {e['call']}: rewrite ${e['rewrite_usd']:.4f}, summary "
            f"${e['summary_usd']:.4f}, saved ${e['saved_usd']:.4f} over {e['calls']} calls, "
            f"net ${e['net_usd']:+.4f}",
            out,
        )
