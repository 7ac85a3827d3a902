"""Model prices as data: a dated, sourced TOML table, shipped with the package and replaceable.

Cost figures are only as good as the prices behind them, and prices change every few months,
so they are not constants in code: [`load_prices`][] reads ``compaction/pricing/prices.toml`` (or
a table of the user's own, same layout) and checks every row at load, naming the file, the
line, the model and the field of anything wrong, so a typo never turns into a silently wrong
bill. Where genai-prices (pydantic's maintained table, the ``prices`` extra) is installed,
[`price_for`][] takes the prices from it and the caching rule from the shipped table (a
model's row, else its provider's ``[providers.NAME]``), which stays the offline default.

Two caching rules are modelled, because the providers differ in what they charge for:

- ``"breakpoint"`` (Anthropic): the prefix up to an explicit cache breakpoint is written to the
  cache at a premium (one price per TTL: 5 minutes or 1 hour) and read later at a tenth of the
  input price; a read refreshes the TTL.
- ``"automatic"`` (OpenAI, Gemini): the provider caches prefixes itself from ``min_prefix``
  tokens, in ``step``-token steps, and writing costs nothing extra.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from .._reading import TomlError, parse_toml, read_regular
from ._genai import genai_prices
from ._rows import (
    RULE_FIELDS,
    RowProblem,
    check_known,
    check_model_name,
    check_price_fields,
    check_rule_fields,
    check_text,
)

__all__ = ["Price", "PriceError", "default_prices", "load_prices", "price_for"]

#: The layout version of a price table this code reads.
VERSION: Final = 1
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
    #: Where and when the figures were read: provenance, not part of what a model costs.
    source: str = attrs.field(default="", eq=False)
    date: str = attrs.field(default="", eq=False)

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


def _line_of(text: str, model: str, field: str = "") -> int | None:
    """The line of ``field`` in model ``model``'s table (of its header when the field is not
    written out): tomllib keeps no positions, so the reader is pointed at it this way."""
    header = None
    for number, line in enumerate(text.splitlines(), 1):
        head = line.strip()
        if head.startswith("["):
            if header is not None:
                break
            inner = head.strip("[]").strip()
            if inner.startswith("models.") and inner[7:].strip().strip('"') == model:
                header = number
        elif header is not None and field and head.split("=", 1)[0].strip().strip('"') == field:
            return number
    return header


def _where(path: str, text: str, model: str, field: str = "") -> str:
    line = _line_of(text, model, field)
    return f"{path}:{line}: model {model!r}" if line else f"{path}: model {model!r}"


def _row(path: str, text: str, model: str, row: Any, defaults: Mapping[str, Any]) -> Price:
    if not isinstance(row, Mapping):
        raise PriceError(f"{_where(path, text, model)}: expected a table of fields")
    try:
        check_model_name(model)
        check_known(row)
        rule = check_rule_fields(row, defaults)
        prices = check_price_fields(row, rule["cache"], rule["ttl"])
        about = {key: check_text(key, row.get(key, "")) for key in ("provider", "source", "date")}
    except RowProblem as exc:
        raise PriceError(f"{_where(path, text, model, exc.field)}: {exc}") from None
    return Price(
        model=model,
        provider=about["provider"],
        input=prices["input"],
        output=prices["output"],
        cache_read=prices["cache_read"],
        cache=rule["cache"],
        ttl=rule["ttl"],
        min_prefix=rule["min_prefix"],
        cache_write=prices["cache_write"],
        step=rule["step"],
        source=about["source"],
        date=about["date"],
    )


def _providers(path: str, data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``[providers.NAME]`` tables: a provider's caching rule, for rows that leave it out
    (and for models priced by genai-prices, which knows prices but not caching rules)."""
    raw = data.get("providers", {})
    if not isinstance(raw, Mapping):
        raise PriceError(f"{path}: 'providers' must hold [providers.NAME] tables")
    out: dict[str, dict[str, Any]] = {}
    for name, table in raw.items():
        where = f"{path}: provider {name!r}"
        if not isinstance(table, Mapping):
            raise PriceError(f"{where}: expected a table of fields")
        unknown = sorted(set(table) - set(RULE_FIELDS))
        if unknown:
            raise PriceError(f"{where}: unknown field {unknown[0]!r} (known: {RULE_FIELDS})")
        try:
            check_model_name(name)
            check_rule_fields(table, {})
        except RowProblem as exc:
            raise PriceError(f"{where}: {exc}") from None
        out[name] = {**table, "ttl": list(table["ttl"])}
    return out


@attrs.frozen(slots=True)
class _Table:
    models: dict[str, Price]
    providers: dict[str, dict[str, Any]]


def _parse(data: bytes, path: str) -> _Table:
    try:
        doc = parse_toml(data)
    except TomlError as exc:
        raise PriceError(f"{path}: {exc}") from None
    unknown = sorted(set(doc) - {"version", "models", "providers"})
    if unknown:
        raise PriceError(
            f"{path}: unknown top-level key {unknown[0]!r} (a table holds version, "
            "[models.NAME] and [providers.NAME])"
        )
    version = doc.get("version", VERSION)
    if isinstance(version, bool) or version != VERSION:
        raise PriceError(f"{path}: field 'version' must be {VERSION}, got {version!r}")
    models = doc.get("models")
    if not isinstance(models, Mapping) or not models:
        raise PriceError(f"{path}: expected [models.NAME] tables, found none")
    providers = _providers(path, doc)
    text = data.decode("utf-8")
    table: dict[str, Price] = {}
    for name, row in models.items():
        provider = row.get("provider", "") if isinstance(row, Mapping) else ""
        defaults = providers.get(provider, {}) if isinstance(provider, str) else {}
        table[name] = _row(path, text, name, row, defaults)
    return _Table(table, providers)


def load_prices(path: str | Path) -> dict[str, Price]:
    """The price table in the TOML file ``path``, checked ([`PriceError`][] names the file,
    the line, the model and the field of the first problem). Only a regular file is read, at
    most 1 MiB: a device, a FIFO or a symlink is refused."""
    try:
        data = read_regular(path, _MAX_BYTES, "price table")
    except OSError as exc:
        raise PriceError(f"{path}: cannot read the price table: {exc.strerror or exc}") from None
    return _parse(data, str(path)).models


@functools.cache
def _shipped() -> _Table:
    data = resources.files("compaction.pricing").joinpath("prices.toml").read_bytes()
    return _parse(data, "compaction/pricing/prices.toml")


def default_prices() -> dict[str, Price]:
    """The table shipped with the package (``compaction/pricing/prices.toml``), offline."""
    return dict(_shipped().models)


#: A dated snapshot: ``-20250929`` (Anthropic), ``-2025-08-07`` (OpenAI), ``@20250929`` (Vertex).
_DATED: Final = re.compile(r"(?P<stem>.+?)[-@](?:\d{8}|\d{4}-\d{2}-\d{2})")


def _names(model: str) -> tuple[str | None, list[str]]:
    """The provider a routed name gives (``openai/gpt-5``: ``openai``), and the names
    ``model`` may be priced as: its bare name, then without its date."""
    prefix, _, bare = model.rpartition("/")
    names = [bare]
    dated = _DATED.fullmatch(bare)
    if dated:
        names.append(dated["stem"])
    return prefix.rsplit("/", 1)[-1] or None, names


def _lookup(table: Mapping[str, Price], model: str) -> Price | None:
    if model in table:
        return table[model]
    return next((table[n] for n in _names(model)[1] if n in table), None)


def _from_genai(model: str) -> Price | None:
    """``model`` priced by genai-prices, with the shipped table's caching rule (the model's
    row, else its provider's); None when genai-prices is absent or does not know it."""
    hint, names = _names(model)
    found = next((g for n in names if (g := genai_prices(n, hint)) is not None), None)
    if found is None:
        return None
    shipped = _shipped()
    row = shipped.models.get(found["model"])
    rule = (
        {k: getattr(row, k) for k in RULE_FIELDS}
        if row is not None
        else shipped.providers.get(found["provider"])
    )
    if rule is None:
        raise PriceError(
            f"genai-prices prices {model!r} ({found['provider']}), but how "
            f"{found['provider']} caches prompts is not in the table: pass a table with "
            "its row (--prices FILE)"
        )
    writes: dict[int, float] = {}
    ttl = tuple(rule["ttl"])
    if rule["cache"] == "breakpoint":
        known = {**(row.cache_write if row is not None else {}), **found["cache_write"]}
        ttl = tuple(t for t in ttl if t in known)
        if not ttl:
            raise PriceError(f"genai-prices has no cache-write price for {model!r}")
        writes = {t: known[t] for t in ttl}
    read = found["cache_read"]
    return Price(
        model=found["model"],
        provider=found["provider"],
        input=found["input"],
        output=found["output"],
        # No cached price: the provider does not cache this model, reads cost as input.
        cache_read=found["input"] if read is None else read,
        cache=rule["cache"],
        ttl=ttl,
        min_prefix=rule["min_prefix"],
        cache_write=writes,
        step=rule.get("step", 1),
        source=found["source"],
    )


def price_for(model: str, prices: Mapping[str, Price] | None = None) -> Price:
    """The prices of ``model``, from ``prices`` when given, else from genai-prices where it
    is installed (the ``prices`` extra) and the shipped table otherwise.

    A name matches exactly, or extends a known name only by a date (``-20251001``,
    ``-2025-08-07``, ``@20251001``) or a provider prefix (``openai/gpt-5``): any other suffix
    is another model (``gpt-5-nano`` is not ``gpt-5``, at a twenty-fifth of its price), so
    it is a [`PriceError`][], never the nearest row. Either way the answer is a [`Price`][]
    with the shipped table's caching rule; the two sources agree on every shipped model
    (``source`` and ``date`` say where the figures came from and take no part in equality).
    """
    if not isinstance(model, str) or not model:
        raise PriceError(f"a model name must be non-empty text, got {model!r}")
    if prices is not None:
        found = _lookup(prices, model)
        table = prices
    else:
        found = _from_genai(model) or _lookup(_shipped().models, model)
        table = _shipped().models
    if found is not None:
        return found
    raise PriceError(
        f"no price for model {model!r}: unknown model (a name extends a known one only by a "
        f"date or a provider prefix); known: {', '.join(sorted(table))} "
        "(pass your own table with --prices FILE)"
    )
