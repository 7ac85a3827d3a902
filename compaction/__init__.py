"""compaction: keep long-running LLM agents inside their context window.

A [`CompactionPipeline`][] stacks [`Strategy`][] layers, cheapest first; each is asked
only while the conversation is over target, its answer is taken only when it is smaller, and
once under target nothing below runs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from . import _moved, events
from .budget import Budget
from .memory.transcript import parse
from .messages import Message, ToolCall, assistant, system, tool, user
from .pipeline import CompactionPipeline
from .registry import ConfigError, UnknownStrategyError, ladder_from_config, load_ladder, registry
from .result import Applied, CompactionResult, Declined
from .strategy import Capabilities, Strategy
from .tokens import (
    ApproximateCounter,
    EncodingUnavailableError,
    TiktokenCounter,
    TokenCounter,
)
from .validate import InvalidConversationError, is_valid, problems, validate

_moved.install()

__version__ = "0.1.0"

# Strategies and integrations load on first use, so `import compaction` stays cheap and the
# core never imports what a user did not ask for. (`replay` the function is not exported here:
# it would be shadowed by the `compaction.replay` module; import it from there.)
_LAZY = {
    "Dedupe": "compaction.strategies.dedupe",
    "ToolResults": "compaction.strategies.tool_results",
    "SlidingWindow": "compaction.strategies.sliding_window",
    "SlidingWindowStrategy": "compaction.strategies.sliding_window",
    "Truncate": "compaction.strategies.truncate",
    "Summary": "compaction.strategies.summary",
    "Fit": "compaction.strategies.fit",
    "default_pipeline": "compaction.ladder",
    "ExtractiveSummarizer": "compaction.summarizers",
    "OpenAIChatSummarizer": "compaction.summarizers",
    "Compactor": "compaction.trigger",
    "ReplayRecord": "compaction.replay",
    "ReplayTotals": "compaction.replay",
    "TurnLoop": "compaction.loop",
    "chain": "compaction.loop",
    "SessionStore": "compaction.sessions",
    "Session": "compaction.sessions",
    "load": "compaction.formats",
    "FormatError": "compaction.formats",
    "from_openai": "compaction.adapters.openai",
    "to_openai": "compaction.adapters.openai",
    "from_anthropic": "compaction.adapters.anthropic",
    "to_anthropic": "compaction.adapters.anthropic",
}

if TYPE_CHECKING:
    from .adapters.anthropic import from_anthropic, to_anthropic
    from .adapters.openai import from_openai, to_openai
    from .formats import FormatError, load
    from .ladder import default_pipeline
    from .loop import TurnLoop, chain
    from .replay import ReplayRecord, ReplayTotals
    from .sessions import Session, SessionStore
    from .strategies.dedupe import Dedupe
    from .strategies.fit import Fit
    from .strategies.sliding_window import SlidingWindow
    from .strategies.sliding_window import SlidingWindow as SlidingWindowStrategy
    from .strategies.summary import Summary
    from .strategies.tool_results import ToolResults
    from .strategies.truncate import Truncate
    from .summarizers import ExtractiveSummarizer, OpenAIChatSummarizer
    from .trigger import Compactor


# Seed-spec names for our classes (seed 000 calls the sliding window SlidingWindowStrategy).
_ALIASES = {"SlidingWindowStrategy": "SlidingWindow"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'compaction' has no attribute {name!r}")
    value = getattr(import_module(module), _ALIASES.get(name, name))
    globals()[name] = value
    return value


__all__ = [
    "Applied",
    "Compactor",
    "Dedupe",
    "ExtractiveSummarizer",
    "Fit",
    "FormatError",
    "OpenAIChatSummarizer",
    "ReplayRecord",
    "ReplayTotals",
    "Session",
    "SessionStore",
    "TurnLoop",
    "chain",
    "default_pipeline",
    "from_anthropic",
    "from_openai",
    "load",
    "to_anthropic",
    "to_openai",
    "ApproximateCounter",
    "Budget",
    "Capabilities",
    "CompactionPipeline",
    "CompactionResult",
    "ConfigError",
    "Declined",
    "EncodingUnavailableError",
    "InvalidConversationError",
    "Message",
    "SlidingWindow",
    "SlidingWindowStrategy",
    "Strategy",
    "Summary",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCall",
    "ToolResults",
    "Truncate",
    "UnknownStrategyError",
    "__version__",
    "assistant",
    "events",
    "is_valid",
    "ladder_from_config",
    "load_ladder",
    "parse",
    "problems",
    "registry",
    "system",
    "tool",
    "user",
    "validate",
]
