"""The shared context a loop's tools read and change, and the record of every change."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any, Final

import attrs

__all__ = ["MISSING", "ContextChange"]


class _Missing:
    """The value of a context key that did not exist (before) or no longer exists (after)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


@attrs.frozen(slots=True)
class ContextChange:
    """One change to the shared context: ``key`` went from ``old`` to ``new``
    ([`MISSING`][] for a key created or removed), made by ``agent`` through ``source``
    (a tool's name, ``"override"`` for a setting given to the loop, ``"metadata"`` for what a
    chained message carried in)."""

    key: str
    old: Any
    new: Any
    agent: str
    source: str


def _diff(
    before: Mapping[str, Any], after: Mapping[str, Any], agent: str, source: str
) -> list[ContextChange]:
    changes = []
    for key in after:
        old = before.get(key, MISSING)
        if old is MISSING or old != after[key]:
            changes.append(ContextChange(key, old, copy.deepcopy(after[key]), agent, source))
    for key in before:
        if key not in after:
            changes.append(ContextChange(key, copy.deepcopy(before[key]), MISSING, agent, source))
    return changes


def _apply(context: MutableMapping[str, Any], changes: Iterable[ContextChange]) -> None:
    for change in changes:
        if change.new is MISSING:
            context.pop(change.key, None)
        else:
            context[change.key] = copy.deepcopy(change.new)


def _apply_all(context: MutableMapping[str, Any], changes: Sequence[ContextChange]) -> None:
    """Apply ``changes`` all or nothing: every new value in one ``update`` (one atomic write,
    checked first, for a session's context), then the removals, which cannot fail."""
    values = {c.key: copy.deepcopy(c.new) for c in changes if c.new is not MISSING}
    if values:
        context.update(values)
    for change in changes:
        if change.new is MISSING:
            context.pop(change.key, None)
