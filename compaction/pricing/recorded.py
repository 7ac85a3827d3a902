"""What a transcript recorded about each model call: when it was made, and what was billed.

Readers keep the provider's own fields in ``Message.meta`` (Claude Code: the line's
``timestamp`` and ``message.usage``; mini-swe-agent: ``extra.response`` with ``created`` and
``usage``; the other log readers: ``meta["recorded"]``, one shape for every format, see
[`compaction.formats.logs.recorded`][]). A priced replay needs the time (the prompt cache
expires between calls far apart) and the output size, and the bill check needs the recorded
cache reads and writes; this module reads them from the assistant message a call produced,
and answers None for what a log does not record, so the caller falls back to a stated
cadence or a local count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from ..messages import Message

__all__ = ["RecordedUsage", "call_time", "recorded_model", "recorded_usage"]


@attrs.frozen(slots=True)
class RecordedUsage:
    """The provider's bill for one call: input split into cache reads, cache writes and
    uncached tokens, and output tokens; ``ttl`` the cache lifetime the writes used, when the
    log says (Claude Code's ``ephemeral_1h_input_tokens``)."""

    cache_read: int
    cache_write: int
    uncached: int
    output: int
    ttl: int | None = None

    @property
    def input_tokens(self) -> int:
        return self.cache_read + self.cache_write + self.uncached


def _source(message: Message) -> Mapping[str, Any]:
    for key in ("recorded", "claude_code", "mini_swe_agent"):
        value = message.meta.get(key)
        if isinstance(value, Mapping):
            return value
    return {}


def _response(source: Mapping[str, Any]) -> Mapping[str, Any]:
    extra = source.get("extra")
    response = extra.get("response") if isinstance(extra, Mapping) else None
    return response if isinstance(response, Mapping) else {}


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def call_time(message: Message) -> float | None:
    """When the call that produced ``message`` was answered (Unix seconds), if recorded."""
    source = _source(message)
    stamp = source.get("timestamp")
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    created = _response(source).get("created")
    if isinstance(created, int | float) and not isinstance(created, bool):
        value = float(created)
        return value if math.isfinite(value) else None
    return None


def recorded_usage(message: Message) -> RecordedUsage | None:
    """The bill the provider reported for the call that produced ``message``, if recorded."""
    source = _source(message)
    usage = source.get("usage")
    if isinstance(usage, Mapping) and "uncached" in usage:  # meta["recorded"], any log
        return RecordedUsage(
            cache_read=_count(usage.get("cache_read")),
            cache_write=_count(usage.get("cache_write")),
            uncached=_count(usage.get("uncached")),
            output=_count(usage.get("output")),
        )
    if isinstance(usage, Mapping) and "input_tokens" in usage:  # Anthropic
        creation = usage.get("cache_creation")
        ttl = None
        if isinstance(creation, Mapping):
            if _count(creation.get("ephemeral_1h_input_tokens")):
                ttl = 3600
            elif _count(creation.get("ephemeral_5m_input_tokens")):
                ttl = 300
        return RecordedUsage(
            cache_read=_count(usage.get("cache_read_input_tokens")),
            cache_write=_count(usage.get("cache_creation_input_tokens")),
            uncached=_count(usage.get("input_tokens")),
            output=_count(usage.get("output_tokens")),
            ttl=ttl,
        )
    usage = _response(source).get("usage")
    if isinstance(usage, Mapping) and "prompt_tokens" in usage:  # OpenAI-compatible
        details = usage.get("prompt_tokens_details")
        cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
        prompt = _count(usage.get("prompt_tokens"))
        return RecordedUsage(
            cache_read=min(cached, prompt),
            cache_write=0,
            uncached=max(prompt - cached, 0),
            output=_count(usage.get("completion_tokens")),
        )
    return None


def recorded_model(messages: Any) -> str | None:
    """The model the log names for its calls (the first assistant message that says), if any."""
    for m in messages:
        if m.role != "assistant":
            continue
        for key in ("recorded", "claude_code"):
            source = m.meta.get(key)
            if isinstance(source, Mapping) and isinstance(source.get("model"), str):
                return str(source["model"])
        response = _response(_source(m))
        if isinstance(response.get("model"), str):
            return str(response["model"])
    return None
