"""Per-conversation state for the framework drop-ins, bounded.

A framework builds one middleware or capability per agent, and one agent serves many
conversations (LangGraph threads, pydantic-ai conversations). A compactor follows one
conversation (its hysteresis and usage anchor describe that conversation only), so each drop-in
keeps one per conversation key, here, least recently used first out so a long-lived server does
not grow without bound.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Conversations"]

T = TypeVar("T")


class Conversations(Generic[T]):
    """At most ``limit`` values by conversation key; thread-safe."""

    def __init__(self, limit: int, name: str = "max_conversations") -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"{name} must be a positive int, got {limit!r}")
        self.limit = limit
        self._items: OrderedDict[Any, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> T | None:
        """The value for ``key``, or None (does not count as a use)."""
        return self._items.get(key)

    def get_or_create(self, key: Any, create: Callable[[], T]) -> T:
        """The value for ``key``, made with ``create()`` the first time."""
        with self._lock:
            value = self._items.get(key)
            if value is None:
                value = self._items[key] = create()
                while len(self._items) > self.limit:
                    self._items.popitem(last=False)
            self._items.move_to_end(key)
            return value

    def __len__(self) -> int:
        return len(self._items)
