"""LangChain messages to [`Message`][compaction.messages.Message] and back, losslessly.

Reading keeps the whole LangChain message under ``meta["langchain"]`` (as
``langchain_core.messages.message_to_dict`` writes it: ids, content blocks, ``tool_calls``,
``invalid_tool_calls``, ``additional_kwargs``, ``response_metadata``, ``usage_metadata``,
a ``ToolMessage``'s ``status`` and ``artifact``), so the record is plain data a session can
store. The neutral message holds what compaction reasons about: the text (a content-block
list gives its text blocks, as ``BaseMessage.text`` reads them), the tool calls (arguments as
JSON text), the call a ``ToolMessage`` answers, the id.

Writing rebuilds a message nothing rewrote exactly as it was read. A message a strategy
rewrote is the original with its new text (and calls) put in, everything else kept; like
LangChain's own ``ClearToolUsesEdit``, a rewritten tool result loses its ``artifact`` and the
provenance goes into ``response_metadata`` (which no chat model sends to its provider), under
``"compaction"``. A message a strategy wrote (a note, a summary) is built fresh.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    message_to_dict,
    messages_from_dict,
)

from ..adapters import AdapterError
from ..adapters._parts import is_cut, with_text
from ..adapters.person import IsPerson, harness_meta, mark_authors
from ..media.parts import KEY as MEDIA_KEY
from ..media.parts import describe_block, media_meta
from ..memory.transcript import PROVENANCE_KEY, SYNTHETIC_KEY
from ..messages import Message, ToolCall

__all__ = [
    "META_KEY",
    "from_langchain",
    "message_from_langchain",
    "message_to_langchain",
    "to_langchain",
]

META_KEY: Final = "langchain"

# LangChain message types, by what they are to a provider.
_ROLES: Final = {
    "system": "system",
    "human": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "SystemMessageChunk": "system",
}
#: The ChatMessage roles that are the person writing.
_PERSON_ROLES: Final = frozenset({"user", "human"})
_CHAT_ROLES: Final = {
    "system": "system",
    "developer": "system",
    "assistant": "assistant",
    "ai": "assistant",
}


def _arguments(args: Any) -> str:
    # Our form of arguments is JSON text; LangChain keeps a dict. Anything JSON cannot encode
    # is written as its str(): the exact value stays in the record.
    return json.dumps(args, ensure_ascii=False, default=str)


def _parse_arguments(text: str) -> dict[str, Any]:
    # LangChain wants a dict of arguments; a strategy that rewrote them to text that is not a
    # JSON object gets it wrapped, so the call is still well formed.
    try:
        value = json.loads(text)
    except ValueError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": value}


def _calls(message: BaseMessage, index: int) -> tuple[ToolCall, ...]:
    calls = []
    for i, call in enumerate(getattr(message, "tool_calls", None) or ()):
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise AdapterError(
                index, f"tool_calls[{i}].id", "a tool call needs an id to match its result"
            )
        calls.append(ToolCall(call_id, str(call.get("name", "")), _arguments(call.get("args"))))
    return tuple(calls)


def _call_keys(calls: Sequence[ToolCall]) -> list[list[str]]:
    return [[c.id, c.name, c.arguments] for c in calls]


def message_from_langchain(message: BaseMessage, index: int = 0) -> Message:
    """One LangChain message as a [`Message`][] (``index`` is used in errors)."""
    if not isinstance(message, BaseMessage):
        raise AdapterError(
            index, None, f"expected a LangChain message, got {type(message).__name__}"
        )
    kind = message.type
    role = _ROLES.get(kind)
    # Only a HumanMessage, or a ChatMessage whose role is the user's, is the person: a
    # ChatMessage in any other role ("ipython", "observation", "function", "tool") is tool
    # data sent in the user role, never the person's words.
    tool_data = False
    if role is None and kind == "chat":
        chat_role = str(getattr(message, "role", "")).lower()
        role = _CHAT_ROLES.get(chat_role, "user")
        tool_data = role == "user" and chat_role not in _PERSON_ROLES
    if role is None:
        raise AdapterError(
            index,
            "type",
            f"cannot compact a {type(message).__name__} ({kind!r}); expected a system, human, "
            "AI, tool or chat message",
        )
    text = message.text
    calls = _calls(message, index) if role == "assistant" else ()
    tool_call_id = None
    if role == "tool":
        tool_call_id = getattr(message, "tool_call_id", None)
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise AdapterError(
                index, "tool_call_id", "a tool message must name the call it answers"
            )
    record: dict[str, Any] = {
        "message": message_to_dict(message),
        "text": text,
        "calls": _call_keys(calls),
    }
    meta: dict[str, Any] = {META_KEY: record}
    if isinstance(message.content, list):
        # Images and documents cost what the provider bills, not their text (none).
        media = media_meta(text, (describe_block(b) for b in message.content))
        if media is not None:
            meta[MEDIA_KEY] = media
    provenance = message.response_metadata.get(PROVENANCE_KEY)
    if isinstance(provenance, Mapping):
        meta[PROVENANCE_KEY] = dict(provenance)
    if role == "user" and (
        tool_data
        or message.additional_kwargs.get("lc_source") == "summarization"
        or harness_meta(role, text)
    ):
        # SummarizationMiddleware's summary is a HumanMessage the harness wrote, as is
        # command output a harness sends in the user role: never the task anchor, which must
        # stay the request a person made, nor the person's words.
        meta[SYNTHETIC_KEY] = True
    name = message.name if isinstance(message.name, str) else None
    return Message(
        role,
        text,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        name=name,
        meta=meta,
        id=message.id if isinstance(message.id, str) else None,
    )


def from_langchain(
    messages: Iterable[Any], *, is_person: IsPerson | None = None
) -> tuple[Message, ...]:
    """LangChain messages (or anything ``convert_to_messages`` reads: dicts, ``(role, text)``
    tuples) as [`Message`][] tuples.

    Only a ``HumanMessage`` or a ``ChatMessage`` with the role user is the person's words; a
    ``ChatMessage`` in another role ("ipython", "observation"), text a harness wrote (see
    [`compaction.adapters.person`][]) and what ``is_person`` rejects are sent in the user
    role but marked synthetic.

    Raises [`AdapterError`][compaction.adapters.AdapterError] naming the message and field it cannot
    read (a ``FunctionMessage``, a tool message without ``tool_call_id``).
    """
    if isinstance(messages, str | bytes | Mapping | BaseMessage):
        raise AdapterError(None, None, "expected a list of messages")
    items = list(messages)
    if not all(isinstance(m, BaseMessage) for m in items):
        try:
            items = convert_to_messages(items)
        except (ValueError, TypeError, NotImplementedError) as exc:
            raise AdapterError(None, None, f"not LangChain messages: {exc}") from exc
    read = tuple(message_from_langchain(m, i) for i, m in enumerate(items))
    return mark_authors(read, is_person) if is_person is not None else read


def _record(message: Message) -> Mapping[str, Any] | None:
    record = message.meta.get(META_KEY)
    if isinstance(record, Mapping) and isinstance(record.get("message"), Mapping):
        return record
    return None


def _lc_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [
        {"name": c.name, "args": _parse_arguments(c.arguments), "id": c.id, "type": "tool_call"}
        for c in calls
    ]


def _provenance(message: Message, response_metadata: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(response_metadata)
    provenance = message.meta.get(PROVENANCE_KEY)
    if isinstance(provenance, Mapping):
        out[PROVENANCE_KEY] = dict(provenance)
    return out


def _fresh(message: Message) -> BaseMessage:
    common: dict[str, Any] = {"id": message.id}
    provenance = message.meta.get(PROVENANCE_KEY)
    if isinstance(provenance, Mapping):
        common["response_metadata"] = {PROVENANCE_KEY: dict(provenance)}
    if message.role == "tool":
        return ToolMessage(
            message.content,
            tool_call_id=message.tool_call_id or "",
            name=message.name,
            **common,
        )
    if message.name is not None:
        common["name"] = message.name
    if message.role == "system":
        return SystemMessage(message.content, **common)
    if message.role == "user":
        return HumanMessage(message.content, **common)
    return AIMessage(message.content, tool_calls=_lc_calls(message.tool_calls), **common)


def message_to_langchain(message: Message) -> BaseMessage:
    """One [`Message`][] as a LangChain message (see the module docstring)."""
    record = _record(message)
    if record is None:
        return _fresh(message)
    original = messages_from_dict([dict(record["message"])])[0]
    same_calls = _call_keys(message.tool_calls) == list(record.get("calls", ()))
    if message.content == record.get("text") and same_calls:
        return original
    content: Any = message.content
    if is_cut(message) and isinstance(original.content, list):
        # A cut keeps its images and files beside the cut text.
        kept = with_text(
            list(original.content),
            message.content,
            lambda p: isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text"),
            lambda t: {"type": "text", "text": t},
        )
        content = message.content if kept is None else kept
    update: dict[str, Any] = {
        "content": content,
        "response_metadata": _provenance(message, original.response_metadata),
    }
    if isinstance(original, ToolMessage):
        update["artifact"] = None
    if isinstance(original, AIMessage) and not same_calls:
        update["tool_calls"] = _lc_calls(message.tool_calls)
        # Provider-native copies of the calls (OpenAI's raw ``tool_calls``) would send the
        # old calls back out next to the new ones.
        extra = dict(original.additional_kwargs)
        extra.pop("tool_calls", None)
        extra.pop("function_call", None)
        update["additional_kwargs"] = extra
    return original.model_copy(update=update)


def to_langchain(messages: Iterable[Message]) -> list[BaseMessage]:
    """[`Message`][] objects as LangChain messages.

    The exact inverse of [`from_langchain`][] for messages nothing rewrote.
    """
    return [message_to_langchain(m) for m in messages]
