"""The peers, run on the same messages with the same tiktoken encoding: LangChain.

- langchain-core ``trim_messages(strategy="last", include_system=True, start_on="human")``
  against our :class:`SlidingWindow`;
- LangChain v1 ``ClearToolUsesEdit`` (what ``ContextEditingMiddleware`` applies) against our
  :class:`ToolResults`.

Both peers get a token counter built on the very encoding our ``TiktokenCounter`` uses, with
the same per-message envelope, so both sides count the same conversation to the same total
(checked before anything is timed). LangChain has no count cache: its counter encodes a message
every time it is asked, which is how it is used in practice (``count_tokens_approximately`` or a
model's ``get_num_tokens_from_messages``). The peers are the optional ``bench`` extra; without
them :func:`available` says why and the benchmark reports the section as skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from compaction.messages import Message, ToolCall
from compaction.tokens import TiktokenCounter

__all__ = [
    "available",
    "clear_tool_uses",
    "from_langchain",
    "langchain_counter",
    "roundtrip",
    "to_langchain",
    "trim_last",
]


def available() -> str | None:
    """None when the peers can run, else the reason they cannot."""
    try:
        import langchain_core.messages  # noqa: F401
        from langchain.agents.middleware import ClearToolUsesEdit  # noqa: F401
    except Exception as exc:
        return f"LangChain not installed ({type(exc).__name__}: {exc}); pip install -e '.[bench]'"
    return None


def _args(text: str) -> dict[str, Any]:
    # LangChain keeps tool arguments as a dict; text that is not a JSON object is wrapped.
    try:
        value = json.loads(text)
    except ValueError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": value}


def to_langchain(messages: Sequence[Message]) -> list[Any]:
    """Our messages as LangChain messages (text content, tool calls with dict arguments)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for m in messages:
        if m.role == "system":
            out.append(SystemMessage(m.content))
        elif m.role == "user":
            out.append(HumanMessage(m.content))
        elif m.role == "assistant":
            calls = [
                {"name": c.name, "args": _args(c.arguments), "id": c.id, "type": "tool_call"}
                for c in m.tool_calls
            ]
            out.append(AIMessage(m.content, tool_calls=calls))
        else:
            out.append(ToolMessage(m.content, tool_call_id=m.tool_call_id or "", name=m.name))
    return out


def from_langchain(messages: Sequence[Any]) -> tuple[Message, ...]:
    """LangChain messages back as ours, to count what was kept and to validate it."""
    out: list[Message] = []
    for m in messages:
        content = m.content if isinstance(m.content, str) else json.dumps(m.content)
        kind = m.type
        if kind == "system":
            out.append(Message("system", content))
        elif kind == "human":
            out.append(Message("user", content))
        elif kind == "ai":
            calls = tuple(
                ToolCall(c["id"], c["name"], json.dumps(c["args"], ensure_ascii=False))
                for c in m.tool_calls
            )
            out.append(Message("assistant", content, tool_calls=calls))
        elif kind == "tool":
            out.append(Message("tool", content, tool_call_id=m.tool_call_id, name=m.name))
        else:
            raise ValueError(f"unexpected LangChain message type {kind!r}")
    return tuple(out)


def roundtrip(messages: Sequence[Message]) -> tuple[Message, ...]:
    """``messages`` as they come back from LangChain (arguments re-serialised), so both sides
    start from conversations that count to the same total."""
    return from_langchain(to_langchain(messages))


def langchain_counter(counter: TiktokenCounter) -> Callable[[Any], int]:
    """A per-message LangChain token counter with ``counter``'s encoding and envelope, and no
    cache (LangChain has none)."""
    from langchain_core.messages import BaseMessage

    encode = counter._encode  # the same tiktoken encoding object, not a second one
    per_message, per_name, per_call = counter.per_message, counter.per_name, counter.per_tool_call

    def text(s: str) -> int:
        return len(encode(s)) if s else 0

    def count(message: BaseMessage) -> int:
        content = message.content
        if not isinstance(content, str):
            content = json.dumps(content)
        total = per_message + text(content)
        name = getattr(message, "name", None)
        if name:
            total += per_name + text(name)
        for call in getattr(message, "tool_calls", None) or ():
            total += per_call + text(call["name"])
            total += text(json.dumps(call["args"], ensure_ascii=False))
        return total

    # trim_messages recognises a per-message counter by this exact annotation object.
    count.__annotations__["message"] = BaseMessage
    return count


def list_counter(per_message: Callable[[Any], int]) -> Callable[[Sequence[Any]], int]:
    """The list form ``ClearToolUsesEdit`` calls (the whole conversation, every time)."""

    def count_tokens(messages: Sequence[Any]) -> int:
        return sum(per_message(m) for m in messages)

    return count_tokens


def trim_last(lc_messages: list[Any], target: int, count: Callable[[Any], int]) -> list[Any]:
    from langchain_core.messages import trim_messages

    return trim_messages(
        lc_messages,
        strategy="last",
        include_system=True,
        start_on="human",
        max_tokens=target,
        token_counter=count,
    )


def clear_tool_uses(
    lc_messages: list[Any],
    target: int,
    tokens: int,
    count: Callable[[Any], int],
    *,
    stop_at_target: bool,
) -> list[Any]:
    """``ClearToolUsesEdit`` triggered at ``target``, keeping the newest result (as our
    ToolResults keeps the newest step). ``stop_at_target`` sets ``clear_at_least`` to what
    must go to reach the target, so it stops there, at the price of a recount of the whole
    conversation after every clear; without it every older result is cleared in one pass."""
    from langchain.agents.middleware import ClearToolUsesEdit

    edit = ClearToolUsesEdit(
        trigger=target,
        keep=1,
        clear_at_least=max(0, tokens - target) if stop_at_target else 0,
    )
    messages = list(lc_messages)  # the edit works in place; the caller's list stays intact
    edit.apply(messages, count_tokens=list_counter(count))
    return messages
