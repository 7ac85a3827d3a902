"""OpenAI Responses API input items (what the OpenAI Agents SDK passes around) to
[`Message`][] and back.

A Responses conversation is a flat list of items, not of chat messages: ``message`` items
(user, system, developer, assistant), ``function_call`` and ``function_call_output`` items
joined by ``call_id``, ``reasoning`` items, hosted tool calls (``web_search_call``...), and so
on. The mapping:

- a user / system / developer message -> one message of that role (developer as system, the
  spelling remembered);
- a run of assistant-side items (assistant messages, reasoning, ``*_call`` items) -> **one**
  assistant message: its text, the calls that carry a ``call_id`` as [`ToolCall`][], and every
  item kept in ``meta["responses"]`` in order, so a step (reasoning, text and calls) is kept or
  dropped whole and reasoning is never separated from the call it led to;
- a ``*_call_output`` item -> a tool message answering its ``call_id``;
- a ``compaction`` item (the provider's own compaction of what came before) -> an assistant
  message of its own holding only that item, marked ``meta["boundary"]``; written back as the
  item, unchanged.

Writing reverses it. A message nothing rewrote goes back out as the very item objects it was
read from (the Agents SDK matches items by identity); a rewritten one is written from its new
text: assistant text as an assistant message, calls from their original items, tool output as
a ``function_call_output``. Items that are not text (reasoning, hosted calls) are not counted as
text; images and files in user messages are counted by [`compaction.media.count`][].
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..messages import Message, ToolCall
from . import AdapterError
from ._coerce import plain
from ._parts import is_cut, with_text
from .person import IsPerson, harness_meta, mark_authors

__all__ = ["META_KEY", "from_responses", "message_to_responses", "to_responses"]

META_KEY: Final = "responses"

_TEXT_PARTS: Final = frozenset({"input_text", "output_text", "text", "refusal"})
_PEOPLE: Final = frozenset({"user", "system", "developer"})


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", p.get("refusal", "")))
            for p in content
            if isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS
        )
    return ""


def _kind(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if isinstance(kind, str):
        return kind
    return "message" if "role" in item else ""


def _call_of(item: Mapping[str, Any], index: int) -> ToolCall | None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        return None  # a hosted call (web search...) answered inside the item itself
    name = item.get("name")
    arguments = item.get("arguments", item.get("input", item.get("action", {})))
    if not isinstance(arguments, str):
        try:
            arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            raise AdapterError(index, "arguments", "arguments must be JSON") from None
    return ToolCall(call_id, name if isinstance(name, str) and name else _kind(item), arguments)


def _output_text(item: Mapping[str, Any]) -> str:
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _text(output)
    return "" if output is None else json.dumps(output, ensure_ascii=False, sort_keys=True)


class _Reader:
    def __init__(self) -> None:
        self.out: list[Message] = []
        # The open assistant step: (index, the item as given, its plain form).
        self.items: list[tuple[int, Any, Mapping[str, Any]]] = []
        self.names: dict[str, str] = {}

    def flush(self) -> None:
        if not self.items:
            return
        texts, calls = [], []
        for index, _, item in self.items:
            kind = _kind(item)
            if kind == "message":
                texts.append(_text(item.get("content")))
            else:
                call = _call_of(item, index)
                if call is not None:
                    calls.append(call)
                    self.names[call.id] = call.name
        text = "\n".join(t for t in texts if t)
        # The calls as JSON (id, name, arguments), so a session can store the message.
        keys = [[c.id, c.name, c.arguments] for c in calls]
        record = {"items": [raw for _, raw, _ in self.items], "text": text, "calls": keys}
        self.out.append(Message("assistant", text, tool_calls=calls, meta={META_KEY: record}))
        self.items = []

    def read(self, raw: Any, index: int) -> None:
        item = plain(raw)
        if not isinstance(item, Mapping):
            raise AdapterError(index, None, f"expected an input item, got {type(raw).__name__}")
        kind, role = _kind(item), item.get("role")
        if kind == "message" and role in _PEOPLE:
            self.flush()
            content = item.get("content")
            text = _text(content)
            record: dict[str, Any] = {"item": raw, "text": text}
            if isinstance(content, list):
                record["parts"], record["parts_text"] = content, text
            if role == "developer":
                record["role"] = "developer"
            role = "user" if role == "user" else "system"
            meta = {META_KEY: record, **harness_meta(role, text)}
            self.out.append(Message(role, text, meta=meta))
        elif kind.endswith("_call_output"):
            self.flush()
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise AdapterError(index, "call_id", f"a {kind} item must name its call")
            text = _output_text(item)
            self.out.append(
                Message(
                    "tool",
                    text,
                    tool_call_id=call_id,
                    name=self.names.get(call_id),
                    meta={META_KEY: {"item": raw, "text": text}},
                )
            )
        elif kind == "compaction":
            # The provider's own compaction of everything before it: a boundary of its own,
            # never merged into the next step, written back as the very item.
            self.flush()
            self.items.append((index, raw, item))
            self.flush()
            last = self.out[-1]
            boundary = {"kind": "compaction", "agent": "openai"}
            self.out[-1] = last.replace(meta={**last.meta, "boundary": boundary})
        elif kind == "message" and role not in (None, "assistant"):
            raise AdapterError(index, "role", f"unknown role {role!r}")
        elif not kind:
            raise AdapterError(index, "type", "an input item needs a 'type' (or a 'role')")
        else:
            # Assistant text, reasoning, calls, hosted tool calls and anything newer: one step.
            self.items.append((index, raw, item))


def from_responses(
    items: Iterable[Any], *, is_person: IsPerson | None = None
) -> tuple[Message, ...]:
    """Responses API input items (dicts or SDK objects) as [`Message`][] tuples.

    A plain string (the Agents SDK's shorthand for one user message) is one user message.
    A user message a harness or a tool wrote (see [`compaction.adapters.person`][]) or that
    ``is_person`` rejects is marked synthetic: sent, never taken for the person's words.
    Raises [`AdapterError`][] naming the item and field it cannot read.
    """
    if isinstance(items, str):
        meta = {META_KEY: {"item": items, "text": items}, **harness_meta("user", items)}
        return mark_authors((Message("user", items, meta=meta),), is_person)
    if isinstance(items, bytes | Mapping):
        raise AdapterError(None, None, "expected a list of input items")
    reader = _Reader()
    for index, raw in enumerate(items):
        # An SDK object is read through its plain form; the object itself is what goes back.
        reader.read(raw, index)
    reader.flush()
    return mark_authors(reader.out, is_person) if is_person is not None else tuple(reader.out)


def _record(message: Message) -> Mapping[str, Any]:
    record = message.meta.get(META_KEY)
    return record if isinstance(record, Mapping) else {}


def _assistant(message: Message, record: Mapping[str, Any]) -> list[Any]:
    originals = record.get("items") or []
    if (
        originals
        and message.content == record.get("text")
        and list(record.get("calls", ()))
        == [[c.id, c.name, c.arguments] for c in message.tool_calls]
    ):
        return list(originals)
    by_call: dict[str, Any] = {}
    kept: list[Any] = []
    for raw in originals:
        item = plain(raw)
        kind = _kind(item)
        if kind == "message":
            continue  # the text is written from the message's new content below
        call_id = item.get("call_id")
        if isinstance(call_id, str) and call_id and not kind.endswith("_output"):
            by_call[call_id] = raw
            continue
        kept.append(raw)  # reasoning and hosted calls stay with their step
    out = kept
    if not message.content and not message.tool_calls:
        # Reasoning must be followed by what it led to; with nothing left, it goes too.
        out = [raw for raw in kept if _kind(plain(raw)) != "reasoning"]
    if message.content:
        out.append({"role": "assistant", "content": message.content})
    for call in message.tool_calls:
        original = by_call.get(call.id)
        if original is not None and _call_of(plain(original), 0) == call:
            out.append(original)
        else:
            out.append(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
            )
    return out


def _tool(message: Message, record: Mapping[str, Any]) -> Any:
    raw = record.get("item")
    if raw is not None and message.content == record.get("text"):
        return raw
    item = plain(raw) if raw is not None else {}
    kind = _kind(item) if item else "function_call_output"
    if kind not in ("function_call_output", "custom_tool_call_output"):
        # A computer or shell output is not text: it cannot carry a rewritten text.
        return raw
    return {"type": kind, "call_id": message.tool_call_id, "output": message.content}


def _person(message: Message, record: Mapping[str, Any]) -> Any:
    raw = record.get("item")
    if raw is not None and message.content == record.get("text") and not isinstance(raw, str):
        return raw
    role = record.get("role", message.role)
    parts = record.get("parts")
    if is_cut(message) and isinstance(parts, list):
        # A cut keeps its images and files beside the cut text.
        kept = with_text(
            copy.deepcopy(parts),
            message.content,
            lambda p: isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS,
            lambda t: {"type": "input_text", "text": t},
        )
        if kept is not None:
            return {"role": role, "content": kept}
    return {"role": role, "content": message.content}


def message_to_responses(message: Message) -> list[Any]:
    """One [`Message`][compaction.messages.Message] as the Responses input items it stands for
    (an assistant message may be several: its reasoning, text and each call)."""
    record = _record(message)
    if message.role == "assistant":
        return _assistant(message, record)
    if message.role == "tool":
        return [_tool(message, record)]
    return [_person(message, record)]


def to_responses(messages: Sequence[Message] | Iterable[Message]) -> list[Any]:
    """[`Message`][] objects as Responses API input items.

    Exact inverse of [`from_responses`][] for messages nothing rewrote (the same item
    objects); a rewritten message is written from its current content and calls.
    ``meta["compaction"]`` is not written out.
    """
    out: list[Any] = []
    for message in messages:
        out += message_to_responses(message)
    return out
