"""Summarisers: what the :class:`~compaction.strategies.summary.Summary` strategy calls.

A summariser is any callable ``(transcript: str, instructions: str) -> str`` (or an async one).
:class:`ExtractiveSummarizer` needs no model and is the default; :class:`OpenAIChatSummarizer`
talks to any OpenAI-compatible chat-completions endpoint (the ``openai`` extra), and is only
imported when asked for.
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
    from .openai_chat import OpenAIChatSummarizer

__all__ = [
    "INSTRUCTIONS",
    "SECTIONS",
    "ExtractiveSummarizer",
    "OpenAIChatSummarizer",
    "Summarizer",
    "SummarizerError",
    "is_async_summarizer",
    "render_transcript",
    "summarizer_name",
]


def __getattr__(name: str) -> Any:
    # The OpenAI client module loads only when it is asked for (it is an optional extra).
    if name == "OpenAIChatSummarizer":
        value = import_module(".openai_chat", __name__).OpenAIChatSummarizer
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
