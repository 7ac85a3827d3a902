"""One way for every integration to get its [`Compactor`][compaction.trigger.Compactor]."""

from __future__ import annotations

from typing import Any

from ..pipeline import CompactionPipeline
from ..trigger import Compactor, default_pipeline

__all__ = ["MISSING_WINDOW", "MissingWindowError", "build_compactor", "default_pipeline"]

#: What every drop-in says when it has no context window: the same words everywhere.
MISSING_WINDOW = (
    "compaction needs the model's context window (in tokens): pass window=..., or use a "
    "model whose window the framework knows (a LangChain profile's max_input_tokens, a "
    "pydantic-ai profile's context_window, LiteLLM's model map)"
)


class MissingWindowError(ValueError):
    """A drop-in was given no context window and could not learn the model's.

    One type and one message in every drop-in (LangChain, pydantic-ai, the Agents SDK,
    LiteLLM), raised rather than running the agent uncompacted: an agent would otherwise
    learn it only when the provider refuses an over-window request. A ``ValueError``, so code
    that caught that before still does.
    """

    def __init__(self, model: object = None) -> None:
        where = f" (model {model!r})" if isinstance(model, str) else ""
        super().__init__(MISSING_WINDOW + where)


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
        raise MissingWindowError()
    return Compactor(pipeline or default_pipeline(), window, **options)
