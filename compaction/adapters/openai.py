"""OpenAI chat-completions messages to [`Message`][] and back.

Reading keeps, under ``meta["openai"]``, whatever the neutral message cannot hold: the original
role (``developer``), content given as a list of parts, a ``null`` content, the exact
``tool_calls`` list and any field we do not model. Writing uses those only while the message
still says what it said when read (same text, same calls); a message a strategy rewrote is
written from its new content, so old parts are never resurrected over a placeholder.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..messages import Message, ToolCall
from . import AdapterError
from ._coerce import first_choice, is_model, plain, plain_blocks
from ._parts import is_cut, with_text
from .person import IsPerson, harness_meta, mark_authors
from .rekey import rekey

__all__ = ["META_KEY", "from_openai", "to_openai"]

META_KEY: Final = "openai"

_MODELED: Final = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_ROLES: Final = ("system", "developer", "user", "assistant", "tool")


def parts_text(parts: Sequence[Any]) -> str:
    """The text of a content-parts list: its text parts, one per line."""
    return "\n".join(
        str(part.get("text", ""))
        for part in parts
        if isinstance(part, Mapping) and part.get("type") == "text"
    )


def _call(raw: Any, index: int, position: int) -> ToolCall:
    field = f"tool_calls[{position}]"
    if not isinstance(raw, Mapping):
        raise AdapterError(index, field, f"expected a tool call object, got {type(raw).__name__}")
    function = raw.get("function")
    if not isinstance(function, Mapping):
        raise AdapterError(
            index, field, "expected a function call with 'function': {'name', 'arguments'}"
        )
    call_id, name = raw.get("id"), function.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise AdapterError(index, f"{field}.id", "a tool call needs a non-empty string id")
    if not isinstance(name, str):
        raise AdapterError(index, f"{field}.function.name", "a tool call needs a string name")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str | Mapping):
        raise AdapterError(
            index, f"{field}.function.arguments", "arguments must be JSON text (or an object)"
        )
    return ToolCall(call_id, name, arguments)


def _calls(raw: Any, index: int) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise AdapterError(index, "tool_calls", f"expected a list, got {type(raw).__name__}")
    return tuple(_call(c, index, i) for i, c in enumerate(raw))


def message_from_openai(raw: Any, index: int = 0) -> Message:
    """One OpenAI message (a dict, an SDK message object or a whole ``ChatCompletion``, whose
    first choice is taken) as a [`Message`][] (``index`` is used in errors)."""
    raw = _coerced(raw)
    if not isinstance(raw, Mapping):
        raise AdapterError(index, None, f"expected a message object, got {type(raw).__name__}")
    role = raw.get("role")
    if role not in _ROLES:
        raise AdapterError(
            index, "role", f"unknown role {role!r}; expected one of {', '.join(_ROLES)}"
        )
    record: dict[str, Any] = {"keys": list(raw.keys())}
    if role == "developer":
        # Providers treat developer as the new name for system; we keep the spelling the user
        # sent so the round trip is exact.
        record["role"] = "developer"
        role = "system"
    content = raw.get("content")
    if content is None:
        text = ""
        record["null_content"] = True
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = parts_text(content)
        record["parts"] = copy.deepcopy(content)
        record["parts_text"] = text
    else:
        raise AdapterError(
            index, "content", f"expected text or a list of parts, got {type(content).__name__}"
        )
    calls = _calls(raw.get("tool_calls"), index)
    if "tool_calls" in raw:
        record["tool_calls"] = copy.deepcopy(raw["tool_calls"])
    extra = {k: copy.deepcopy(v) for k, v in raw.items() if k not in _MODELED}
    if extra:
        record["extra"] = extra
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise AdapterError(index, "name", f"expected a string, got {type(name).__name__}")
    tool_call_id = raw.get("tool_call_id")
    if role == "tool" and (not isinstance(tool_call_id, str) or not tool_call_id):
        raise AdapterError(index, "tool_call_id", "a tool message must name the call it answers")
    if role != "tool" and tool_call_id is not None:
        raise AdapterError(index, "tool_call_id", f"not allowed on a {role!r} message")
    if calls and role != "assistant":
        raise AdapterError(index, "tool_calls", f"not allowed on a {role!r} message")
    return Message(
        role,
        text,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        name=name,
        meta={META_KEY: record, **harness_meta(role, text)},
    )


def _coerced(raw: Any) -> Any:
    # SDK objects (ChatCompletion, ChatCompletionMessage, tool call objects inside a dict) are
    # read as the dicts they stand for, without the null fields model_dump() would add.
    raw = plain(first_choice(raw))
    if not isinstance(raw, Mapping):
        return raw
    calls, content = raw.get("tool_calls"), raw.get("content")
    if (isinstance(calls, list) and any(is_model(c) for c in calls)) or plain_blocks(
        content
    ) is not content:
        raw = dict(raw)
        if isinstance(calls, list):
            raw["tool_calls"] = [plain(c) for c in calls]
        raw["content"] = plain_blocks(content)
    return raw


def from_openai(
    messages: Iterable[Any], *, is_person: IsPerson | None = None
) -> tuple[Message, ...]:
    """OpenAI chat-completions ``messages`` as [`Message`][] tuples.

    Each item may be a message dict, an SDK object (``ChatCompletionMessage``, or a
    ``ChatCompletion``, read as its first choice's message) or any pydantic model of that
    shape; a single ``ChatCompletion`` is accepted in place of the list. ``developer`` becomes
    ``system`` (the original role is remembered); content parts are joined into the text
    (text parts only) and kept whole in ``meta["openai"]``. A user message a harness or
    a tool wrote (command output, a format error; see [`compaction.adapters.person`][]) or
    that ``is_person`` rejects is marked synthetic: it is sent, but never taken for the
    person's words. Raises [`AdapterError`][] naming the message and field it cannot read.
    """
    if is_model(messages) and hasattr(messages, "choices"):
        messages = [messages]
    if isinstance(messages, str | bytes | Mapping) or is_model(messages):
        raise AdapterError(None, None, "expected a list of message objects")
    # A call id reused by a later message is given a fresh one (meta["rekeyed"] says so).
    read = [message_from_openai(m, i) for i, m in enumerate(messages)]
    return rekey(list(mark_authors(read, is_person)) if is_person is not None else read)


def _record(message: Message) -> Mapping[str, Any]:
    record = message.meta.get(META_KEY)
    return record if isinstance(record, Mapping) else {}


def _fresh_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]


def _is_text_part(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "text"


def _cut_parts(parts: Any, message: Message) -> list[Any] | None:
    """The parts of a message whose text was cut: its images kept beside the cut text."""
    if not is_cut(message) or not isinstance(parts, list):
        return None
    return with_text(
        copy.deepcopy(parts), message.content, _is_text_part, lambda t: {"type": "text", "text": t}
    )


def message_to_openai(message: Message) -> dict[str, Any]:
    """One [`Message`][] as an OpenAI message dict."""
    record = _record(message)
    role = message.role
    if role == "system" and record.get("role") == "developer":
        role = "developer"
    out: dict[str, Any] = {"role": role}

    parts = record.get("parts")
    content: Any
    kept = _cut_parts(parts, message) if parts is not None else None
    if parts is not None and message.content == record.get("parts_text"):
        content = copy.deepcopy(parts)
    elif kept is not None:
        content = kept
    elif message.content == "" and (
        record.get("null_content") or (message.tool_calls and not record)
    ):
        content = None
    else:
        content = message.content
    if not record:
        content = _from_anthropic_blocks(message, content)
    out["content"] = content

    original_calls = record.get("tool_calls", _MISSING)
    if original_calls is not _MISSING and _safe_calls(original_calls) == message.tool_calls:
        out["tool_calls"] = copy.deepcopy(original_calls)
    elif message.tool_calls:
        out["tool_calls"] = _fresh_calls(message.tool_calls)

    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    # OpenAI's tool messages carry no name; only write one back when the input had it.
    if message.name is not None and (role != "tool" or "name" in record.get("keys", ())):
        out["name"] = message.name
    for key, value in record.get("extra", {}).items():
        out.setdefault(key, copy.deepcopy(value))

    keys = record.get("keys")
    if keys:
        # Same key order as the input, so a file written back diffs cleanly against it.
        if "content" not in keys and out.get("content") in (None, "") and "content" in out:
            del out["content"]
        ordered = {k: out[k] for k in keys if k in out}
        ordered.update((k, v) for k, v in out.items() if k not in ordered)
        out = ordered
    return out


_MISSING: Final = object()

# Anthropic blocks an OpenAI message holds another way (or that OpenAI does not take back).
_CARRIED: Final = frozenset({"text", "tool_use", "tool_result", "thinking", "redacted_thinking"})


def _omitted(block: Any) -> str:
    kind = block.get("type") if isinstance(block, Mapping) else None
    return f"[{kind or 'unknown'} block omitted: no OpenAI form]"


def _image_part(block: Mapping[str, Any]) -> dict[str, Any] | None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        return None
    if source.get("type") == "base64" and source.get("media_type") and source.get("data"):
        url = f"data:{source['media_type']};base64,{source['data']}"
    elif source.get("type") == "url" and isinstance(source.get("url"), str):
        url = source["url"]
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _from_anthropic_blocks(message: Message, content: Any) -> Any:
    """The content of a message read from Anthropic blocks, for OpenAI.

    Text is already in ``content``; images in a user turn become ``image_url`` parts, and any
    other block OpenAI cannot take (documents, server tool blocks, images in a tool result)
    leaves a visible note instead of vanishing. A rewritten message is left as it is.
    """
    anthropic = message.meta.get("anthropic")
    if not isinstance(anthropic, Mapping) or message.content != anthropic.get("text"):
        return content
    if message.role == "tool":
        block = anthropic.get("block")
        inner = block.get("content") if isinstance(block, Mapping) else None
        notes = [
            _omitted(b)
            for b in (inner if isinstance(inner, list) else ())
            if not (isinstance(b, Mapping) and b.get("type") == "text")
        ]
        return "\n".join([message.content, *notes]) if notes else content
    blocks = anthropic.get("blocks")
    if not isinstance(blocks, list):
        return content
    if message.role == "user":
        parts: list[dict[str, Any]] = []
        for b in blocks:
            if isinstance(b, Mapping) and b.get("type") == "text":
                parts.append({"type": "text", "text": str(b.get("text", ""))})
            elif isinstance(b, Mapping) and b.get("type") == "image" and _image_part(b):
                parts.append(_image_part(b))  # type: ignore[arg-type]
            else:
                parts.append({"type": "text", "text": _omitted(b)})
        if all(p["type"] == "text" for p in parts) and len(parts) <= 1:
            return "\n".join(p["text"] for p in parts) if parts else content
        return parts
    notes = [
        _omitted(b) for b in blocks if not (isinstance(b, Mapping) and b.get("type") in _CARRIED)
    ]
    if not notes:
        return content
    return "\n".join([t for t in [message.content] if t] + notes)


def _safe_calls(raw: Any) -> tuple[ToolCall, ...] | None:
    try:
        return _calls(raw, 0)
    except (AdapterError, TypeError, ValueError):
        return None


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """[`Message`][] objects as OpenAI chat-completions message dicts.

    Exact inverse of [`from_openai`][] for messages nothing rewrote; a rewritten message is
    written from its current content and calls. ``meta["compaction"]`` is not written out:
    providers reject fields they do not know.
    """
    return [message_to_openai(m) for m in messages]
