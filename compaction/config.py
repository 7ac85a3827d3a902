"""One config file for a ladder and the trigger that runs it.

A team that has measured what suits its runs (``compaction check``, ``compaction tune``) wants
those settings in one file that every entry point loads the same way: the commands
(``--config``), [`Compactor.from_config`][compaction.trigger.Compactor.from_config], the
drop-ins (pass the compactor it builds) and a pytest check. This module only reads and checks
the file; the trigger builds itself from it (the trigger imports this module, never the other
way round). The file is TOML::

    [trigger]                 # when to compact, and down to what (shares of the window)
    window = 200000           # optional: the model's context window in tokens
    compact_at = 0.7
    compact_to = 0.4
    min_saving = 0.05
    strict_floor = false

    [trigger.cache_aware]     # optional: compact when it pays for the prompt cache
    model = "claude-sonnet-4-5"   # a row of the price table
    late = 0.7
    early = 0.5

    [ladder]                  # optional: the default ladder when absent
    use = [{ strategy = "tool_results", keep_steps = 2 }, "sliding_window", "summary"]
    run = "fit"

    [check]                   # optional: the floors `compaction check` holds a run to
    min_identifiers = 0.9

A file holding only ``use``/``run``/``strict`` at its top level is a ladder alone (the shape
[`load_ladder`][compaction.registry.load_ladder] has always read), so older files keep
working. Every key is checked when the file is read, and an error names the file and the key:
a typo in a threshold must not silently leave the default in force.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from .registry import ConfigError, ladder_from_config, read_toml

__all__ = ["Config", "ConfigError", "build_compactor", "config_from_dict", "load_config"]

_TABLES: Final = ("trigger", "ladder", "check")
_LADDER_KEYS: Final = frozenset({"use", "run", "strict"})
_TRIGGER_KEYS: Final = frozenset(
    {"window", "compact_at", "compact_to", "min_saving", "strict_floor", "cache_aware"}
)
_CACHE_AWARE_KEYS: Final = frozenset({"model", "ttl", "late", "early", "min_free", "floor"})


def _number(where: str, value: Any, low: float, high: float, *, closed_low: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if not (low <= value if closed_low else low < value) or value > high:
        bracket = "[" if closed_low else "("
        raise ConfigError(f"{where}: expected a number in {bracket}{low}, {high}], got {value!r}")
    return float(value)


def _table(where: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a table, got {type(value).__name__}")
    return value


def _unknown(where: str, table: Mapping[str, Any], known: frozenset[str]) -> None:
    bad = sorted(set(table) - known)
    if bad:
        raise ConfigError(f"{where}: unknown key(s) {bad}; expected some of {sorted(known)}")


@attrs.frozen
class Config:
    """A ladder and its trigger, as one config file states them.

    ``ladder`` is a [`ladder_from_config`][compaction.registry.ladder_from_config] table, or
    None for the default ladder; ``window`` the model's context window (None: the caller
    gives it); ``compact_at``/``compact_to``/``min_saving``/``strict_floor`` the
    [`Compactor`][compaction.trigger.Compactor]'s settings; ``cache_aware`` the
    [`CacheAware`][compaction.pricing.cache_policy.CacheAware] policy's settings (with
    ``model``), or None for the fixed mark; ``check`` the raw ``[check]`` table (read by
    ``compaction.check``); ``source`` where it was read from.
    """

    ladder: Mapping[str, Any] | None = None
    window: int | None = None
    compact_at: float = 0.7
    compact_to: float = 0.4
    min_saving: float = 0.05
    strict_floor: bool = False
    cache_aware: Mapping[str, Any] | None = None
    check: Mapping[str, Any] = attrs.field(factory=dict)
    source: str = "config"

    def pipeline(self, counter: Any = None) -> Any:
        """The ladder this config names (the default ladder when it names none)."""
        if self.ladder is None:
            from .ladder import default_pipeline

            return default_pipeline(counter=counter, strict_floor=self.strict_floor)
        try:
            return ladder_from_config(self.ladder, counter=counter)
        except ConfigError as exc:
            raise ConfigError(f"{self.source}: [ladder] {exc}") from None

    def options(self, window: int | None = None, *, counter: Any = None) -> dict[str, Any]:
        """The keywords every drop-in takes (``pipeline``, ``window``, ``compact_at``,
        ``compact_to``, ``min_saving``): ``CompactionMiddleware(**config.options())``, and
        likewise for pydantic-ai, the Agents SDK and LiteLLM. ``window`` overrides the file's
        (left out when neither gives one, so the drop-in's own rule applies). The cache-aware
        policy needs a clock and a price per conversation, which only a
        [`Compactor`][compaction.trigger.Compactor] has: a file that sets one is refused here
        rather than silently run without it."""
        if self.cache_aware is not None:
            raise ConfigError(
                f"{self.source}: [trigger.cache_aware] is for Compactor.from_config and the "
                "commands; the drop-ins take the marks, the minimum saving and the ladder"
            )
        window = self.window if window is None else window
        options: dict[str, Any] = {
            "pipeline": self.pipeline(counter),
            "compact_at": self.compact_at,
            "compact_to": self.compact_to,
            "min_saving": self.min_saving,
        }
        if window is not None:
            options["window"] = window
        return options

    def policy(self, price: Any = None) -> Any:
        """The cache-aware policy this config sets (None for the fixed mark); ``price``
        prices it when the file names no model."""
        if self.cache_aware is None:
            return None
        from .pricing.cache_policy import CacheAware
        from .pricing.prices import PriceError, price_for

        options = dict(self.cache_aware)
        model = options.pop("model", None)
        if model is not None:
            try:
                price = price_for(model)
            except PriceError as exc:
                raise ConfigError(f"{self.source}: [trigger.cache_aware] model: {exc}") from None
        if price is None:
            raise ConfigError(
                f"{self.source}: [trigger.cache_aware] needs a model (a row of the price "
                "table), or a price from the caller"
            )
        try:
            return CacheAware(price, **options)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{self.source}: [trigger.cache_aware] {exc}") from None

    def to_toml(self) -> str:
        """This config as the TOML text [`load_config`][] reads back to an equal config."""
        lines = ["[trigger]"]
        if self.window is not None:
            lines.append(f"window = {self.window}")
        lines += [
            f"compact_at = {self.compact_at!r}",
            f"compact_to = {self.compact_to!r}",
            f"min_saving = {self.min_saving!r}",
            f"strict_floor = {'true' if self.strict_floor else 'false'}",
        ]
        if self.cache_aware is not None:
            lines += ["", "[trigger.cache_aware]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in self.cache_aware.items()]
        if self.ladder is not None:
            lines += ["", "[ladder]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in self.ladder.items()]
        if self.check:
            lines += ["", "[check]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in self.check.items()]
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise ConfigError(f"cannot write {type(value).__name__} {value!r} to TOML")


def config_from_dict(data: Mapping[str, Any], *, source: str = "config") -> Config:
    """A [`Config`][] from the table a TOML file holds; [`ConfigError`][] names ``source``
    and the key of the first problem."""
    data = _table(source, data)
    if _LADDER_KEYS & set(data) and not set(data) & set(_TABLES):
        # The older shape: a file that is a ladder and nothing else.
        _unknown(source, data, _LADDER_KEYS)
        ladder_from_config(data)  # checked now, not when first used
        return Config(ladder=dict(data), source=source)
    _unknown(source, data, frozenset(_TABLES))
    trigger = dict(_table(f"{source}: [trigger]", data.get("trigger", {})))
    _unknown(f"{source}: [trigger]", trigger, _TRIGGER_KEYS)
    where = f"{source}: [trigger]"
    window = trigger.get("window")
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, int) or window <= 0
    ):
        raise ConfigError(f"{where} window: expected a positive number of tokens, got {window!r}")
    compact_at = _number(f"{where} compact_at", trigger.get("compact_at", 0.7), 0, 1)
    compact_to = _number(f"{where} compact_to", trigger.get("compact_to", 0.4), 0, 1)
    if not compact_to < compact_at:
        raise ConfigError(
            f"{where}: compact_to ({compact_to}) must be below compact_at ({compact_at})"
        )
    min_saving = _number(
        f"{where} min_saving", trigger.get("min_saving", 0.05), 0, 0.999999, closed_low=True
    )
    strict_floor = trigger.get("strict_floor", False)
    if not isinstance(strict_floor, bool):
        raise ConfigError(f"{where} strict_floor: expected true or false, got {strict_floor!r}")
    cache_aware = trigger.get("cache_aware")
    if cache_aware is not None:
        cache_aware = dict(_table(f"{where}.cache_aware", cache_aware))
        _unknown(f"{where}.cache_aware", cache_aware, _CACHE_AWARE_KEYS)
        model = cache_aware.get("model")
        if model is not None and not isinstance(model, str):
            raise ConfigError(f"{where}.cache_aware model: expected a model name, got {model!r}")
    ladder = data.get("ladder")
    if ladder is not None:
        ladder = dict(_table(f"{source}: [ladder]", ladder))
        try:
            ladder_from_config(ladder)
        except ConfigError as exc:
            raise ConfigError(f"{source}: [ladder] {exc}") from None
    check = dict(_table(f"{source}: [check]", data.get("check", {})))
    config = Config(
        ladder=ladder,
        window=window,
        compact_at=compact_at,
        compact_to=compact_to,
        min_saving=min_saving,
        strict_floor=strict_floor,
        cache_aware=cache_aware,
        check=check,
        source=source,
    )
    if cache_aware is not None and cache_aware.get("model") is not None:
        config.policy()  # the model and the policy's numbers checked now
    return config


def load_config(path: str | Path) -> Config:
    """The [`Config`][] in the TOML file ``path``; [`ConfigError`][] names the file and key."""
    return config_from_dict(read_toml(path), source=str(path))


def build_compactor(
    cls: Any,
    config: Config | str | Path,
    window: int | None,
    counter: Any,
    tools: Any,
    labels: Mapping[str, Any] | None,
    price: Any,
) -> Any:
    """``cls`` (the [`Compactor`][compaction.trigger.Compactor]) built from ``config`` (a
    [`Config`][] or a file's path): what ``Compactor.from_config`` does."""
    cfg = config if isinstance(config, Config) else load_config(config)
    window = cfg.window if window is None else window
    if window is None:
        raise ConfigError(
            f"{cfg.source}: no window: set [trigger] window, or pass window= "
            "(the model's context window in tokens)"
        )
    return cls(
        cfg.pipeline(counter),
        window,
        cfg.compact_at,
        cfg.compact_to,
        counter=counter,
        tools=tools,
        labels=labels,
        min_saving=cfg.min_saving,
        strict_floor=cfg.strict_floor,
        policy=cfg.policy(price),
    )
