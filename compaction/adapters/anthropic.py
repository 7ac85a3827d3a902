"""Anthropic messages (a top-level system prompt plus content blocks) to [`Message`][] and back.

The neutral shape is OpenAI-like, so the mapping is:

- ``system`` (text or text blocks) -> one leading system message;
- an assistant message -> one assistant message: ``text`` blocks joined into its content,
  ``tool_use`` blocks into [`ToolCall`][] (arguments = the JSON text of ``input``);
  ``thinking`` / ``redacted_thinking`` and other blocks stay in ``meta["anthropic"]``,
  attached to that same message;
- a user message -> one tool message per ``tool_result`` block (in order), then, when the
  message also carries text or images, a user message with them.

Writing reverses it: tool messages go back as ``tool_result`` blocks inside a user message, and
consecutive messages of one role are merged, as the API requires. A message nothing rewrote is
written back with its original blocks, exactly; a rewritten one is written from its new text
(thinking blocks first, then text, then ``tool_use``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from ..messages import Message, ToolCall
from . import AdapterError
from ._anthropic_blocks import META_KEY, record_of, text_block, tool_block, user_content
from ._coerce import is_model, plain, plain_blocks
from .ids import anthropic_id
from .person import IsPerson, harness_meta, mark_authors, synthetic
from .rekey import rekey

__all__ = ["CONTINUED", "META_KEY", "AnthropicRequest", "from_anthropic", "to_anthropic"]

_THINKING: Final = frozenset({"thinking", "redacted_thinking"})

#: The user turn written first when a conversation would otherwise open with the assistant.
CONTINUED: Final = "(continuing an earlier conversation)"


class AnthropicRequest(NamedTuple):
    """What [`to_anthropic`][] returns; unpacks as ``system, messages``."""

    system: str | list[dict[str, Any]] | None
    messages: list[dict[str, Any]]


def blocks_text(blocks: Sequence[Any]) -> str:
    """The text of a list of content blocks: its text blocks, one per line."""
    return "\n".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"
    )


def _check_blocks(blocks: Any, index: int | None, field: str) -> list[Mapping[str, Any]]:
    if not isinstance(blocks, list):
        raise AdapterError(
            index, field, f"expected text or a list of blocks, got {type(blocks).__name__}"
        )
    for i, block in enumerate(blocks):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise AdapterError(index, f"{field}[{i}]", "expected a block object with a 'type'")
    return blocks


def _arguments(block: Mapping[str, Any], index: int | None, field: str) -> str:
    value = block.get("input", {})
    if not isinstance(value, Mapping):
        raise AdapterError(index, f"{field}.input", "tool_use input must be an object")
    return json.dumps(value, ensure_ascii=False)


def _calls_of(
    blocks: Sequence[Mapping[str, Any]], index: int | None, field: str
) -> tuple[ToolCall, ...]:
    calls = []
    for i, block in enumerate(blocks):
        if block.get("type") != "tool_use":
            continue
        call_id, name = block.get("id"), block.get("name")
        if not isinstance(call_id, str) or not call_id:
            raise AdapterError(index, f"{field}[{i}].id", "a tool_use block needs a string id")
        if not isinstance(name, str):
            raise AdapterError(index, f"{field}[{i}].name", "a tool_use block needs a name")
        calls.append(ToolCall(call_id, name, _arguments(block, index, f"{field}[{i}]")))
    return tuple(calls)


def assistant_from_blocks(blocks: Any, index: int | None = None, **fields: Any) -> Message:
    """An assistant message from its content (text or blocks); ``fields`` go to Message."""
    if isinstance(blocks, str):
        return Message("assistant", blocks, **fields)
    blocks = _check_blocks(blocks, index, "content")
    text = blocks_text(blocks)
    calls = _calls_of(blocks, index, "content")
    meta = {**fields.pop("meta", {}), META_KEY: {"blocks": copy.deepcopy(blocks), "text": text}}
    return Message("assistant", text, tool_calls=calls, meta=meta, **fields)


def tool_from_block(
    block: Mapping[str, Any], index: int | None = None, name: str | None = None, **fields: Any
) -> Message:
    """A tool message from one ``tool_result`` block; ``fields`` go to Message."""
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise AdapterError(index, "tool_use_id", "a tool_result block must name its tool_use")
    content = block.get("content", "")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    else:
        text = blocks_text(_check_blocks(content, index, "tool_result.content"))
    meta = {**fields.pop("meta", {}), META_KEY: {"block": copy.deepcopy(dict(block)), "text": text}}
    return Message("tool", text, tool_call_id=call_id, name=name, meta=meta, **fields)


def user_from_blocks(blocks: Sequence[Mapping[str, Any]], **fields: Any) -> Message:
    """A user message from its non-tool-result blocks (text, images, documents...)."""
    text = blocks_text(blocks)
    meta = {
        **fields.pop("meta", {}),
        META_KEY: {"blocks": copy.deepcopy(list(blocks)), "text": text},
    }
    return Message("user", text, meta=meta, **fields)


def system_from(system: Any) -> Message:
    """The leading system message for an Anthropic ``system`` prompt (text or text blocks)."""
    if isinstance(system, str):
        return Message("system", system)
    blocks = _check_blocks(system, None, "system")
    text = blocks_text(blocks)
    return Message("system", text, meta={META_KEY: {"blocks": copy.deepcopy(blocks), "text": text}})


def from_anthropic(
    messages: Iterable[Mapping[str, Any]],
    system: str | list[dict[str, Any]] | None = None,
    *,
    is_person: IsPerson | None = None,
) -> tuple[Message, ...]:
    """Anthropic ``messages`` (and the top-level ``system``) as [`Message`][] tuples.

    A message may be an SDK object (the ``Message`` a call returned, or any pydantic model with
    ``role`` and ``content``), and content blocks may be SDK block objects: they are read
    without the null fields ``model_dump()`` would add, and a response's own fields (``id``,
    ``model``, ``usage``...) are not carried into the request. A user message's text sent
    beside ``tool_result`` blocks, text a harness wrote (see [`compaction.adapters.person`][])
    and text ``is_person`` rejects are marked synthetic: sent, never taken for the person's
    words. Raises [`AdapterError`][] naming the message and field it cannot read.
    """
    if isinstance(messages, str | bytes | Mapping) or is_model(messages):
        raise AdapterError(None, None, "expected a list of message objects")
    out: list[Message] = []
    if system is not None:
        out.append(system_from(plain_blocks(system)))
    names: dict[str, str] = {}
    for index, raw in enumerate(messages):
        raw = _coerced(raw)
        if not isinstance(raw, Mapping):
            raise AdapterError(index, None, f"expected a message object, got {type(raw).__name__}")
        role, content = raw.get("role"), raw.get("content")
        if role == "assistant":
            message = assistant_from_blocks(content, index)
            names.update((c.id, c.name) for c in message.tool_calls)
            out.append(message)
        elif role == "user":
            if isinstance(content, str):
                out.append(Message("user", content, meta=harness_meta("user", content)))
                continue
            blocks = _check_blocks(content, index, "content")
            rest = []
            # The API wants tool results first in the message; we emit them first too.
            for block in blocks:
                if block.get("type") == "tool_result":
                    call_id = block.get("tool_use_id")
                    name = names.get(call_id) if call_id is not None else None
                    out.append(tool_from_block(block, index, name))
                else:
                    rest.append(block)
            if rest or not blocks:
                user = user_from_blocks(rest)
                # Text sent beside tool results is the tools' (or the harness's), not the
                # person's: a page's "ignore your limits" must not count as their words.
                tools = len(rest) < len(blocks)
                out.append(synthetic(user) if tools or harness_meta("user", user.content) else user)
        else:
            hint = " (the system prompt goes in `system`)" if role == "system" else ""
            raise AdapterError(index, "role", f"expected 'user' or 'assistant', got {role!r}{hint}")
    # A tool_use id reused by a later message is given a fresh one (meta["rekeyed"] says so).
    return rekey(list(mark_authors(out, is_person)) if is_person is not None else out)


def _coerced(raw: Any) -> Any:
    if is_model(raw):
        dumped = plain(raw)
        # A response Message also has id, type, model, stop_reason and usage: none of them
        # belongs in a request message.
        return {k: dumped[k] for k in ("role", "content") if k in dumped}
    if isinstance(raw, Mapping):
        content = raw.get("content")
        blocks = plain_blocks(content)
        if blocks is not content:
            return {**raw, "content": blocks}
    return raw


def _tool_input(call: ToolCall, index: int) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        raise AdapterError(
            index,
            "tool_calls",
            f"arguments of call {call.id!r} are not JSON "
            f"({exc.msg}); Anthropic needs an object as tool_use input",
        ) from None
    if not isinstance(value, dict):
        raise AdapterError(
            index, "tool_calls", f"arguments of call {call.id!r} are not a JSON object"
        )
    return value


def _assistant_content(message: Message, index: int) -> str | list[dict[str, Any]]:
    record = record_of(message)
    blocks = record.get("blocks")
    if blocks is not None and message.content == record.get("text"):
        try:
            unchanged = _calls_of(blocks, index, "content") == message.tool_calls
        except AdapterError:
            unchanged = False
        if unchanged:
            return copy.deepcopy(blocks)
    if not message.tool_calls and not blocks:
        return message.content
    old = blocks or []
    # Thinking must lead the turn it belongs to; blocks we do not model keep their order.
    out = [copy.deepcopy(b) for b in old if b.get("type") in _THINKING]
    out += [copy.deepcopy(b) for b in old if b.get("type") not in _THINKING | {"text", "tool_use"}]
    out += text_block(message.content)
    by_id = {b.get("id"): b for b in old if b.get("type") == "tool_use"}
    for call in message.tool_calls:
        block = copy.deepcopy(dict(by_id.get(call.id, {})))
        block.update(type="tool_use", id=call.id, name=call.name, input=_tool_input(call, index))
        out.append(block)
    return out


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return text_block(content) if isinstance(content, str) else content


def _system(messages: Sequence[Message]) -> str | list[dict[str, Any]] | None:
    if not messages:
        return None
    if len(messages) == 1:
        record = record_of(messages[0])
        blocks = record.get("blocks")
        if blocks is not None and messages[0].content == record.get("text"):
            return copy.deepcopy(blocks)
        return messages[0].content
    # Several system messages (say, OpenAI's system + developer): one block each, so the
    # boundaries survive.
    out: list[dict[str, Any]] = []
    for m in messages:
        record = record_of(m)
        blocks = record.get("blocks")
        if blocks is not None and m.content == record.get("text"):
            out += copy.deepcopy(blocks)
        else:
            out += text_block(m.content)
    return out


def _valid_ids(out: list[dict[str, Any]]) -> None:
    """Every ``tool_use`` id and ``tool_result`` reference as Anthropic accepts them, mapped
    the same way on both sides (the blocks are our own copies, so they are changed in place)."""
    for message in out:
        content = message["content"]
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                block["id"] = anthropic_id(block["id"])
            elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                block["tool_use_id"] = anthropic_id(block["tool_use_id"])


def to_anthropic(messages: Iterable[Message]) -> AnthropicRequest:
    """[`Message`][] objects as an Anthropic request: ``(system, messages)``.

    Leading system messages become ``system``; a system message later on cannot be expressed
    and raises [`AdapterError`][]. ``meta["compaction"]`` is not written out. What the API
    would reject is avoided: a message with no content at all is left out, and a conversation
    that would open with the assistant opens with a short user turn (``CONTINUED``), and
    a tool-call id Anthropic refuses is mapped to one it accepts, the same way in every call
    (``compaction.adapters.ids.anthropic_id``).
    """
    msgs = tuple(messages)
    start = 0
    while start < len(msgs) and msgs[start].role == "system":
        start += 1
    out: list[dict[str, Any]] = []
    for index in range(start, len(msgs)):
        message = msgs[index]
        content: str | list[dict[str, Any]]
        if message.role == "assistant":
            role, content = "assistant", _assistant_content(message, index)
        elif message.role == "tool":
            role, content = "user", [tool_block(message)]
        elif message.role == "user":
            role, content = "user", user_content(message)
        else:
            raise AdapterError(
                index,
                "role",
                "a system message after the conversation started "
                "has no Anthropic form (system goes first, once)",
            )
        if not content:
            # The API rejects empty messages; an empty one says nothing, so it is left out.
            continue
        if out and out[-1]["role"] == role:
            # The API wants roles to alternate: merge into the previous message.
            previous = out[-1]
            previous["content"] = _as_blocks(previous["content"]) + _as_blocks(content)
        else:
            out.append({"role": role, "content": content})
    _valid_ids(out)
    if out and out[0]["role"] != "user":
        # The API wants the conversation to open with a user turn; a compacted (or OpenAI)
        # conversation may open with the assistant, so say plainly that it continues.
        out.insert(0, {"role": "user", "content": CONTINUED})
    return AnthropicRequest(_system(msgs[:start]), out)
