"""OpenAI and Anthropic conversations saved as JSON or JSONL: read strictly.

These files are requests a user hands us, so we do not guess: a tool result whose call is
missing, a call left unanswered, or a message we cannot read is a [`FormatError`][] naming
the file, the message (and the line, for JSONL), and what was expected. Agent logs, which
record what happened rather than what to send, are repaired instead (see ``repair.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..adapters import AdapterError
from ..adapters.anthropic import from_anthropic
from ..adapters.openai import from_openai
from ..messages import Message
from ..validate import problems
from .detect import Document, chat_flavor, is_message
from .errors import FormatError
from .loaded import Loaded
from .registry import Reader
from .repair import rekeyed

__all__ = ["READERS", "read_anthropic", "read_openai"]


def _unpack(doc: Document, path: str | Path) -> tuple[list[Any], list[int] | None, str, dict]:
    """(raw messages, their line numbers for JSONL, container, top-level extras)."""
    if doc.records is not None:
        return [r for _, r in doc.records], [no for no, _ in doc.records], "jsonl", {}
    value = doc.value
    if isinstance(value, list):
        return value, None, "list", {}
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        extra = {k: v for k, v in value.items() if k != "messages"}
        return value["messages"], None, "object", extra
    if isinstance(value, Mapping):  # a single message on its own
        # ... which in a *.jsonl file is a one-line JSONL file, and is written back as one.
        container = "jsonl" if str(path).endswith(".jsonl") else "list"
        return [value], [1] if container == "jsonl" else None, container, {}
    raise FormatError(path, "expected a list of messages or an object with a 'messages' list")


def _adapter_error(path: str | Path, exc: AdapterError, lines: Sequence[int] | None) -> FormatError:
    line = lines[exc.index] if lines is not None and exc.index is not None else None
    return FormatError(path, str(exc), line=line)


def _check(
    path: str | Path,
    messages: Sequence[Message],
    origin: Sequence[int],
    lines: Sequence[int] | None,
) -> None:
    found = problems(messages)
    if not found:
        return
    first = found[0]
    raw_index = origin[first.index]
    line = lines[raw_index] if lines is not None and raw_index >= 0 else None
    where = "the system prompt" if raw_index < 0 else f"message {raw_index}"
    raise FormatError(
        path,
        f"{where}: {first.reason}; expected every tool result right after the assistant "
        "message that called it, and every call answered (is a tool result's call missing?). "
        "A log of an agent run rather than a request can be read as one with --format "
        "openai-log",
        line=line,
    )


def read_openai(doc: Document, path: str | Path) -> Loaded:
    raw, lines, container, extra = _unpack(doc, path)
    try:
        messages = from_openai(raw)
    except AdapterError as exc:
        raise _adapter_error(path, exc, lines) from None
    _check(path, messages, range(len(messages)), lines)
    return Loaded(
        messages,
        "openai",
        str(path),
        repairs=rekeyed(messages),
        container=container,
        extra=extra,
    )


def read_anthropic(doc: Document, path: str | Path) -> Loaded:
    raw, lines, container, extra = _unpack(doc, path)
    system = extra.pop("system", None)
    try:
        messages = from_anthropic(raw, system=system)
    except AdapterError as exc:
        raise _adapter_error(path, exc, lines) from None
    if problems(messages):
        # Map each neutral message back to the raw message it came from, for the error.
        origin: list[int] = [-1] if system is not None else []
        for index, one in enumerate(raw):
            origin += [index] * len(from_anthropic([one]))
        _check(path, messages, origin, lines)
    return Loaded(
        messages,
        "anthropic",
        str(path),
        repairs=rekeyed(messages),
        container=container,
        extra=extra,
    )


def _flavor(doc: Document) -> str | None:
    """``openai``/``anthropic`` for a chat file, None for anything else."""
    if doc.records is not None:
        first = doc.records[0][1]
        return chat_flavor([r for _, r in doc.records]) if is_message(first) else None
    value = doc.value
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            return chat_flavor(value["messages"], has_system_key="system" in value)
        return "openai" if is_message(value) else None
    if isinstance(value, list) and all(is_message(m) for m in value):
        return chat_flavor(value)
    return None


READERS = (
    Reader(
        name="openai",
        title="OpenAI chat messages (a request, or a conversation saved as one)",
        shape='a JSON list of messages with "role", one message per JSONL line, or '
        '{"messages": [...]}',
        sniff=lambda doc, path: _flavor(doc) == "openai",
        read=read_openai,
        output="openai",
        log=False,
        priority=90,
    ),
    Reader(
        name="anthropic",
        title="Anthropic Messages API request",
        shape='{"system": ..., "messages": [...]} with tool_use/tool_result blocks',
        sniff=lambda doc, path: _flavor(doc) == "anthropic",
        read=read_anthropic,
        output="anthropic",
        log=False,
        priority=91,
    ),
)
