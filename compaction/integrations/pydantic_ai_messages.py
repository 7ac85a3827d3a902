"""pydantic-ai ``ModelMessage`` lists to [`Message`][compaction.messages.Message] and back,
losslessly.

pydantic-ai groups a conversation differently: a ``ModelRequest`` holds several parts (system
and user prompts, the results of every tool the previous response called, retry feedback), a
``ModelResponse`` holds text, thinking and the tool calls. Reading gives

- one ``system``, ``user`` or ``tool`` message per prompt, retry-feedback or tool-return part
  of a request (a request's tool results first, so they follow the call as providers require;
  the original order is restored on the way back);
- one ``assistant`` message per response: its text parts joined, its tool calls (arguments as
  JSON text); thinking, files and provider-executed (native) tool parts ride along unchanged.

Parts that are neither (pydantic-ai's own bookkeeping: instruction and tool-availability
deltas, compaction markers) ride with a neighbouring message of the same request, and a request
made only of them becomes an empty, synthetic ``user`` message, so nothing is dropped on the
way.

Every message keeps, under ``meta["pydantic_ai"]``, the very ``ModelMessage`` it came from and
which of its parts it stands for. Writing back turns a run of messages from one source into
that source itself when nothing in it changed (so what the model is sent is the history's own
objects), and otherwise into a copy of the source (``dataclasses.replace``: timestamps, run and
conversation ids, usage, model name kept) holding the surviving parts, rewritten parts carrying
their new text. Messages a strategy wrote become new requests, their provenance in the
request's ``metadata`` (which pydantic-ai never sends to the model) under ``"compaction"``.
The record holds live objects, not plain data: to store a history, store pydantic-ai's own
messages (``ModelMessagesTypeAdapter``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, TypeGuard

from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    BinaryContent,
    CompactionPart,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..adapters import AdapterError
from ..adapters._parts import is_cut, with_text
from ..adapters.person import harness_meta
from ..media.parts import KEY as MEDIA_KEY
from ..media.parts import describe_bytes, describe_url, media_meta
from ..memory.transcript import PROVENANCE_KEY, SYNTHETIC_KEY
from ..messages import Message, ToolCall

__all__ = ["META_KEY", "from_pydantic_ai", "pydantic_ai_units", "to_pydantic_ai"]

META_KEY: Final = "pydantic_ai"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(item for item in content if isinstance(item, str))
    return str(content)


def _media(content: Any, text: str) -> dict[str, Any] | None:
    """The images and documents of a user prompt's content, described for the counter."""
    if isinstance(content, str) or not isinstance(content, Sequence):
        return None
    parts = []
    for item in content:
        if isinstance(item, BinaryContent):
            parts.append(describe_bytes(item.data, item.media_type))
        elif isinstance(item, ImageUrl):
            parts.append(describe_url(item.url, "image"))
        elif isinstance(item, DocumentUrl):
            try:
                pdf = item.media_type == "application/pdf"
            except ValueError:  # no type pydantic-ai can infer: counted as a page, not nothing
                pdf = True
            if pdf:
                parts.append(describe_url(item.url, "pdf"))
    return media_meta(text, parts)


def _return_text(part: BaseToolReturnPart[Any]) -> str:
    try:
        return part.model_response_str()
    except Exception:  # a content pydantic-ai itself cannot render is counted by its str()
        return str(part.content)


def _is_call(part: Any) -> TypeGuard[BaseToolCallPart[Any]]:
    # Native (provider-executed) calls are answered inside the same response: no pair to keep.
    return isinstance(part, BaseToolCallPart) and not isinstance(part, NativeToolCallPart)


def _request_part(part: Any) -> tuple[str, str, dict[str, Any]] | None:
    """(role, text, fields) for a conversational request part, None for bookkeeping."""
    if isinstance(part, SystemPromptPart):
        return "system", part.content, {}
    if isinstance(part, UserPromptPart):
        text = _text(part.content)
        media = _media(part.content, text)
        return "user", text, {"media": media} if media is not None else {}
    if isinstance(part, BaseToolReturnPart) and not isinstance(part, NativeToolReturnPart):
        fields: dict[str, Any] = {"tool_call_id": part.tool_call_id, "name": part.tool_name}
        if isinstance(part.metadata, Mapping) and isinstance(
            part.metadata.get(PROVENANCE_KEY), Mapping
        ):
            fields["provenance"] = dict(part.metadata[PROVENANCE_KEY])
        return "tool", _return_text(part), fields
    if isinstance(part, RetryPromptPart):  # legacy histories
        if part.tool_name is not None:
            fields = {"tool_call_id": part.tool_call_id, "name": part.tool_name}
            return "tool", part.model_response(), fields
        return "user", part.model_response(), {"synthetic": True}
    if isinstance(part, RetryFeedbackPart):
        return "user", part.model_response(), {"synthetic": True}
    if isinstance(part, CompactionPart):
        # A summary the application wrote into a request: the model reads it, but no person
        # wrote it, so it is never the task anchor.
        return "user", part.content or "", {"synthetic": True}
    return None


def _record(source: ModelMessage, parts: list[int], text: str, calls: Any) -> dict[str, Any]:
    return {"message": source, "parts": parts, "text": text, "calls": calls}


def _meta(source: ModelMessage, record: dict[str, Any], synthetic: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {META_KEY: record}
    provenance = (source.metadata or {}).get(PROVENANCE_KEY)
    if isinstance(provenance, Mapping):
        meta[PROVENANCE_KEY] = dict(provenance)
    if synthetic:
        meta[SYNTHETIC_KEY] = True
    return meta


def _from_request(source: ModelRequest, index: int, prompt: str | None) -> list[Message]:
    found: list[tuple[int, str, str, dict[str, Any]]] = []
    riders: list[int] = []
    for i, part in enumerate(source.parts):
        read = _request_part(part)
        if read is None:
            riders.append(i)
        else:
            found.append((i, *read))
    if not found:
        # Only bookkeeping parts: an empty note that carries them, never a task anchor.
        found.append((-1, "user", "", {"synthetic": True}))
    # Tool results first: providers want them right after the call they answer.
    found.sort(key=lambda f: f[1] != "tool")
    # A user prompt in a request that carries tool results is the tools' data (pydantic-ai
    # sends a tool's ``ToolReturn.content`` that way), never the person's words; only the
    # run's own prompt (``prompt``: a run resumed with deferred tool results and a new prompt
    # sends both in one request) is theirs there.
    tools = any(role == "tool" for _, role, _, _ in found)
    out = []
    for n, (i, role, text, fields) in enumerate(found):
        parts = [i] if i >= 0 else []
        if n == 0:
            parts += riders
        synthetic = bool(fields.pop("synthetic", False)) or (
            role == "user" and ((tools and text != prompt) or bool(harness_meta(role, text)))
        )
        provenance = fields.pop("provenance", None)
        media = fields.pop("media", None)
        if role == "tool" and not fields.get("tool_call_id"):
            raise AdapterError(index, f"parts[{i}].tool_call_id", "a tool return needs its call id")
        meta = _meta(source, _record(source, parts, text, None), synthetic)
        if provenance is not None:
            meta[PROVENANCE_KEY] = provenance
        if media is not None:
            meta[MEDIA_KEY] = media
        out.append(Message(role, text, meta=meta, **fields))
    return out


def _call(part: BaseToolCallPart[Any]) -> ToolCall:
    return ToolCall(part.tool_call_id, part.tool_name, part.args_as_json_str())


def _call_keys(calls: Sequence[ToolCall]) -> list[tuple[str, str, str]]:
    return [(c.id, c.name, c.arguments) for c in calls]


def _from_response(source: ModelResponse) -> Message:
    text = "\n".join(p.content for p in source.parts if isinstance(p, TextPart))
    calls = tuple(_call(p) for p in source.parts if _is_call(p))
    record = _record(source, list(range(len(source.parts))), text, _call_keys(calls))
    return Message("assistant", text, tool_calls=calls, meta=_meta(source, record, False))


def from_pydantic_ai(
    messages: Iterable[ModelMessage], *, prompt: str | None = None
) -> tuple[Message, ...]:
    """pydantic-ai messages as [`Message`][] tuples (see the module docstring).

    Who wrote a user prompt is read from the request that carries it: beside tool returns it
    is the tools' data (``ToolReturn.content``), unless its text is ``prompt`` (the run's own
    prompt, ``RunContext.prompt``); text a harness wrote (see
    [`compaction.adapters.person`][]) is never the person's either. Such a message is marked
    synthetic: sent as it came, never taken for the person's words.

    Raises [`AdapterError`][compaction.adapters.AdapterError] naming the message it cannot read.
    """
    out: list[Message] = []
    for index, source in enumerate(messages):
        if isinstance(source, ModelRequest):
            out.extend(_from_request(source, index, prompt))
        elif isinstance(source, ModelResponse):
            out.append(_from_response(source))
        else:
            raise AdapterError(
                index,
                None,
                f"expected a ModelRequest or ModelResponse, got {type(source).__name__}",
            )
    return tuple(out)


# -- back ---------------------------------------------------------------------------------------


def _source(message: Message) -> tuple[ModelMessage | None, Mapping[str, Any]]:
    record = message.meta.get(META_KEY)
    if isinstance(record, Mapping) and isinstance(
        record.get("message"), ModelRequest | ModelResponse
    ):
        return record["message"], record
    return None, {}


def _unchanged(message: Message, record: Mapping[str, Any]) -> bool:
    if message.content != record.get("text"):
        return False
    calls = record.get("calls")
    return calls is None or _call_keys(message.tool_calls) == list(calls)


def _rewritten_part(part: Any, message: Message) -> Any:
    if isinstance(part, BaseToolReturnPart):
        provenance = message.meta.get(PROVENANCE_KEY)
        metadata = part.metadata
        if isinstance(provenance, Mapping) and (metadata is None or isinstance(metadata, dict)):
            # A tool return's metadata is never sent to the model: provenance can live there.
            metadata = {**(metadata or {}), PROVENANCE_KEY: dict(provenance)}
        return dataclasses.replace(part, content=message.content, metadata=metadata)
    if (
        isinstance(part, UserPromptPart)
        and is_cut(message)
        and not isinstance(part.content, str)
        and isinstance(part.content, Sequence)
    ):
        # A cut keeps its images and files beside the cut text.
        kept = with_text(list(part.content), message.content, lambda p: isinstance(p, str), str)
        if kept is not None:
            return dataclasses.replace(part, content=kept)
    if isinstance(part, SystemPromptPart | UserPromptPart | CompactionPart):
        return dataclasses.replace(part, content=message.content)
    # Retry feedback, rewritten, is what its text now says, in the user's voice it had.
    return UserPromptPart(message.content)


def _request_from(source: ModelRequest, group: Sequence[Message]) -> ModelRequest:
    chosen: dict[int, Any] = {}
    for m in group:
        _, record = _source(m)
        indices = list(record.get("parts", ()))
        same = _unchanged(m, record)
        for k, i in enumerate(indices):
            part = source.parts[i]
            # The first index is the message's own part; the rest are bookkeeping riders.
            chosen[i] = part if same or k else _rewritten_part(part, m)
    ordered = [chosen[i] for i in sorted(chosen)]
    if len(ordered) == len(source.parts) and all(
        a is b for a, b in zip(ordered, source.parts, strict=True)
    ):
        return source
    return dataclasses.replace(source, parts=ordered)


def _response_from(source: ModelResponse, message: Message) -> ModelResponse:
    _, record = _source(message)
    if _unchanged(message, record):
        return source
    wanted = {c.id: c for c in message.tool_calls}
    parts: list[Any] = []
    text_done = False
    for part in source.parts:
        if isinstance(part, TextPart):
            if not text_done and message.content:
                parts.append(dataclasses.replace(part, content=message.content))
            text_done = True
        elif _is_call(part):
            call = wanted.pop(part.tool_call_id, None)
            if call is not None:
                same = _call(part) == call
                parts.append(part if same else _new_call(call))
        else:
            parts.append(part)
    if not text_done and message.content:
        parts.insert(0, TextPart(message.content))
    parts.extend(_new_call(c) for c in wanted.values())
    return dataclasses.replace(source, parts=parts)


def _new_call(call: ToolCall) -> ToolCallPart:
    return ToolCallPart(call.name, call.arguments, call.id)


def _fresh_part(message: Message) -> Any:
    if message.role == "system":
        return SystemPromptPart(message.content)
    if message.role == "tool":
        return ToolReturnPart(message.name or "", message.content, message.tool_call_id or "")
    return UserPromptPart(message.content)


def _fresh_metadata(group: Sequence[Message]) -> dict[str, Any] | None:
    for m in group:
        provenance = m.meta.get(PROVENANCE_KEY)
        if isinstance(provenance, Mapping):
            return {PROVENANCE_KEY: dict(provenance)}
    return None


def to_pydantic_ai(messages: Iterable[Message]) -> list[ModelMessage]:
    """[`Message`][] objects as pydantic-ai messages.

    The exact inverse of [`from_pydantic_ai`][] for messages nothing rewrote: the same
    ``ModelMessage`` objects come back.
    """
    return [written for objects, _ in pydantic_ai_units(list(messages)) for written in objects]


def pydantic_ai_units(
    messages: Sequence[Message],
) -> Iterator[tuple[list[ModelMessage], int]]:
    """[`to_pydantic_ai`][compaction.integrations.pydantic_ai_messages.to_pydantic_ai] a unit
    at a time: the ``ModelMessage`` written for each run of messages (an assistant message; or
    the results and prompts one request carries), with the index just past the run, so a caller
    can keep what a longer list starts with."""
    group: list[Message] = []
    group_source: Any = None

    def flush() -> list[ModelMessage]:
        if isinstance(group_source, ModelRequest):
            written: ModelMessage = _request_from(group_source, group)
        else:
            parts = [_fresh_part(m) for m in group]
            written = ModelRequest(parts, metadata=_fresh_metadata(group))
        group.clear()
        return [written]

    for i, m in enumerate(messages):
        source, _ = _source(m)
        if m.role == "assistant":
            if group:
                yield flush(), i
            if isinstance(source, ModelResponse):
                yield [_response_from(source, m)], i + 1
            else:
                text = [TextPart(m.content)] if m.content else []
                calls = [_new_call(c) for c in m.tool_calls]
                yield [ModelResponse([*text, *calls], metadata=_fresh_metadata([m]))], i + 1
            group_source = None
            continue
        if not isinstance(source, ModelRequest):
            source = None
        if group and source is not group_source:
            yield flush(), i
        group_source = source
        group.append(m)
    if group:
        yield flush(), len(messages)
