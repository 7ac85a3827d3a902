"""Prices from genai-prices (pydantic's maintained price table), when it is installed.

genai-prices knows what hundreds of models charge (input, output, cache reads, 5-minute and
1-hour cache writes) and is updated as prices change; it does not know how a provider caches
(the rule, the TTLs on offer, the shortest cacheable prefix). So it answers the prices only,
as plain values, and [`price_for`][compaction.pricing.prices.price_for] takes the caching rule
from the shipped table.

Only its bundled data is read: nothing here starts its auto-update (which fetches over the
network). A snapshot the application installed itself (its ``UpdatePrices``) is used like
the bundled one. Long-context tiers are not modelled: the base price (prompts up to the first
tier, 200k tokens for the models that have one) is taken, as the shipped table does.
"""

from __future__ import annotations

import functools
from datetime import datetime, timezone
from typing import Any

__all__ = ["genai_prices"]

#: genai-prices' price keys for a cache write, by TTL in seconds.
_WRITE_KEYS = {300: "cache_write_mtok", 3600: "cache_write_1h_mtok"}


def _named(match: Any, name: str) -> bool:
    """Whether genai-prices' match logic names ``name`` exactly (an ``equals`` clause, alone or
    in an ``or``). Its ``starts_with`` clauses take any suffix (``claude-sonnet-4-5-foo``), so
    they are not enough: a model that is not named exactly is not taken to be priced."""
    if getattr(match, "equals", None) == name:
        return True
    return any(_named(m, name) for m in getattr(match, "or_", None) or ())


def _value(prices: Any, key: str) -> float | None:
    value = getattr(prices, key, None)
    if value is None:
        return None
    base = getattr(value, "base", value)  # a tiered price: the base tier
    return float(base)


@functools.cache
def genai_prices(name: str, provider: str | None = None) -> dict[str, Any] | None:
    """What genai-prices charges for model ``name`` (its own id or a name it lists exactly),
    as ``model``, ``provider``, ``input``, ``output``, ``cache_read`` (None when the model has
    no cached price), ``cache_write`` (TTL -> price) and ``source``; None when genai-prices is
    not installed or does not name the model. ``provider`` is a hint (``openai/gpt-5``)."""
    try:
        import genai_prices as package
        from genai_prices.data_snapshot import get_snapshot
    except ImportError:
        return None
    snapshot = get_snapshot()
    found = None
    for hint in (provider, None) if provider else (None,):
        try:
            found = snapshot.find_provider_model(name, None, hint, None)
            break
        except LookupError:
            continue
    if found is None:
        return None
    where, model = found
    if model.id != name.lower() and not _named(model.match, name.lower()):
        return None
    prices = model.get_prices(datetime.now(timezone.utc))
    inp, out = _value(prices, "input_mtok"), _value(prices, "output_mtok")
    if inp is None or out is None:
        return None
    writes = {ttl: v for ttl, key in _WRITE_KEYS.items() if (v := _value(prices, key)) is not None}
    urls = where.pricing_urls or []
    return {
        "model": model.id,
        "provider": where.id,
        "input": inp,
        "output": out,
        "cache_read": _value(prices, "cache_read_mtok"),
        "cache_write": writes,
        "source": f"genai-prices {package.__version__}" + (f", {urls[0]}" if urls else ""),
    }
