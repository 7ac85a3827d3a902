"""Summarisers: what the [`Summary`][compaction.strategies.summary.Summary] strategy calls.

A summariser is any callable ``(transcript: str, instructions: str) -> str`` (or an async one).
[`ExtractiveSummarizer`][] needs no model and is the default; [`OpenAIChatSummarizer`][]
talks to any OpenAI-compatible chat-completions endpoint (the ``openai`` extra);
[`model_summarizer`][] wraps a framework's own model (LangChain, pydantic-ai, the Agents
SDK, LiteLLM). Those are only imported when asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .base import (
    INSTRUCTIONS,
    SECTIONS,
    Summarizer,
    SummarizerError,
    is_async_summarizer,
    render_transcript,
    summarizer_name,
)
from .extractive import ExtractiveSummarizer

if TYPE_CHECKING:
    from .frameworks import (
        AgentsSummarizer,
        LangChainSummarizer,
        LiteLLMSummarizer,
        PydanticAISummarizer,
        model_summarizer,
    )
    from .openai_chat import OpenAIChatSummarizer

__all__ = [
    "INSTRUCTIONS",
    "SECTIONS",
    "AgentsSummarizer",
    "ExtractiveSummarizer",
    "LangChainSummarizer",
    "LiteLLMSummarizer",
    "OpenAIChatSummarizer",
    "PydanticAISummarizer",
    "Summarizer",
    "SummarizerError",
    "is_async_summarizer",
    "model_summarizer",
    "render_transcript",
    "summarizer_name",
]

#: Summarisers loaded only when asked for: each needs an optional extra (a framework).
_LAZY = {
    "OpenAIChatSummarizer": ".openai_chat",
    "AgentsSummarizer": ".frameworks",
    "LangChainSummarizer": ".frameworks",
    "LiteLLMSummarizer": ".frameworks",
    "PydanticAISummarizer": ".frameworks",
    "model_summarizer": ".frameworks",
}


def __getattr__(name: str) -> Any:
    # The OpenAI client module loads only when it is asked for (it is an optional extra).
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
