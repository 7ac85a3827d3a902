"""What leaves the process about a failure: bounded strings, exception text only when asked.

Logs and traces are shipped to places with wider access and longer retention than the
conversation itself. An exception's text is written by whoever raised it: a summariser or a
proxy that echoes its input puts the whole transcript (keys, personal data) into the message,
and a label value can be anything the caller passed. So every string we hand to a log line or a
span is cut to ``LIMIT`` characters, and an exception is described by its type alone unless
the application opted in to its text ([`compaction.events.record_error_text`][] for logs,
``otel.instrument(record_exception_text=True)`` for spans).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["LIMIT", "bound", "describe_error", "error_text_recorded", "set_error_text"]

#: The most characters of any one string written to a log line or a span (about 1 kB): enough
#: to read an error, too little to carry a transcript.
LIMIT = 1024

_lock = threading.Lock()
_record_text = False


def bound(text: str, limit: int = LIMIT) -> str:
    """``text`` when it is at most ``limit`` characters, otherwise its head and tail around a
    marker saying how much was cut (the tail is kept because a traceback or a server message
    often ends with the part that says what went wrong)."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    marker = f" ...[{cut:,} chars cut]... "
    keep = max(limit - len(marker), 0)
    head = keep - keep // 4
    tail = keep - head
    return text[:head] + marker + (text[len(text) - tail :] if tail else "")


def error_text_recorded() -> bool:
    """Whether log lines carry an exception's text (see ``set_error_text``)."""
    return _record_text


def set_error_text(enabled: bool) -> None:
    """Let log lines carry exception text (bounded), or describe exceptions by type alone."""
    global _record_text
    with _lock:
        _record_text = bool(enabled)


def describe_error(error: Any, *, text: bool | None = None) -> str:
    """A short, bounded description of ``error`` for a log line or a span.

    An exception is its qualified type name, followed by its (bounded) text only when ``text``
    is True (None: the process-wide setting of ``set_error_text``). Anything else is a
    value someone already turned into text (``repr(exc)`` from older call sites, a reason
    string): it is only bounded.
    """
    if isinstance(error, BaseException):
        name = type(error).__qualname__
        module = type(error).__module__
        if module not in ("builtins", "__main__"):
            name = f"{module}.{name}"
        if not (_record_text if text is None else text):
            return name
        return bound(f"{name}: {error}")
    return bound(error if isinstance(error, str) else repr(error))
