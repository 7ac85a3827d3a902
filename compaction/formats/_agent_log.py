"""Helpers the agent-log readers share: records, text, arguments, usage, timestamps.

Each reader keeps what the log recorded about a model call under its own ``meta`` key
(``meta["gemini_cli"]``...), and what it recorded about each model call (time, model,
usage) in ``meta["recorded"]`` ([`compaction.formats.logs.recorded`][]), the one shape the
priced replay and the bill check read for every log.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from ..messages import Message
from .detect import Document
from .loaded import Loaded
from .logs import as_log
from .validate_loaded import finish

__all__ = [
    "args_text",
    "as_text",
    "count",
    "iso_time",
    "record_source",
    "records",
    "result_text",
    "text_id",
    "done",
]

#: How many records a sniffer looks at: enough to pass a log's header lines, cheap on any file.
SNIFF_RECORDS: Final = 8


def records(doc: Document) -> tuple[tuple[int, Any], ...]:
    """``doc``'s records as ``(line, value)``: JSONL lines, a JSON list's items or one object."""
    if doc.records is not None:
        return doc.records
    if isinstance(doc.value, list):
        return tuple(enumerate(doc.value, 1))
    return ((1, doc.value),)


def head(doc: Document) -> list[Any]:
    """The first few records of ``doc`` (what a sniffer looks at)."""
    return [r for _, r in records(doc)[:SNIFF_RECORDS]]


def as_text(value: Any) -> str:
    """Text of a content value: a string, or the ``text`` of a list (or one) of parts."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        text = value.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(value, list):
        return "\n".join(t for t in (as_text(p) for p in value) if t)
    return ""


def text_id(value: Any) -> str | None:
    """An id as text (None for anything but a non-empty string)."""
    return value if isinstance(value, str) and value else None


def args_text(value: Any) -> str:
    """A call's arguments as JSON text (a mapping is dumped; text is kept as written)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    return json.dumps(value, ensure_ascii=False)


def result_text(value: Any) -> str:
    """A tool's output as text: text as is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def count(value: Any) -> int:
    """A token figure as a non-negative int (0 for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def iso_time(value: Any) -> str | None:
    """A timestamp as ISO 8601 text: ISO text is kept, epoch seconds or milliseconds converted."""
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    seconds = value / 1000 if value > 1e11 else value  # milliseconds since 1973 are > 1e11
    try:
        return datetime.fromtimestamp(seconds, timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def record_source(record: Mapping[str, Any], id_key: str, **more: Any) -> dict[str, Any]:
    """Where a message came from, for its ``meta``: the record's id under ``id_key``, its
    timestamp as ISO text when it has a readable one, and ``more`` without its ``None``s."""
    out: dict[str, Any] = {id_key: text_id(record.get("id"))}
    stamp = iso_time(record.get("timestamp"))
    if stamp is not None:
        out["timestamp"] = stamp
    out.update({k: v for k, v in more.items() if v is not None})
    return out


def done(
    messages: list[Message],
    fmt: str,
    path: str | Path,
    *,
    skipped: Mapping[str, int] | None = None,
    container: str = "jsonl",
    output: str = "openai",
) -> Loaded:
    """The reader's messages read as a log (split calls merged, mid-run system messages made
    boundaries, unanswered calls repaired: [`compaction.formats.logs.as_log`][]) and checked.

    A log that yields nothing readable is refused by the registry, naming what it held.
    """
    fixed, repairs = as_log(messages)
    return finish(
        Loaded(
            fixed,
            fmt,
            str(path),
            repairs=repairs,
            skipped=dict(skipped or {}),
            container=container,
            output=output,
        )
    )
