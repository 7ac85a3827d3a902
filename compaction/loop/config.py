"""The turn loop's settings: [`LoopConfig`][], from arguments, a dict or a TOML file."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from ..registry import ConfigError, read_toml

__all__ = ["LoopConfig"]


def _positive_int_or_none(name: str) -> Callable[[Any, Any, Any], None]:
    def check(instance: Any, attribute: Any, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")

    return check


def _check_max_steps(instance: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"max_steps must be a positive int, got {value!r}")


def _check_share(instance: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{attribute.name} must be a number in (0, 1], got {value!r}")


_LOOP_KEYS: Final = ("max_steps", "history_limit", "max_message_chars", "system", "name")
_COMPACTION_KEYS: Final = ("window", "compact_at", "compact_to", "use", "run", "strict")


@attrs.frozen(slots=True, kw_only=True)
class LoopConfig:
    """The loop's settings (see the module docstring); every field is optional.

    - ``max_steps``: model calls per run at most (default 10).
    - ``history_limit``: the newest history messages used per run (None: all). Tool pairs are
      never split, so a limit that would cut a call from its results keeps fewer.
    - ``max_message_chars``: history messages (not system) longer than this are cut to it,
      marker included, with [`Truncate`][compaction.strategies.truncate.Truncate].
    - ``system``: a system prompt put first in every request (never stored in the history).
    - ``name``: the agent's name, recorded on the context changes it makes.
    - ``model_options``: passed to the model on every call (``temperature``, ``model`` ...).
    - ``window``, ``compact_at``, ``compact_to``, ``ladder``: compaction before every call
      (none without a window); ``ladder`` is a
      [`ladder_from_config`][compaction.registry.ladder_from_config] table (default:
      ``tool_results`` then ``sliding_window``).
    """

    max_steps: int = attrs.field(default=10, validator=_check_max_steps)
    history_limit: int | None = attrs.field(
        default=None, validator=_positive_int_or_none("history_limit")
    )
    max_message_chars: int | None = attrs.field(
        default=None, validator=_positive_int_or_none("max_message_chars")
    )
    system: str | None = None
    name: str = "agent"
    model_options: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    window: int | None = attrs.field(default=None, validator=_positive_int_or_none("window"))
    compact_at: float = attrs.field(default=0.7, validator=_check_share)
    compact_to: float = attrs.field(default=0.4, validator=_check_share)
    ladder: Mapping[str, Any] | None = None

    def evolve(self, **changes: Any) -> LoopConfig:
        """A copy with ``changes`` (``None`` values are ignored: "not given")."""
        return attrs.evolve(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "config") -> LoopConfig:
        """Settings from a table shaped like the TOML file::

            [loop]        max_steps, history_limit, max_message_chars, system, name
            [model]       any model option (temperature = 0.2, model = "...")
            [compaction]  window, compact_at, compact_to, use = [...], run = "...", strict

        Unknown tables and keys are errors naming them (a typo must not be ignored).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a table, got {type(data).__name__}")
        unknown = sorted(set(data) - {"loop", "model", "compaction"})
        if unknown:
            raise ConfigError(
                f"{source}: unknown table(s) {unknown}; expected 'loop', 'model', 'compaction'"
            )
        tables = {}
        for table, allowed in (("loop", _LOOP_KEYS), ("model", None), ("compaction", None)):
            value = data.get(table, {})
            if not isinstance(value, Mapping):
                raise ConfigError(f"{source}: [{table}] must be a table, got {value!r}")
            if allowed is not None:
                bad = sorted(set(value) - set(allowed))
                if bad:
                    raise ConfigError(
                        f"{source}: unknown key(s) {bad} in [{table}]; expected {list(allowed)}"
                    )
            tables[table] = dict(value)
        comp = tables["compaction"]
        bad = sorted(set(comp) - set(_COMPACTION_KEYS))
        if bad:
            raise ConfigError(
                f"{source}: unknown key(s) {bad} in [compaction]; expected {list(_COMPACTION_KEYS)}"
            )
        ladder = {k: comp.pop(k) for k in ("use", "run", "strict") if k in comp}
        try:
            return cls(
                **tables["loop"],
                model_options=tables["model"],
                **comp,
                ladder=ladder or None,
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: {exc}") from None

    @classmethod
    def from_toml(cls, path: str | Path) -> LoopConfig:
        """Settings from a TOML file (the shape [`from_dict`][] documents)."""
        data = read_toml(path)
        return cls.from_dict(data, source=str(path))
