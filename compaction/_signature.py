"""Which keywords a strategy's ``rewrite`` accepts, read from its signature.

The strategy base hands a layer the run's counter and hard limit only when its ``rewrite``
asks for them, so a strategy written against the one-argument contract keeps working
unchanged. Kept apart from ``strategy.py`` so that module holds the rules of a layer and
nothing about introspection.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["takes", "takes_counter", "takes_limit"]


def takes(method: Callable[..., Any], name: str, *, default: bool = True) -> bool:
    """Whether ``method`` accepts the keyword ``name`` (by name, or through ``**kwargs``);
    ``default`` when its signature cannot be read (a C callable)."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return default
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == name and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in params
    )


def takes_counter(method: Callable[..., Any]) -> bool:
    """Whether ``method`` accepts ``counter=`` (by name, or through ``**kwargs``)."""
    return takes(method, "counter")


def takes_limit(method: Callable[..., Any]) -> bool:
    """Whether ``method`` accepts ``limit=``: only a strategy that asks for the hard limit gets
    it, so every ``rewrite`` written before there were two limits keeps working unchanged."""
    return takes(method, "limit", default=False)
