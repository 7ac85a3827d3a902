"""One way for every integration to get its [`Compactor`][compaction.trigger.Compactor]."""

from __future__ import annotations

from typing import Any

from ..pipeline import CompactionPipeline
from ..trigger import Compactor, default_pipeline

__all__ = ["build_compactor", "default_pipeline"]


def build_compactor(
    compactor: Compactor | None,
    window: int | None,
    pipeline: CompactionPipeline | None,
    options: dict[str, Any],
) -> Compactor:
    """``compactor`` itself, or one built from ``window``, ``pipeline`` and ``options``."""
    if compactor is not None:
        if window is not None or pipeline is not None or options:
            raise TypeError("pass either compactor= or window= (with its options), not both")
        if not isinstance(compactor, Compactor):
            raise TypeError(f"compactor must be a Compactor, got {type(compactor).__name__}")
        return compactor
    if window is None:
        raise TypeError("pass window= (the model's context window in tokens) or compactor=")
    return Compactor(pipeline or default_pipeline(), window, **options)
