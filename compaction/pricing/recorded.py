"""What a transcript recorded about each model call: when it was made, and what was billed.

Readers keep the provider's own fields in ``Message.meta`` (Claude Code: the line's
``timestamp`` and ``message.usage``; mini-swe-agent: ``extra.response`` with ``created`` and
``usage``; the other log readers: ``meta["recorded"]``, one shape for every format, see
[`compaction.formats.logs.recorded`][]). A priced replay needs the time (the prompt cache
expires between calls far apart) and the output size, and the bill check needs the recorded
cache reads and writes; this module reads them from the assistant message a call produced,
and answers None for what a log does not record, so the caller falls back to a stated
cadence or a local count.

What a log does record is checked, never changed silently: a token count that is not a whole
number from 0 to a billion (NaN, a negative, a boolean, a float, 10^40), a time that is not
a time or lies outside 2000-2100, raise [`RecordedUsageError`][] naming the message and the
field, since a bill computed from it would be wrong without a sign.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Final

import attrs

from ..messages import Message

__all__ = [
    "MAX_TOKENS",
    "RecordedUsage",
    "RecordedUsageError",
    "call_time",
    "check_order",
    "recorded_model",
    "recorded_usage",
]

#: No model call reads or writes more tokens than this; a bigger count is not a count.
MAX_TOKENS: Final = 1_000_000_000
#: Recorded times must fall in 2000-01-01 .. 2100-01-01 (Unix seconds).
_EARLIEST: Final = 946_684_800.0
_LATEST: Final = 4_102_444_800.0


class RecordedUsageError(ValueError):
    """A log's record of a call that cannot be true (the message names the message and the
    field; ``message_id`` is the message's id, to find its line): refused rather than read as
    0 or as no time."""

    def __init__(self, text: str, message: Message | None = None) -> None:
        super().__init__(text)
        self.message_id = message.id if message is not None else None


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
    #: The cache writes per TTL in seconds, when the log splits them (Claude Code's
    #: ``cache_creation``): ``((300, n5m), (3600, n1h))``; empty when it does not.
    writes: tuple[tuple[int, int], ...] = ()

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


def _where(message: Message) -> str:
    return f"message {message.id!r}" if message.id else f"a {message.role} message"


def _count(message: Message, usage: Mapping[str, Any], key: str, field: str) -> int:
    value = usage.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise RecordedUsageError(
            f"{_where(message)}: field '{field}.{key}' is {_show(value)}, not a token count "
            f"(a whole number from 0 to {MAX_TOKENS:,})",
            message,
        )
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def call_time(message: Message) -> float | None:
    """When the call that produced ``message`` was answered (Unix seconds), if recorded; a
    recorded time that is not one raises [`RecordedUsageError`][]."""
    source = _source(message)
    stamp = source.get("timestamp")
    field = "timestamp"
    if stamp is None:
        stamp = _response(source).get("created")
        field = "extra.response.created"
    if stamp is None:
        return None
    value: float | None = None
    if isinstance(stamp, str):
        try:
            parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            if parsed.tzinfo is None:  # a log's times are UTC unless they say otherwise
                parsed = parsed.replace(tzinfo=timezone.utc)
            value = parsed.timestamp()
        except (ValueError, OverflowError):
            value = None
    elif isinstance(stamp, int | float) and not isinstance(stamp, bool):
        value = float(stamp)
    if value is None or not (math.isfinite(value) and _EARLIEST <= value <= _LATEST):
        raise RecordedUsageError(
            f"{_where(message)}: field '{field}' is {_show(stamp)}, not a time between "
            "2000 and 2100",
            message,
        )
    return value


def check_order(message: Message, at: float, previous: float | None) -> None:
    """Refuse a call recorded as answered before the call ahead of it: the cache model
    would read entries written in its future."""
    if previous is not None and at < previous:
        raise RecordedUsageError(
            f"{_where(message)}: its recorded time is {previous - at:,.0f} s before the "
            "previous call's; a log's calls must be in time order",
            message,
        )


def recorded_usage(message: Message) -> RecordedUsage | None:
    """The bill the provider reported for the call that produced ``message``, if recorded;
    a count that cannot be one raises [`RecordedUsageError`][]."""
    source = _source(message)
    usage = source.get("usage")
    if isinstance(usage, Mapping) and "uncached" in usage:  # meta["recorded"], any log
        return RecordedUsage(
            cache_read=_count(message, usage, "cache_read", "recorded.usage"),
            cache_write=_count(message, usage, "cache_write", "recorded.usage"),
            uncached=_count(message, usage, "uncached", "recorded.usage"),
            output=_count(message, usage, "output", "recorded.usage"),
        )
    if isinstance(usage, Mapping) and "input_tokens" in usage:  # Anthropic
        creation = usage.get("cache_creation")
        ttl = None
        writes: tuple[tuple[int, int], ...] = ()
        write = _count(message, usage, "cache_creation_input_tokens", "usage")
        if isinstance(creation, Mapping):
            short = _count(message, creation, "ephemeral_5m_input_tokens", "usage.cache_creation")
            long = _count(message, creation, "ephemeral_1h_input_tokens", "usage.cache_creation")
            ttl = 3600 if long else 300 if short else None
            if short + long:
                writes = ((300, short), (3600, long))
                if short + long != write:  # the split is the detail: trust it, say so
                    raise RecordedUsageError(
                        f"{_where(message)}: field 'usage.cache_creation' splits "
                        f"{short + long:,} written tokens, but "
                        f"'usage.cache_creation_input_tokens' says {write:,}",
                        message,
                    )
        return RecordedUsage(
            cache_read=_count(message, usage, "cache_read_input_tokens", "usage"),
            cache_write=write,
            uncached=_count(message, usage, "input_tokens", "usage"),
            output=_count(message, usage, "output_tokens", "usage"),
            ttl=ttl,
            writes=writes,
        )
    usage = _response(source).get("usage")
    if isinstance(usage, Mapping) and "prompt_tokens" in usage:  # OpenAI-compatible
        details = usage.get("prompt_tokens_details")
        where = "extra.response.usage"
        cached = (
            _count(message, details, "cached_tokens", f"{where}.prompt_tokens_details")
            if isinstance(details, Mapping)
            else 0
        )
        prompt = _count(message, usage, "prompt_tokens", where)
        return RecordedUsage(
            cache_read=min(cached, prompt),
            cache_write=0,
            uncached=max(prompt - cached, 0),
            output=_count(message, usage, "completion_tokens", where),
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
