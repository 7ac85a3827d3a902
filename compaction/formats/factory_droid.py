"""Factory Droid logs: ``droid exec --output-format stream-json``, and the session store.

**stream-json** is one event per line, ``type`` one of ``system`` (the run's model and tools),
``message`` (``role`` and ``text``), ``tool_call`` (``toolCallId`` or ``id``, ``toolName``,
``parameters``), ``tool_result`` (the same id, ``value``, ``isError``), ``completion``
(``finalText``, the run's ``usage``) and ``error`` (the CLI's own, to the person). Calls are
put on the assistant message they follow (parallel calls stay together) and each result right
after them; the final text becomes the last assistant message unless the run already said it.
A ``<system-reminder>`` Droid puts before the person's words is split off and marked
synthetic. ``completion.usage`` is the whole run's bill, not one call's: it is kept as
``session_usage`` in ``meta``, never passed off as one call's usage.

The **session store** (``~/.factory/sessions/*.jsonl``: ``session_start``, then ``message``
records holding Anthropic ``message.content`` blocks) reads as the Anthropic messages it holds.
Both were taken for a Claude Code log before, and read as nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..adapters import AdapterError
from ..adapters.anthropic import assistant_from_blocks, tool_from_block, user_from_blocks
from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import (
    args_text,
    as_text,
    done,
    head,
    record_source,
    records,
    result_text,
    text_id,
)
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, recorded
from .registry import Reader

__all__ = ["FORMAT", "READERS", "read_factory_droid", "sniff_factory_droid"]

FORMAT: Final = "factory-droid"
SOURCE_KEY: Final = "factory_droid"

_STREAM: Final = frozenset({"system", "message", "tool_call", "tool_result", "completion", "error"})
_REMINDER_END: Final = "</system-reminder>"


def _typed(value: Any) -> str | None:
    """A record's ``type`` when it is text (a list there is no type, nor hashable)."""
    kind = value.get("type") if isinstance(value, Mapping) else None
    return kind if isinstance(kind, str) else None


def _stream_event(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and _typed(value) in _STREAM
        and ("session_id" in value or "sessionId" in value)
        and "uuid" not in value
        and not isinstance(value.get("message"), Mapping)
    )


def _store_record(value: Any) -> bool:
    """A session-store record: its opening ``session_start``, or a ``message`` record (Claude
    Code's records say ``user``/``assistant`` in ``type`` and carry a ``uuid``)."""
    if not isinstance(value, Mapping) or "uuid" in value:
        return False
    message = value.get("message")
    return value.get("type") == "session_start" or (
        value.get("type") == "message" and isinstance(message, Mapping) and "role" in message
    )


#: Record types Droid never writes but the other stream-json printers do (Claude Code's and
#: Cursor's ``user``/``assistant``/``result``, Claude's ``stream_event``, Cursor's
#: ``thinking``): their ``system`` init record has the ``session_id`` a Droid event has.
_OTHER_STREAMS: Final = frozenset({"user", "assistant", "result", "stream_event", "thinking"})


def sniff_factory_droid(doc: Document, path: str | Path = "") -> bool:
    """A session store (opening with ``session_start``), or Droid stream-json events (``type``
    with ``session_id`` and top-level ``text`` or tool fields). A ``system`` record alone
    says nothing (every stream-json printer opens with one), so a stream is Droid's when it
    holds one of Droid's other events and no record type Droid never writes."""
    first = head(doc)
    if any(_store_record(r) for r in first):
        return True
    if any(_typed(r) in _OTHER_STREAMS for r in first):
        return False
    return any(_stream_event(r) and r.get("type") != "system" for r in first)


def _source(record: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    return record_source(record, "id", **more)


def _user(record: Mapping[str, Any], text: str) -> list[Message]:
    """The person's message, with a leading system reminder split off as synthetic."""
    stripped = text.lstrip()
    if stripped.startswith("<system-reminder>") and _REMINDER_END in stripped:
        cut = stripped.index(_REMINDER_END) + len(_REMINDER_END)
        reminder, words = stripped[:cut], stripped[cut:].strip()
        note = Message("user", reminder, meta={SOURCE_KEY: _source(record), SYNTHETIC_KEY: True})
        if not words:
            return [note]
        return [note, Message("user", words, meta={SOURCE_KEY: _source(record)})]
    return [Message("user", text, meta={SOURCE_KEY: _source(record)})]


def _stream(doc: Document, path: str | Path) -> tuple[list[Message], Counter[str]]:
    skipped: Counter[str] = Counter()
    items: list[Any] = []  # Message, or [text, calls, source] of an assistant turn
    results: dict[str, Message] = {}
    owner: dict[str, list[Any]] = {}
    model: str | None = None
    turn: list[Any] | None = None  # the assistant turn calls still join
    for line, record in records(doc):
        kind = record.get("type") if isinstance(record, Mapping) else None
        if kind == "system":
            model = text_id(record.get("model")) or model
            skipped["system"] += 1
        elif kind == "message" and record.get("role") in ("user", "assistant"):
            text = as_text(record.get("text")) or as_text(record.get("content"))
            if record["role"] == "user":
                items.extend(_user(record, text))
                turn = None
            else:
                turn = [text, [], _source(record, model=model)]
                items.append(turn)
        elif kind == "tool_call":
            cid = text_id(record.get("toolCallId")) or text_id(record.get("id"))
            cid = cid or f"droid-{line}"
            if turn is None:
                turn = ["", [], _source(record, model=model)]
                items.append(turn)
            name = text_id(record.get("toolName")) or text_id(record.get("toolId")) or "tool"
            params = record.get("parameters", record.get("input"))
            turn[1].append(ToolCall(cid, name, args_text(params)))
            owner.setdefault(cid, turn)
        elif kind == "tool_result":
            turn = None
            cid = text_id(record.get("toolCallId")) or text_id(record.get("id")) or f"droid-{line}"
            value = record.get("value", record.get("content"))
            text = result_text(value)
            if record.get("isError") is True or record.get("is_error") is True:
                text = f"Error: {text}"
            tool = text_id(record.get("toolName")) or text_id(record.get("toolId"))
            result = Message(
                "tool", text, tool_call_id=cid, name=tool, meta={SOURCE_KEY: _source(record)}
            )
            if cid in owner and cid not in results:
                results[cid] = result
            else:
                items.append(result)
        elif kind == "completion":
            final = as_text(record.get("finalText"))
            last = items[-1] if items else None
            said = isinstance(last, list) and not last[1] and last[0].strip() == final.strip()
            source = _source(record, model=model, session_usage=record.get("usage"))
            if final.strip() and not said:
                items.append([final, [], source])
            elif said and isinstance(last, list):
                last[2].update({k: v for k, v in source.items() if k == "session_usage"})
            turn = None
        else:
            skipped[str(kind)] += 1
    messages: list[Message] = []
    for item in items:
        if isinstance(item, Message):
            messages.append(item)
            continue
        text, calls, source = item
        messages.append(
            Message(
                "assistant",
                text,
                tool_calls=tuple(calls),
                meta={
                    SOURCE_KEY: source,
                    RECORDED_KEY: recorded(
                        timestamp=source.get("timestamp"), model=source.get("model")
                    ),
                },
            )
        )
        messages.extend(results[c.id] for c in calls if c.id in results)
    return messages, skipped


def _store(doc: Document, path: str | Path) -> tuple[list[Message], Counter[str]]:
    skipped: Counter[str] = Counter()
    messages: list[Message] = []
    names: dict[str, str | None] = {}
    for line, record in records(doc):
        message = record.get("message") if isinstance(record, Mapping) else None
        if record.get("type") != "message" or not isinstance(message, Mapping):
            skipped[str(record.get("type"))] += 1
            continue
        role, content = message.get("role"), message.get("content")
        source = _source(record)
        try:
            if role == "assistant":
                m = assistant_from_blocks(
                    content, None, id=text_id(record.get("id")), meta={SOURCE_KEY: source}
                )
                names.update({c.id: c.name for c in m.tool_calls})
                messages.append(m)
            elif role == "user":
                blocks = (
                    [{"type": "text", "text": content}] if isinstance(content, str) else content
                )
                if not isinstance(blocks, list) or not all(isinstance(b, Mapping) for b in blocks):
                    raise FormatError(path, "message.content: expected blocks", line=line)
                rest = []
                for block in blocks:
                    if block.get("type") == "tool_result":
                        name = names.get(str(block.get("tool_use_id")))
                        messages.append(
                            tool_from_block(block, None, name, meta={SOURCE_KEY: source})
                        )
                    else:
                        rest.append(block)
                if rest:
                    text = as_text(rest)
                    messages.extend(_user(record, text) if text else [user_from_blocks(rest)])
            else:
                raise FormatError(
                    path, f"message.role {role!r}: expected user or assistant", line=line
                )
        except AdapterError as exc:
            raise FormatError(path, exc.reason, line=line) from None
    return messages, skipped


def read_factory_droid(doc: Document, path: str | Path) -> Loaded:
    """Read a Droid stream-json log or session store (see the module docstring)."""
    store = any(_store_record(r) for r in head(doc))
    messages, skipped = _store(doc, path) if store else _stream(doc, path)
    return done(messages, FORMAT, path, skipped=skipped, output="anthropic")


READERS = (
    Reader(
        name=FORMAT,
        title="Factory Droid log (droid exec --output-format stream-json, or a session store)",
        shape='one {"type": "system|message|tool_call|tool_result|completion", "session_id", '
        '...} event per line, or {"type": "session_start"} then {"type": "message", '
        '"message": {...}} records',
        sniff=sniff_factory_droid,
        read=read_factory_droid,
        output="anthropic",
        priority=30,
    ),
)
