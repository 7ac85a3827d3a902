"""The model's reply, whatever shape it came in, as an assistant [`Message`][]."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from ..messages import Message, ToolCall, assistant

__all__: list[str] = []


def _get(source: Any, name: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _reply_message(reply: Any, step: int) -> tuple[Message, Any]:
    """The model's reply as an assistant [`Message`][], and the usage it reported."""
    if isinstance(reply, Message):
        if reply.role != "assistant":
            raise TypeError(f"the model must reply with an assistant message, got {reply.role!r}")
        return _unique_call_ids(reply), reply.meta.get("usage")
    if isinstance(reply, str):
        return assistant(reply), None
    if reply is None:
        raise TypeError("the model returned None instead of a reply")
    usage = _get(reply, "usage")
    choices = _get(reply, "choices")
    if choices:
        reply = _get(choices[0], "message")
    content = _get(reply, "content")
    raw_calls = _get(reply, "tool_calls") or ()
    if content is not None and not isinstance(content, str):
        raise TypeError(f"the reply's content must be text, got {type(content).__name__}")
    calls = []
    for n, raw in enumerate(raw_calls):
        function = _get(raw, "function") or raw
        name = _get(function, "name")
        arguments = _get(function, "arguments")
        if not isinstance(name, str) or not name:
            raise TypeError(f"tool call {n} of the reply has no name")
        calls.append(
            ToolCall(
                _get(raw, "id") or _new_call_id(),
                name,
                arguments if arguments is not None else "{}",
            )
        )
    return _unique_call_ids(assistant(content or "", calls)), usage


def _new_call_id() -> str:
    # Random, not numbered per run: ids must not repeat anywhere in the conversation
    # (Anthropic refuses a request whose tool_use ids repeat), and runs continue a history.
    return f"call_{secrets.token_hex(8)}"


def _unique_call_ids(message: Message) -> Message:
    """``message`` with a repeated tool call id replaced: results are matched to calls by id,
    so two calls sharing one would make a conversation every provider refuses."""
    seen: set[str] = set()
    calls = []
    changed = False
    for call in message.tool_calls:
        if call.id in seen:
            call, changed = ToolCall(_new_call_id(), call.name, call.arguments), True
        seen.add(call.id)
        calls.append(call)
    return message.replace(tool_calls=tuple(calls)) if changed else message
