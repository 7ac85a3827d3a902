"""Checking one price table's rows: every field, its type and a sane range.

A price table may come from anywhere (``--prices FILE``), so nothing in it is trusted: a price
of 1e308 overflows a bill to ``inf`` and then ``nan``, a TTL key of ``" -5"`` parses as an
int, text fields are echoed to a terminal (escape codes would run there), and a misspelt
field would silently be a missing one. Each check answers the plain value or raises
[`RowProblem`][] with the field and what is wrong; the caller adds the file, line and model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "MAX_PRICE",
    "RULE_FIELDS",
    "RULES",
    "RowProblem",
    "check_known",
    "check_model_name",
    "check_price_fields",
    "check_rule_fields",
    "check_text",
]

RULES: Final = ("breakpoint", "automatic")
#: USD per million tokens. The dearest model on sale costs a few hundred; a price above this
#: is a typo, and one near ``float`` max turns a bill into ``inf``.
MAX_PRICE: Final = 10_000.0
#: The longest cache lifetime accepted, in seconds (providers offer minutes to an hour).
MAX_TTL: Final = 86_400
#: Prefix lengths and steps, in tokens: no context window is near this.
MAX_TOKENS: Final = 100_000_000
MAX_TEXT: Final = 500

#: The fields that describe how a provider caches (as opposed to what it charges).
RULE_FIELDS: Final = ("cache", "ttl", "min_prefix", "step")
PRICE_FIELDS: Final = ("input", "output", "cache_read", "cache_write")
TEXT_FIELDS: Final = ("provider", "source", "date")
ROW_FIELDS: Final = frozenset((*RULE_FIELDS, *PRICE_FIELDS, *TEXT_FIELDS))


class RowProblem(ValueError):
    """One field of one row is unusable (the message names the field; ``field`` is its key,
    so the caller can find its line)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def check_text(key: str, value: Any, limit: int = MAX_TEXT) -> str:
    """Printable text of at most ``limit`` characters (it is shown on a terminal)."""
    if not isinstance(value, str):
        raise RowProblem(f"field {key!r} must be text", key)
    if len(value) > limit or not value.isprintable():
        raise RowProblem(
            f"field {key!r} must be printable text of at most {limit} characters, "
            f"got {_short(value)}",
            key,
        )
    return value


def check_model_name(name: str) -> None:
    """A model name: printable, no spaces, at most 200 characters."""
    if not name or len(name) > 200 or not name.isprintable() or any(c.isspace() for c in name):
        raise RowProblem(
            f"model name {_short(name)} must be 1 to 200 printable characters without spaces"
        )


def _short(value: str) -> str:
    text = repr(value)  # escapes control characters: nothing reaches the terminal raw
    return text if len(text) <= 60 else text[:57] + "..."


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RowProblem(f"field {key!r} must be a number (USD per million tokens)", key)
    if not math.isfinite(value) or value < 0 or value > MAX_PRICE:
        raise RowProblem(
            f"field {key!r} must be a finite number from 0 to {MAX_PRICE:,.0f} "
            f"(USD per million tokens), got {value!r}",
            key.split(".")[0],
        )
    return float(value)


def _whole(key: str, value: Any, top: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise RowProblem(
            f"field {key!r} must be a whole number from 1 to {top:,}, got {value!r}", key
        )
    return value


def check_known(row: Mapping[str, Any]) -> None:
    """Every field of a row is one this code reads: a misspelt one would be a missing one."""
    unknown = sorted(set(row) - ROW_FIELDS)
    if unknown:
        raise RowProblem(
            f"unknown field {_short(str(unknown[0]))} (known: {', '.join(sorted(ROW_FIELDS))})",
            str(unknown[0]),
        )


def check_rule_fields(row: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The caching rule of a row (``cache``, ``ttl``, ``min_prefix``, ``step``), each field
    taken from ``row`` or else ``defaults`` (the provider's, for the shipped table)."""

    def get(key: str, default: Any = None) -> Any:
        return row.get(key, defaults.get(key, default))

    rule = get("cache")
    if rule not in RULES:
        raise RowProblem(f"field 'cache' must be one of {RULES}, got {rule!r}", "cache")
    ttl = get("ttl")
    if not isinstance(ttl, list) or not ttl:
        raise RowProblem(f"field 'ttl' must be a non-empty list of seconds, got {ttl!r}", "ttl")
    seconds = tuple(_whole("ttl", t, MAX_TTL) for t in ttl)
    if len(set(seconds)) != len(seconds):
        raise RowProblem(f"field 'ttl' lists a TTL twice: {list(seconds)}", "ttl")
    return {
        "cache": rule,
        "ttl": seconds,
        "min_prefix": _whole("min_prefix", get("min_prefix"), MAX_TOKENS),
        "step": _whole("step", get("step", 1), MAX_TOKENS),
    }


def check_price_fields(row: Mapping[str, Any], rule: str, ttl: tuple[int, ...]) -> dict[str, Any]:
    """The prices of a row: ``input``, ``output``, ``cache_read`` and, for breakpoint
    caching, ``cache_write`` with one price for each TTL in ``ttl`` and for no other."""
    writes: dict[int, float] = {}
    if rule == "breakpoint":
        raw = row.get("cache_write")
        if not isinstance(raw, Mapping):
            raise RowProblem(
                "field 'cache_write' must map each TTL in seconds to a price "
                '(e.g. { "300" = 3.75, "3600" = 6.00 })',
                "cache_write",
            )
        for key, value in raw.items():
            if not (isinstance(key, str) and key.isascii() and key.isdigit()):
                raise RowProblem(
                    f"field 'cache_write': {_short(str(key))} is not seconds", "cache_write"
                )
            if int(key) not in ttl:
                raise RowProblem(
                    f"field 'cache_write': a price for a {int(key)}s TTL, which 'ttl' "
                    f"({list(ttl)}) does not offer",
                    "cache_write",
                )
            writes[int(key)] = _number(f"cache_write.{key}", value)
        missing = [t for t in ttl if t not in writes]
        if missing:
            raise RowProblem(f"field 'cache_write' has no price for TTL {missing}", "cache_write")
    elif "cache_write" in row:
        raise RowProblem("field 'cache_write' is for cache = 'breakpoint' only", "cache_write")
    return {
        "input": _number("input", row.get("input")),
        "output": _number("output", row.get("output")),
        "cache_read": _number("cache_read", row.get("cache_read")),
        "cache_write": writes,
    }
