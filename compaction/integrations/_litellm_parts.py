"""What the LiteLLM hook keeps per conversation, and how it learns a model's window."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..adapters.openai import message_to_openai
from ..adapters.person import IsPerson
from ..trigger import Compactor, CompactorStats
from ._incremental import OpenAIHistory
from ._written import WrittenView, one_each

__all__ = [
    "SYNC_MESSAGE",
    "CompactionSyncWarning",
    "LiteLLMConversation",
    "model_window",
    "rough_tokens",
    "summed_stats",
]


class CompactionSyncWarning(UserWarning):
    """``litellm.completion`` (synchronous) went out uncompacted: LiteLLM gives a callback no
    way to change a synchronous request. Call ``CompactionHook.compact_messages`` on the
    messages you pass, or use ``litellm.acompletion``."""


SYNC_MESSAGE = (
    "CompactionHook cannot compact a synchronous litellm.completion call (LiteLLM runs no hook "
    "that may change a synchronous request): pass messages=hook.compact_messages(model, "
    "messages) to litellm.completion, or call litellm.acompletion. This is said once."
)


def rough_tokens(messages: list[Any]) -> int:
    """About how many tokens ``messages`` take (4 characters each): enough to tell a request
    that needed compacting from one that did not, in one pass and without a tokenizer."""
    chars = 0
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else getattr(m, "content", None)
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(str(part)) for part in content)
        calls = m.get("tool_calls") if isinstance(m, dict) else getattr(m, "tool_calls", None)
        if isinstance(calls, list):
            chars += sum(len(str(call)) for call in calls)
    return chars // 4


def model_window(model: str, provider: Any = None) -> int | None:
    import litellm

    for name, kwargs in ((model, {"custom_llm_provider": provider}), (model, {})):
        try:
            info = litellm.get_model_info(name, **{k: v for k, v in kwargs.items() if v})
        except Exception:  # unknown model: LiteLLM raises
            continue
        window = info.get("max_input_tokens") or info.get("max_tokens")
        if isinstance(window, int) and window > 0:
            return window
    return None


class LiteLLMConversation:
    """One conversation: its compactor and its messages, converted once each."""

    __slots__ = ("compactor", "history", "key", "serial", "written")

    def __init__(
        self, key: str, serial: int, compactor: Compactor, is_person: IsPerson | None
    ) -> None:
        self.key = key
        self.serial = serial
        self.compactor = compactor
        self.history = OpenAIHistory(is_person)
        # The compacted view as written back: a call between compactions writes only the
        # steps appended since (the rest was deep-copied once, when it was first sent).
        self.written = WrittenView(one_each(message_to_openai))


def summed_stats(compactors: Sequence[Compactor], last: Compactor | None) -> CompactorStats:
    """The stats of ``compactors`` summed (``last_*`` and ``anchored`` those of ``last``)."""
    total = CompactorStats()
    for c in compactors:
        for field in ("calls", "compactions", "attempts", "failures", "usage_ignored"):
            setattr(total, field, getattr(total, field) + getattr(c.stats, field))
    if last is not None:
        total.last_estimate, total.last_tokens = last.stats.last_estimate, last.stats.last_tokens
        total.anchored = last.stats.anchored
    return total
