"""The Cursor CLI's printed stream (``cursor-agent -p --output-format stream-json``).

One event per line, each with ``type`` and ``session_id``: ``system``/``init`` (the model's
display name, the working directory), ``user`` (the prompt), ``assistant`` (text), ``tool_call``
``started``/``completed`` pairs sharing a ``call_id``, ``thinking``, and the closing
``result``. The text of both roles sits in ``message.content`` as ``text`` parts.

- A call is ``tool_call`` holding one ``<kind>ToolCall`` object (``readToolCall``,
  ``shellToolCall``, ``editToolCall``...) with its ``args``, or ``function`` (``name``,
  ``arguments``) for other tools. Its name is the kind, capitalised (``Read``, ``Shell``),
  as Cursor's model names most of its tools. The ``completed`` event's ``result`` answers it:
  ``success`` as the tool's output (a read's ``content``, a shell's ``stdout``/``stderr``
  and a non-zero ``exitCode``, otherwise its fields as JSON), anything else (``error``,
  ``rejected``) as ``Error: `` and its fields. Calls made by one model call (the same
  ``model_call_id``, or with none, the calls started before any of them completed) are one
  assistant message, the text before them its text, their results right after it in call
  order; a call never completed gets the visible ``no_result`` repair, a completion whose
  start is missing becomes the ``orphan_result`` note.
- ``--stream-partial-output`` prints each reply three ways: pieces (``timestamp_ms``, no
  ``model_call_id``), then the whole of it again before a call (both fields) and at the end
  of the turn (neither). When the stream holds pieces, the reply is the pieces and the two
  repeats are counted in ``Loaded.skipped``, so no text is read twice; without pieces each
  ``assistant`` event is one reply.
- ``thinking`` text is kept in the ``meta`` of the reply it came before, never in its text.
- The stream records no usage and no per-call model: the init record's model (a display
  name such as ``Auto``) and each ``result`` (``duration_ms``, ``is_error``...) are kept in
  ``Loaded.extra`` (``session``, ``results``); a reply's ``timestamp_ms``, when printed, is
  its recorded time.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from ..messages import Message, ToolCall
from ._agent_log import args_text, as_text, done, iso_time, records, result_text, text_id
from ._stream_json import claude_event, cursor_event, stream_head
from .detect import Document
from .errors import FormatError
from .loaded import Loaded, Repair
from .logs import RECORDED_KEY, recorded
from .registry import Reader

__all__ = ["FORMAT", "READERS", "read_cursor_stream", "sniff_cursor_stream"]

FORMAT: Final = "cursor-stream"
SOURCE_KEY: Final = "cursor"

_SESSION_FIELDS: Final = ("session_id", "model", "cwd", "permissionMode", "apiKeySource")
_KINDS: Final = frozenset({"system", "user", "assistant", "tool_call", "thinking", "result"})


def sniff_cursor_stream(doc: Document, path: str | Path = "") -> bool:
    """A printed stream with ``user``/``assistant``/``tool_call`` events and no record only
    Claude Code prints (Cursor's own events need not be among the first: a run without tools
    prints only ``system``, ``user``, ``assistant`` and ``result``)."""
    first = stream_head(doc)
    if first is None or any(claude_event(r) for r in first):
        return False
    if any(cursor_event(r) for r in first):
        return True
    return all(r.get("type") in _KINDS for r in first) and any(
        r.get("type") in ("user", "assistant") and isinstance(r.get("message"), Mapping)
        for r in first
    )


class _Turn:
    """One model call's reply: its text, the calls it made, where it came from."""

    __slots__ = ("calls", "closed", "line", "model_call", "parts", "source", "thinking", "time")

    def __init__(self, line: int, source: dict[str, Any], thinking: list[str]) -> None:
        self.line = line
        self.parts: list[str] = []  # joined once: a long reply can come in thousands of pieces
        self.calls: list[ToolCall] = []
        self.source = source
        self.thinking = thinking
        self.model_call: str | None = None
        self.time: str | None = None
        self.closed = False  # a call of it completed: a later start is another model call

    def message(self) -> Message:
        source = dict(self.source)
        if self.thinking:
            source["thinking"] = "".join(self.thinking)
        return Message(
            "assistant",
            "".join(self.parts),
            tool_calls=tuple(self.calls),
            meta={SOURCE_KEY: source, RECORDED_KEY: recorded(timestamp=self.time)},
        )


def _text(record: Mapping[str, Any], path: str | Path, line: int) -> str:
    message = record.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, str | list):
        raise FormatError(
            path,
            f"a {record.get('type')!r} event: expected 'message': {{'content': [text parts]}}",
            line=line,
        )
    return as_text(content)


def _is_piece(record: Mapping[str, Any]) -> bool:
    return "timestamp_ms" in record and "model_call_id" not in record


def _tool(value: Any, path: str | Path, line: int) -> tuple[str, Any, Any]:
    """(name, arguments, result) of a ``tool_call`` object."""
    if not isinstance(value, Mapping):
        raise FormatError(path, "'tool_call': expected an object", line=line)
    function = value.get("function")
    if isinstance(function, Mapping):
        name = text_id(function.get("name")) or "tool"
        return name, function.get("arguments"), function.get("result")
    for key, body in value.items():
        if isinstance(key, str) and key.endswith("ToolCall") and isinstance(body, Mapping):
            kind = key[: -len("ToolCall")] or "tool"
            return kind[0].upper() + kind[1:], body.get("args"), body.get("result")
    raise FormatError(
        path, "'tool_call': expected one '<kind>ToolCall' object or 'function'", line=line
    )


def _output(result: Any) -> str:
    """What a completed call returned, as text (see the module docstring)."""
    if not isinstance(result, Mapping):
        return result_text(result)
    success = result.get("success")
    if isinstance(success, Mapping):
        if isinstance(success.get("content"), str):
            return str(success["content"])
        if isinstance(success.get("stdout"), str) or isinstance(success.get("stderr"), str):
            parts = [success.get(k) for k in ("stdout", "stderr")]
            text = "\n".join(p for p in parts if isinstance(p, str) and p)
            code = success.get("exitCode")
            return f"{text}\n[exit code {code}]" if code not in (0, None) else text
        return json.dumps(success, ensure_ascii=False)
    if success is not None:
        return result_text(success)
    return f"Error: {json.dumps(result, ensure_ascii=False)}"


class _Reading:
    """The stream read so far: replies, calls and their results, what is kept beside."""

    def __init__(self, pieces: bool) -> None:
        self.pieces = pieces
        self.skipped: Counter[str] = Counter()
        self.items: list[Message | _Turn] = []
        self.owner: dict[str, _Turn] = {}
        self.results: dict[str, Message] = {}
        self.thinking: list[str] = []
        self.turn: _Turn | None = None
        self.extra: dict[str, Any] = {}
        self.runs: list[dict[str, Any]] = []

    def _open(self, line: int, model_call: str | None) -> _Turn:
        self.turn = _Turn(line, {"line": line}, self.thinking)
        self.turn.model_call = model_call
        self.thinking = []
        self.items.append(self.turn)
        return self.turn

    def event(self, line: int, record: Mapping[str, Any], path: str | Path) -> None:
        kind = record.get("type")
        if kind == "user":
            text = _text(record, path, line)
            self.items.append(Message("user", text, meta={SOURCE_KEY: {"line": line}}))
            self.turn = None
        elif kind == "assistant":
            self._assistant(line, record, path)
        elif kind == "tool_call":
            self._tool_call(line, record, path)
        elif kind == "thinking":
            if isinstance(record.get("text"), str):
                self.thinking.append(record["text"])
            self.skipped["thinking"] += 1
        elif kind == "system" and record.get("subtype") == "init" and "session" not in self.extra:
            self.extra["session"] = {k: record[k] for k in _SESSION_FIELDS if k in record}
            self.skipped["system"] += 1
        elif kind == "result":
            self.runs.append({k: v for k, v in record.items() if k not in ("type", "result")})
            self.skipped["result"] += 1
        else:
            self.skipped[str(kind)] += 1

    def _assistant(self, line: int, record: Mapping[str, Any], path: str | Path) -> None:
        text = _text(record, path, line)
        model_call = text_id(record.get("model_call_id"))
        turn = self.turn
        if self.pieces and not _is_piece(record):
            self.skipped["assistant repeat"] += 1  # the pieces already read, printed whole
            if turn is not None:
                turn.model_call = turn.model_call or model_call
                turn.time = iso_time(record.get("timestamp_ms")) or turn.time
            return
        if turn is None or turn.calls or not self.pieces:
            turn = self._open(line, model_call)
        turn.parts.append(text)
        turn.time = iso_time(record.get("timestamp_ms")) or turn.time

    def _tool_call(self, line: int, record: Mapping[str, Any], path: str | Path) -> None:
        cid = text_id(record.get("call_id")) or f"cursor-stream-{line}"
        name, args, result = _tool(record.get("tool_call"), path, line)
        stage = record.get("subtype")
        model_call = text_id(record.get("model_call_id"))
        if stage == "started":
            turn = self.turn
            same = model_call is not None and turn is not None and model_call == turn.model_call
            other = model_call and turn is not None and turn.model_call and not same
            if turn is None or other or (turn.closed and not same):
                turn = self._open(line, model_call)
            turn.model_call = turn.model_call or model_call
            turn.calls.append(ToolCall(cid, name, args_text(args)))
            self.owner.setdefault(cid, turn)
        elif stage == "completed":
            source = {SOURCE_KEY: {"line": line}}
            answer = Message("tool", _output(result), tool_call_id=cid, name=name, meta=source)
            if cid in self.owner and cid not in self.results:
                self.results[cid] = answer
                self.owner[cid].closed = True
            else:
                self.items.append(answer)  # its start is not in the log: repaired as an orphan
        else:
            self.skipped[f"tool_call {stage}"] += 1

    def messages(self) -> list[Message]:
        out: list[Message] = []
        for item in self.items:
            if isinstance(item, Message):
                out.append(item)
                continue
            out.append(item.message())
            out.extend(
                self.results[c.id]
                for c in item.calls
                if self.owner.get(c.id) is item and c.id in self.results
            )
        return out


def read_cursor_stream(doc: Document, path: str | Path) -> Loaded:
    """Read a Cursor CLI stream-json log (see the module docstring). An event that cannot be
    read (no ``message`` content, no tool in ``tool_call``) is skipped and reported as a
    ``skipped_line`` repair, as a log's unreadable line is."""
    lines = records(doc)
    pieces = any(
        isinstance(r, Mapping) and r.get("type") == "assistant" and _is_piece(r) for _, r in lines
    )
    reading = _Reading(pieces)
    bad: list[Repair] = []
    for line, record in lines:
        if not isinstance(record, Mapping):
            reading.skipped["not a record"] += 1
            continue
        try:
            reading.event(line, record, path)
        except FormatError as exc:
            bad.append(Repair("skipped_line", "", -1, exc.reason, line=line))
    if reading.runs:
        reading.extra["results"] = reading.runs
    container = "jsonl" if doc.records is not None else "list"
    loaded = done(
        reading.messages(),
        FORMAT,
        path,
        skipped=reading.skipped,
        container=container,
        output="anthropic",
    )
    return attrs.evolve(loaded, extra=reading.extra, repairs=(*bad, *loaded.repairs))


READERS = (
    Reader(
        name=FORMAT,
        title="Cursor CLI headless stream (cursor-agent -p --output-format stream-json)",
        shape='one {"type": "system|user|assistant|tool_call|result", "session_id", ...} '
        "event per line, tool calls as started/completed pairs sharing a call_id",
        sniff=sniff_cursor_stream,
        read=read_cursor_stream,
        output="anthropic",
        priority=30,
    ),
)
