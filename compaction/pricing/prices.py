"""Model prices as data: a dated, sourced TOML table, shipped with the package and replaceable.

Cost figures are only as good as the prices behind them, and prices change every few months,
so they are not constants in code: [`load_prices`][] reads ``compaction/pricing/prices.toml`` (or
a
table of the user's own, same layout) and checks every row at load, naming the file, the model
and the field of anything wrong, so a typo never turns into a silently wrong bill.

Two caching rules are modelled, because the providers differ in what they charge for:

- ``"breakpoint"`` (Anthropic): the prefix up to an explicit cache breakpoint is written to the
  cache at a premium (one price per TTL: 5 minutes or 1 hour) and read later at a tenth of the
  input price; a read refreshes the TTL.
- ``"automatic"`` (OpenAI, Gemini): the provider caches prefixes itself from ``min_prefix``
  tokens, in ``step``-token steps, and writing costs nothing extra.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal

import attrs

__all__ = ["Price", "PriceError", "default_prices", "load_prices", "price_for"]

_RULES: Final = ("breakpoint", "automatic")
_MAX_BYTES: Final = 1 << 20  # a price table is a few kB; a bigger file is not one


class PriceError(ValueError):
    """A price table that cannot be used, or a model it does not price."""


@attrs.frozen(slots=True)
class Price:
    """One model's prices, in USD per million tokens, and its caching rule.

    ``cache_write`` maps a TTL in seconds to the price of writing a token with that TTL
    (empty for ``"automatic"`` caching, where writing is free); ``ttl`` lists the TTLs on
    offer, the first being the default; ``min_prefix`` is the shortest cacheable prefix and
    ``step`` the granularity of an automatic cache hit.
    """

    model: str
    provider: str
    input: float
    output: float
    cache_read: float
    cache: Literal["breakpoint", "automatic"]
    ttl: tuple[int, ...]
    min_prefix: int
    cache_write: Mapping[int, float] = attrs.field(factory=dict)
    step: int = 1
    source: str = ""
    date: str = ""

    def write_price(self, ttl: int | None = None) -> float:
        """USD per million tokens written to the cache with ``ttl`` (default: the first TTL)."""
        if self.cache == "automatic":
            return 0.0
        ttl = self.ttl[0] if ttl is None else ttl
        if ttl not in self.cache_write:
            raise PriceError(
                f"{self.model}: no cache-write price for a {ttl}s TTL "
                f"(offered: {', '.join(map(str, sorted(self.cache_write)))})"
            )
        return self.cache_write[ttl]


def _number(where: str, row: Mapping[str, Any], key: str) -> float:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceError(f"{where}: field {key!r} must be a number (USD per million tokens)")
    if not math.isfinite(value) or value < 0:
        raise PriceError(f"{where}: field {key!r} must be a finite number >= 0, got {value!r}")
    return float(value)


def _int(where: str, row: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = row.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PriceError(f"{where}: field {key!r} must be a positive integer, got {value!r}")
    return value


def _row(path: str, model: str, row: Any) -> Price:
    where = f"{path}: model {model!r}"
    if not isinstance(row, Mapping):
        raise PriceError(f"{where}: expected a table of fields")
    rule = row.get("cache")
    if rule not in _RULES:
        raise PriceError(f"{where}: field 'cache' must be one of {_RULES}, got {rule!r}")
    ttl = row.get("ttl")
    if (
        not isinstance(ttl, list)
        or not ttl
        or any(isinstance(t, bool) or not isinstance(t, int) or t < 1 for t in ttl)
    ):
        raise PriceError(f"{where}: field 'ttl' must be a non-empty list of seconds, got {ttl!r}")
    writes: dict[int, float] = {}
    if rule == "breakpoint":
        raw = row.get("cache_write")
        if not isinstance(raw, Mapping):
            raise PriceError(
                f"{where}: field 'cache_write' must map each TTL in seconds to a price "
                '(e.g. { "300" = 3.75, "3600" = 6.00 })'
            )
        for key in raw:
            try:
                seconds = int(key)
            except ValueError:
                raise PriceError(f"{where}: field 'cache_write': {key!r} is not seconds") from None
            writes[seconds] = _number(f"{where}, cache_write", raw, key)
        missing = [t for t in ttl if t not in writes]
        if missing:
            raise PriceError(f"{where}: field 'cache_write' has no price for TTL {missing}")
    elif "cache_write" in row:
        raise PriceError(f"{where}: field 'cache_write' is for cache = 'breakpoint' only")
    for key in ("provider", "source", "date"):
        if not isinstance(row.get(key, ""), str):
            raise PriceError(f"{where}: field {key!r} must be text")
    return Price(
        model=model,
        provider=row.get("provider", ""),
        input=_number(where, row, "input"),
        output=_number(where, row, "output"),
        cache_read=_number(where, row, "cache_read"),
        cache=rule,
        ttl=tuple(ttl),
        min_prefix=_int(where, row, "min_prefix"),
        cache_write=writes,
        step=_int(where, row, "step", 1),
        source=row.get("source", ""),
        date=row.get("date", ""),
    )


def _parse(text: str, path: str) -> dict[str, Price]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceError(f"{path}: not valid TOML: {exc}") from None
    models = data.get("models")
    if not isinstance(models, Mapping) or not models:
        raise PriceError(f"{path}: expected [models.NAME] tables, found none")
    return {name: _row(path, name, row) for name, row in models.items()}


def load_prices(path: str | Path) -> dict[str, Price]:
    """The price table in the TOML file ``path``, checked ([`PriceError`][] names the file,
    the model and the field of the first problem)."""
    p = Path(path)
    try:
        if p.stat().st_size > _MAX_BYTES:
            raise PriceError(f"{p}: {p.stat().st_size} bytes is too big for a price table")
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceError(f"{p}: cannot read the price table: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise PriceError(f"{p}: not UTF-8 text") from None
    return _parse(text, str(p))


def default_prices() -> dict[str, Price]:
    """The table shipped with the package (``compaction/pricing/prices.toml``)."""
    text = resources.files("compaction.pricing").joinpath("prices.toml").read_text(encoding="utf-8")
    return _parse(text, "compaction/pricing/prices.toml")


def price_for(model: str, prices: Mapping[str, Price] | None = None) -> Price:
    """The row for ``model``: an exact name, else the longest name it extends (a dated
    snapshot such as ``claude-haiku-4-5-20251001`` or ``openai/gpt-5``)."""
    table = default_prices() if prices is None else prices
    if model in table:
        return table[model]
    bare = model.rsplit("/", 1)[-1]
    candidates = [n for n in table if bare == n or bare.startswith(n + "-")]
    if candidates:
        return table[max(candidates, key=len)]
    raise PriceError(
        f"no price for model {model!r}; known: {', '.join(sorted(table))} "
        "(pass your own table with --prices FILE)"
    )
