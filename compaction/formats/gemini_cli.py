"""Gemini CLI sessions (``~/.gemini/tmp/<project>/chats/session-*.json`` and ``*.jsonl``).

Two shapes, read the way Gemini CLI's own chat recorder reads them back:

- the older **JSON** file: ``{"sessionId", "projectHash", "startTime", …, "messages": [...]}``;
- the newer **JSONL** file: a metadata line (``sessionId``, ``projectHash``), then one line per
  message *write*. A message is written again, whole, each time it changes (its tool calls
  arrive, its token count is filled in): the same ``id`` again replaces the earlier copy in
  place. ``{"$set": {...}}`` lines update the metadata (``{"$set": {"messages": [...]}}``
  replaces every message), ``{"$rewindTo": id}`` drops that message and everything after it.

Each message has ``type``: ``user`` or ``gemini`` are chat turns; ``info``, ``error`` and
``warning`` are the CLI's own notices to the person, never sent to the model (skipped and
counted). A ``gemini`` message holds its calls in ``toolCalls`` (``id``, ``name``, ``args``,
``result`` as ``functionResponse`` parts, ``status``), or, in newer files, as
``functionCall`` parts of ``content``: the calls go on the assistant message and each result
becomes a tool message right after it (a call with no result gets the visible ``no_result``
repair). ``thoughts`` are kept in ``meta`` (they are not resent to the model). ``tokens``
(``input`` includes ``cached``; ``thoughts`` are billed as output) and ``model`` are the
call's recorded usage. User text the CLI wrote itself (``Please continue.``, session and hook
context) is marked synthetic; slash commands (``/…``, ``?…``) never reached the model and are
skipped, as Gemini CLI does when it resumes a session.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import args_text, as_text, count, done, head, iso_time, text_id
from ._gemini_stream import READER as GEMINI_STREAM
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, recorded
from .registry import Reader

__all__ = ["FORMAT", "READERS", "read_gemini_cli", "sniff_gemini_cli"]

FORMAT: Final = "gemini-cli"
SOURCE_KEY: Final = "gemini_cli"

_NOTICES: Final = frozenset({"info", "error", "warning"})
_SYNTHETIC_TEXT: Final = ("Please continue.", "System: Please continue.")
_SYNTHETIC_PREFIXES: Final = ("<session_context>", "<hook_context>")


def _is_meta(value: Any) -> bool:
    return isinstance(value, Mapping) and "sessionId" in value and "projectHash" in value


def _is_update(value: Any) -> bool:
    return isinstance(value, Mapping) and ("$set" in value or "$rewindTo" in value)


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and value.get("type") in ("user", "gemini", *_NOTICES)
        and "content" in value
        and "role" not in value
        and "message" not in value
    )


def sniff_gemini_cli(doc: Document, path: str | Path = "") -> bool:
    """A Gemini CLI session: its metadata (``sessionId`` with ``projectHash``), ``$set`` or
    ``$rewindTo`` update lines, or ``gemini`` messages."""
    if doc.records is None:
        value = doc.value
        return (
            isinstance(value, Mapping)
            and isinstance(value.get("messages"), list)
            and (_is_meta(value) or any(_is_message(m) for m in value["messages"][:8]))
        )
    first = head(doc)
    return any(_is_meta(r) or _is_update(r) for r in first) or any(
        _is_message(r) and r.get("type") == "gemini" for r in first
    )


class _Session:
    """The messages so far, in order, as Gemini CLI's loader keeps them: a write with a known
    id replaces that message in place, a rewind drops a message and all after it. Each
    operation costs what it adds or drops (a hostile file of rewinds stays linear)."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.order: list[str] = []
        self.at: dict[str, int] = {}
        self.data: dict[str, tuple[int, Mapping[str, Any]]] = {}
        self.replaced = 0
        self.anonymous = 0

    def put(self, line: int, msg: Any) -> None:
        if not isinstance(msg, Mapping):
            raise FormatError(self.path, "a message: expected an object", line=line)
        key = text_id(msg.get("id"))
        if key is None:
            self.anonymous += 1
            key = f"\0{self.anonymous}"
        if key in self.data:
            self.replaced += 1
        else:
            self.at[key] = len(self.order)
            self.order.append(key)
        self.data[key] = (line, msg)

    def rewind(self, target: Any) -> None:
        key = text_id(target)
        cut = self.at.get(key, 0) if key is not None else 0
        for gone in self.order[cut:]:
            del self.at[gone], self.data[gone]
        del self.order[cut:]

    def messages(self) -> list[tuple[int, Mapping[str, Any]]]:
        return [self.data[key] for key in self.order]


def _replay(doc: Document, path: str | Path) -> tuple[list[tuple[int, Mapping[str, Any]]], int]:
    """The messages as Gemini CLI would load them: (line, record) in order, and the number
    of message writes that later writes replaced."""
    session = _Session(path)
    if doc.records is None:
        for msg in doc.value["messages"]:
            session.put(1, msg)
        return session.messages(), session.replaced
    for line, record in doc.records:
        if "$rewindTo" in record:
            session.rewind(record["$rewindTo"])
        elif "$set" in record:
            update = record["$set"]
            if isinstance(update, Mapping) and isinstance(update.get("messages"), list):
                session.rewind(None)
                for msg in update["messages"]:
                    session.put(line, msg)
        elif _is_meta(record) and not isinstance(record.get("type"), str):
            messages = record.get("messages")
            for msg in messages if isinstance(messages, list) else ():
                session.put(line, msg)
        else:
            session.put(line, record)
    return session.messages(), session.replaced


def _source(msg: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": text_id(msg.get("id"))}
    stamp = iso_time(msg.get("timestamp"))
    if stamp is not None:
        out["timestamp"] = stamp
    out.update(more)
    return out


def _usage(tokens: Any) -> dict[str, int]:
    if not isinstance(tokens, Mapping) or "input" not in tokens:
        return {}
    cached = min(count(tokens.get("cached")), count(tokens.get("input")))
    return dict(
        uncached=count(tokens.get("input")) - cached + count(tokens.get("tool")),
        cache_read=cached,
        output=count(tokens.get("output")) + count(tokens.get("thoughts")),
    )


def _response_text(part: Mapping[str, Any]) -> str:
    response = part.get("response")
    if isinstance(response, Mapping):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                text = response[key]
                return f"Error: {text}" if key == "error" else text
    return args_text(response)


def _result(value: Any) -> str | None:
    """A call's ``result`` as text (None: no result recorded)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    parts = value if isinstance(value, list) else [value]
    texts = []
    for part in parts:
        if isinstance(part, Mapping) and isinstance(part.get("functionResponse"), Mapping):
            texts.append(_response_text(part["functionResponse"]))
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            kind = next(iter(part), "part")
            texts.append(f"[{kind}]")
    return "\n".join(texts)


def _parts(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [] if content is None else [content]


def _gemini(line: int, msg: Mapping[str, Any], path: str | Path) -> list[Message]:
    parts = _parts(msg.get("content"))
    text_parts = [
        p
        for p in parts
        if isinstance(p, str)
        or (isinstance(p, Mapping) and isinstance(p.get("text"), str) and not p.get("thought"))
    ]
    thoughts = [p for p in parts if isinstance(p, Mapping) and p.get("thought")]
    calls: list[ToolCall] = []
    results: dict[str, str | None] = {}
    records_ = msg.get("toolCalls")
    listed = records_ if isinstance(records_, list) else []
    for index, part in enumerate(parts):
        call = part.get("functionCall") if isinstance(part, Mapping) else None
        if isinstance(call, Mapping):
            cid = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
            calls.append(
                ToolCall(
                    cid or f"{msg.get('id')}-call-{index}",
                    str(call.get("name") or "tool"),
                    args_text(call.get("args")),
                )
            )
    known = {c.id for c in calls}
    for index, record in enumerate(listed):
        if not isinstance(record, Mapping):
            raise FormatError(path, f"toolCalls[{index}]: expected an object", line=line)
        cid = record.get("id")
        cid = cid if isinstance(cid, str) and cid else f"{msg.get('id')}-tool-{index}"
        if cid not in known:
            name = record.get("name")
            calls.append(
                ToolCall(
                    cid,
                    name if isinstance(name, str) and name else "tool",
                    args_text(record.get("args")),
                )
            )
            known.add(cid)
        results[cid] = _result(record.get("result"))
    meta_more: dict[str, Any] = {}
    if isinstance(msg.get("model"), str):
        meta_more["model"] = msg["model"]
    usage = _usage(msg.get("tokens"))
    if usage:
        meta_more["tokens"] = msg["tokens"]
    if msg.get("thoughts") or thoughts:
        meta_more["thoughts"] = msg.get("thoughts") or thoughts
    text = as_text(text_parts)
    if not text.strip() and not calls:
        return []
    out = [
        Message(
            "assistant",
            text,
            tool_calls=tuple(calls),
            id=text_id(msg.get("id")),
            meta={
                SOURCE_KEY: _source(msg, **meta_more),
                RECORDED_KEY: recorded(
                    timestamp=iso_time(msg.get("timestamp")), model=meta_more.get("model"), **usage
                ),
            },
        )
    ]
    by_id = {text_id(r.get("id")): r for r in listed if isinstance(r, Mapping)}
    for call in calls:
        result = results.get(call.id)
        if result is None:
            continue  # repaired as no_result
        record = by_id.get(call.id, {})
        source = {"status": record.get("status"), "timestamp": iso_time(record.get("timestamp"))}
        out.append(
            Message("tool", result, tool_call_id=call.id, name=call.name, meta={SOURCE_KEY: source})
        )
    return out


def read_gemini_cli(doc: Document, path: str | Path) -> Loaded:
    """Read a Gemini CLI session (both shapes; see the module docstring)."""
    if doc.records is None and not isinstance(doc.value, Mapping):
        raise FormatError(path, "read as gemini-cli: expected a JSON object with 'messages'")
    chat, replaced = _replay(doc, path)
    skipped: Counter[str] = Counter()
    if replaced:
        skipped["message rewritten later"] = replaced
    if doc.records is not None:
        for _, record in doc.records:
            if _is_update(record):
                skipped["$set" if "$set" in record else "$rewindTo"] += 1
            elif _is_meta(record):
                skipped["session metadata"] += 1
    messages: list[Message] = []
    for line, msg in chat:
        kind = msg.get("type")
        if kind in _NOTICES:
            skipped[f"{kind} notice"] += 1
            continue
        if kind == "gemini":
            got = _gemini(line, msg, path)
            if not got:
                skipped["gemini message without text or calls"] += 1
            messages.extend(got)
            continue
        if kind != "user":
            raise FormatError(
                path,
                f"message type {kind!r}: expected user, gemini, info, error or warning",
                line=line,
            )
        parts = _parts(msg.get("content"))
        responses = [p for p in parts if isinstance(p, Mapping) and "functionResponse" in p]
        text = as_text([p for p in parts if p not in responses])
        for part in responses:
            fr = part["functionResponse"]
            fr = fr if isinstance(fr, Mapping) else {}
            cid = fr.get("id") if isinstance(fr.get("id"), str) and fr.get("id") else "unknown"
            messages.append(
                Message(
                    "tool",
                    _response_text(fr),
                    tool_call_id=cid,
                    name=fr.get("name") if isinstance(fr.get("name"), str) else None,
                    meta={SOURCE_KEY: _source(msg)},
                )
            )
        stripped = text.strip()
        if not stripped or stripped.startswith(("/", "?")):
            if not responses:
                skipped["slash command or empty user message"] += 1
            continue
        meta: dict[str, Any] = {SOURCE_KEY: _source(msg)}
        if isinstance(msg.get("displayContent"), list | str):
            meta[SOURCE_KEY]["displayContent"] = as_text(msg["displayContent"])
        if stripped in _SYNTHETIC_TEXT or stripped.startswith(_SYNTHETIC_PREFIXES):
            meta[SYNTHETIC_KEY] = True
        messages.append(Message("user", text, id=text_id(msg.get("id")), meta=meta))
    container = "jsonl" if doc.records is not None else "object"
    return done(
        messages,
        FORMAT,
        path,
        skipped=skipped,
        container=container,
    )


READERS = (
    Reader(
        name=FORMAT,
        title="Gemini CLI session (~/.gemini/tmp/*/chats/session-*.json or .jsonl)",
        shape='{"sessionId", "projectHash", "messages": [{"type": "user|gemini", "content", '
        '"toolCalls"}]}, or its JSONL: a metadata line, message lines, {"$set"} and '
        '{"$rewindTo"} lines',
        sniff=sniff_gemini_cli,
        read=read_gemini_cli,
        output="openai",
        priority=25,
    ),
    GEMINI_STREAM,  # `gemini -p --output-format stream-json`: its own shape and module
)
