"""Strategies by key, so ladders can be composed from config as well as in code.

The built-in strategies are known by key without importing them up front; third-party packages
add theirs through the ``compaction.strategies`` entry-point group::

    [project.entry-points."compaction.strategies"]
    my_strategy = "my_package.module:MyStrategy"

A ladder from a dict (or the same shape in TOML)::

    {"use": [{"strategy": "tool_results", "keep_steps": 2},
             {"strategy": "sliding_window"}],
     "run": {"strategy": "summary"}}
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from .checks import check_bool, check_options
from .pipeline import CompactionPipeline, resolve_keys_with
from .strategy import Strategy

__all__ = [
    "ENTRY_POINT_GROUP",
    "ConfigError",
    "Registry",
    "UnknownStrategyError",
    "ladder_from_config",
    "load_ladder",
    "read_toml",
    "registry",
]

ENTRY_POINT_GROUP = "compaction.strategies"

_BUILTINS: dict[str, str] = {
    "dedupe": "compaction.strategies.dedupe:Dedupe",
    "tool_results": "compaction.strategies.tool_results:ToolResults",
    "sliding_window": "compaction.strategies.sliding_window:SlidingWindow",
    "truncate": "compaction.strategies.truncate:Truncate",
    "summary": "compaction.strategies.summary:Summary",
    "fit": "compaction.strategies.fit:Fit",
}


class UnknownStrategyError(KeyError):
    """No strategy is registered under the key. The message lists the valid keys."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ConfigError(ValueError):
    """A ladder config or a strategy's options are wrong; the message names the key."""


def _import(ref: str) -> type[Strategy]:
    module, _, attr = ref.partition(":")
    obj = getattr(importlib.import_module(module), attr)
    if not (inspect.isclass(obj) and issubclass(obj, Strategy)):
        raise TypeError(f"{ref} is not a Strategy subclass")
    return obj


class Registry:
    """Keys to strategy classes: built-ins, entry points, and whatever you register."""

    def __init__(self, *, builtins: Mapping[str, str] | None = None, entry_points: bool = True):
        self._refs: dict[str, str] = dict(_BUILTINS if builtins is None else builtins)
        self._classes: dict[str, type[Strategy]] = {}
        self._entry_points = entry_points
        self._discovered = False

    def _discover(self) -> None:
        if self._discovered or not self._entry_points:
            return
        self._discovered = True
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name not in self._refs and ep.name not in self._classes:
                self._refs[ep.name] = ep.value

    def register(self, key: str, strategy: type[Strategy], *, replace: bool = False) -> None:
        """Register ``strategy`` under ``key``. A key already taken is refused unless
        ``replace=True``, so a typo cannot silently shadow a built-in."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"a strategy key must be a non-empty str, got {key!r}")
        if not (inspect.isclass(strategy) and issubclass(strategy, Strategy)):
            raise TypeError(f"only Strategy subclasses can be registered, got {strategy!r}")
        self._discover()
        if not replace and (key in self._classes or key in self._refs):
            raise ValueError(
                f"a strategy is already registered under {key!r}; pass replace=True to replace it"
            )
        self._refs.pop(key, None)
        self._classes[key] = strategy

    def unregister(self, key: str) -> None:
        """Forget ``key`` (mostly for tests)."""
        self._classes.pop(key, None)
        self._refs.pop(key, None)

    def keys(self) -> list[str]:
        """Every registered key, sorted."""
        self._discover()
        return sorted({*self._refs, *self._classes})

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def get(self, key: str) -> type[Strategy]:
        """The class registered under ``key``."""
        if not isinstance(key, str):
            raise UnknownStrategyError(
                f"a strategy key is a name (one of {', '.join(self.keys()) or '(none)'}), "
                f"got {type(key).__name__} {key!r}"
            )
        self._discover()
        if key in self._classes:
            return self._classes[key]
        if key in self._refs:
            cls = _import(self._refs[key])
            self._classes[key] = cls
            return cls
        raise UnknownStrategyError(
            f"unknown strategy {key!r}; registered: {', '.join(self.keys()) or '(none)'}"
        )

    def create(self, key: str, /, **options: Any) -> Strategy:
        """Build the strategy under ``key`` with ``options``; a bad option names the key and
        the options it takes."""
        cls = self.get(key)
        try:
            inspect.signature(cls).bind(**options)
        except TypeError:
            params = [
                p.name
                for p in inspect.signature(cls).parameters.values()
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            bad = sorted(set(options) - set(params))
            raise ConfigError(
                f"strategy {key!r}: unknown option(s) {', '.join(map(repr, bad)) or '(none)'}; "
                f"it takes {', '.join(params) or 'no options'}"
            ) from None
        try:
            # By type first: a config's "false" must not reach a constructor that does bool().
            check_options(cls, options)
            return cls(**options)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"strategy {key!r}: {exc}") from exc


registry = Registry()
# ``pipeline.use("key")`` resolves keys through the default registry. The registry imports the
# pipeline (to build ladders from config), so it hands its resolver over rather than the
# pipeline importing it back.
resolve_keys_with(registry.create)


def _layer(entry: Any, where: str, reg: Registry) -> Strategy:
    if isinstance(entry, str):
        entry = {"strategy": entry}
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: expected a table with a 'strategy' key, got {entry!r}")
    options = dict(entry)
    key = options.pop("strategy", None)
    if key is None:
        raise ConfigError(f"{where}: missing 'strategy' (one of {', '.join(reg.keys())})")
    if not isinstance(key, str):
        raise ConfigError(
            f"{where}: 'strategy' must be a strategy name (one of {', '.join(reg.keys())}), "
            f"got {type(key).__name__} {key!r}"
        )
    try:
        return reg.create(key, **options)
    except UnknownStrategyError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def ladder_from_config(
    config: Mapping[str, Any], *, reg: Registry | None = None, counter: Any = None
) -> Any:
    """A [`CompactionPipeline`][compaction.pipeline.CompactionPipeline] from a plain dict.

    ``use`` is the list of layers (each a key, or a table with ``strategy`` and its options);
    ``run`` the optional terminal. Every key and option is checked before anything is built.
    ``counter`` is the pipeline's counter (default: its own).
    """
    reg = reg or registry
    if not isinstance(config, Mapping):
        raise ConfigError(f"a ladder config must be a table, got {type(config).__name__}")
    unknown = sorted(set(config) - {"use", "run", "strict"})
    if unknown:
        hint = (
            " ('strategy' goes inside an entry: {'use': [{'strategy': 'truncate', ...}]})"
            if "strategy" in unknown
            else ""
        )
        raise ConfigError(
            f"unknown ladder setting(s) {unknown}; expected 'use', 'run', 'strict'{hint}"
        )
    layers = config.get("use", [])
    if not isinstance(layers, list):
        raise ConfigError("'use' must be a list of strategies")
    try:
        strict = check_bool("'strict'", config.get("strict", False))
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    pipeline = CompactionPipeline(strict=strict, counter=counter)
    for i, entry in enumerate(layers):
        pipeline.use(_layer(entry, f"use[{i}]", reg))
    if config.get("run") is not None:
        pipeline.run(_layer(config["run"], "run", reg))
    return pipeline


#: A config file larger than this is refused: a ladder, a trigger and floors take a few
#: hundred bytes, and a device or a runaway file must not be read whole.
MAX_TOML_BYTES: Final = 1 << 20


def read_toml(path: str | Path) -> dict[str, Any]:
    """The table in the TOML file ``path``: a regular file (never a device, a FIFO or a
    symlink; an ``InputFileError``, an ``OSError``, says so) of at most
    ``MAX_TOML_BYTES``; a [`ConfigError`][] naming the file for text that is not TOML."""
    from ._reading import TomlError, parse_toml, read_regular

    path = Path(path)
    try:
        data = read_regular(path, MAX_TOML_BYTES, "config file")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    try:
        return parse_toml(data)
    except TomlError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def load_ladder(path: str | Path, *, reg: Registry | None = None) -> Any:
    """A pipeline from a TOML file with the shape [`ladder_from_config`][] takes."""
    data = read_toml(path)
    try:
        return ladder_from_config(data, reg=reg)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
