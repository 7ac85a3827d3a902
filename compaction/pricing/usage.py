"""Reading what a provider reported a request cost: its input tokens, from any usage shape.

Kept apart from the trigger because it knows provider formats (OpenAI Chat and Responses,
Anthropic, as objects or dicts) and nothing of compaction: the trigger only needs one int to
anchor its estimate on, and adapters and benchmarks can read usage the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["usage_tokens"]


#: No request is bigger than this; a bigger count is not a count.
MAX_TOKENS = 1_000_000_000


def _int_or_none(value: Any, name: str) -> int | None:
    # Absent is absent; anything else must be a count: a NaN, a float, a bool or text read
    # as "absent" would change the figure silently (a cache count dropped to 0).
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"usage {name} must be a whole number of tokens, got {value!r:.40}")
    if value < 0:
        raise ValueError(f"usage {name} must not be negative, got {value}")
    if value > MAX_TOKENS:
        raise ValueError(f"usage {name} of {value:.3g} tokens is not a request's size")
    return value


def _field(source: Any, name: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def usage_tokens(usage: Any) -> int:
    """The input tokens a provider reported for one request.

    Accepts an int; an OpenAI usage (``prompt_tokens``); an Anthropic usage (``input_tokens``
    plus ``cache_read_input_tokens`` and ``cache_creation_input_tokens``, which Anthropic
    reports apart from ``input_tokens``); an OpenAI Responses usage (``input_tokens``, cached
    tokens already included); as objects or dicts; or a whole response carrying ``usage``.
    """
    if isinstance(usage, bool):
        raise TypeError("usage must be an int or a provider usage object, got bool")
    if isinstance(usage, int):
        return _int_or_none(usage, "tokens") or 0
    inner = _field(usage, "usage")
    if inner is not None and inner is not usage:
        return usage_tokens(inner)
    input_tokens = _int_or_none(_field(usage, "input_tokens"), "input_tokens")
    if input_tokens is not None:
        cached = _int_or_none(_field(usage, "cache_read_input_tokens"), "cache reads") or 0
        created = _int_or_none(_field(usage, "cache_creation_input_tokens"), "cache writes") or 0
        return input_tokens + cached + created
    prompt_tokens = _int_or_none(_field(usage, "prompt_tokens"), "prompt_tokens")
    if prompt_tokens is not None:
        return prompt_tokens
    raise TypeError(
        "usage must be an int or carry 'prompt_tokens' (OpenAI) or 'input_tokens' "
        f"(Anthropic, OpenAI Responses); got {type(usage).__name__} {usage!r}"
    )
