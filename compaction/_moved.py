"""Module paths from before the package was laid out by concern, kept importable.

``compaction.ledger`` became ``compaction.memory.ledger``, ``compaction.prices`` became
``compaction.pricing.prices``, and so on. Code and pickles written against the old paths keep
working: importing an old path imports the new module under both names (one module object, so
``isinstance`` and monkeypatching agree) and warns once with a ``DeprecationWarning``
naming the new path. A finder, not stub files, so the package root holds only the core.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Final

__all__ = ["MOVED", "install"]

MOVED: Final = {
    "compaction.ledger": "compaction.memory.ledger",
    "compaction.facts": "compaction.memory.facts",
    "compaction.shell": "compaction.memory.shell",
    "compaction.words": "compaction.memory.words",
    "compaction.note": "compaction.memory.note",
    "compaction.trace": "compaction.memory.trace",
    "compaction.transcript": "compaction.memory.transcript",
    "compaction.prices": "compaction.pricing.prices",
    "compaction.cost": "compaction.pricing.cost",
    "compaction.earnings": "compaction.pricing.earnings",
    "compaction.recorded": "compaction.pricing.recorded",
    "compaction.bill_check": "compaction.pricing.bill_check",
    "compaction.cache_policy": "compaction.pricing.cache_policy",
    "compaction.usage": "compaction.pricing.usage",
    "compaction.media_parts": "compaction.media.parts",
    "compaction.models": "compaction.loop.models",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None  # a placeholder; exec_module puts the real module in its place

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.new}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        # The import system reads the module back from sys.modules after this call, so the
        # old name ends up bound to the one real module (its own __spec__ untouched).
        sys.modules[module.__name__] = importlib.import_module(self.new)


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (``import compaction`` does this)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
