"""The built-in strategies, one module each.

Nothing is imported here up front on purpose: each strategy module stands alone (strategies
never import each other), and ``compaction`` and the registry load a strategy only when it is
used. Import a strategy from its module (``compaction.strategies.tool_results``) or from
``compaction`` itself (``compaction.ToolResults``).

``SlidingWindowStrategy`` is seed 000's name for
[`SlidingWindow`][compaction.strategies.sliding_window.SlidingWindow] (the same class), loaded
on first use like the rest.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["SlidingWindowStrategy"]

# Seed-spec names for the built-in classes: alias -> (module, class).
_ALIASES = {"SlidingWindowStrategy": ("compaction.strategies.sliding_window", "SlidingWindow")}


def __getattr__(name: str) -> Any:
    if name not in _ALIASES:
        raise AttributeError(f"module 'compaction.strategies' has no attribute {name!r}")
    module, attr = _ALIASES[name]
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value
