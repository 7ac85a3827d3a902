"""Gemini CLI ``gemini -p ... --output-format stream-json``: what a headless run prints.

Not the session Gemini CLI records under ``~/.gemini/tmp`` (the ``gemini-cli`` reader), but
the JSONL events its non-interactive mode prints to stdout (its ``StreamJsonFormatter``), each
with a ``type`` and an ISO ``timestamp``:

- ``init`` (``session_id``, ``model``: the model the CLI was configured with) opens a run;
- ``message`` (``role``: ``user`` or ``assistant``, ``content``, ``delta``): the ``user``
  message is the prompt as the person gave it (before ``@file`` expansion), the person's
  words; the model's reply is streamed as ``assistant`` pieces with ``delta: true``, put back
  together into one message (a whole ``assistant`` message repeating the pieces already
  read is not read twice);
- ``tool_use`` (``tool_name``, ``tool_id``, ``parameters``) is a call of the reply it follows;
  ``tool_result`` (``tool_id``, ``status``: ``success`` or ``error``, ``output``,
  ``error.message``) its result, right after it. A call with no result (the run was killed)
  gets the visible ``no_result``;
- ``error`` (``severity``, ``message``: loop detected, turn limit, blocked) is the CLI's own
  notice to the person: skipped and counted, kept in ``Loaded.extra["errors"]``;
- ``result`` (``status``, ``error``, ``stats``) ends the run. Its ``stats`` (the session's
  ``input_tokens``, which include the ``cached`` ones, ``output_tokens``, ``duration_ms``,
  ``tool_calls`` and ``models``, the same per model) go to ``Loaded.extra``: they are the
  run's totals, not one call's, so no call gets them as its usage.

Each assistant message records the ``init`` model and the time of its last piece. The
``output`` of a tool result is what the CLI displayed (its ``resultDisplay``), which is not
always what the model was sent (a file read shows a line, the model got the file): token
counts of such a log can be below what the model read.

An event whose fields have the wrong types is left out and reported as a skipped line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from ..messages import Message, ToolCall
from ._agent_log import args_text, done, head, iso_time, records, result_text, text_id
from .detect import Document
from .loaded import Loaded, Repair
from .logs import RECORDED_KEY, recorded
from .registry import Reader

__all__ = ["FORMAT", "READER", "read_gemini_stream", "sniff_gemini_stream"]

FORMAT: Final = "gemini-cli-stream"
SOURCE_KEY: Final = "gemini_cli_stream"

_EVENTS: Final = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})
_MESSAGE_KEYS: Final = frozenset({"type", "timestamp", "role", "content", "delta"})


def _problem(record: Mapping[str, Any]) -> str | None:
    """Why ``record`` cannot be read as the event it says it is (None when it can)."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return "'type' is not text"
    if kind == "message":
        if record.get("role") not in ("user", "assistant"):
            return "'role' is neither user nor assistant"
        if not isinstance(record.get("content"), str):
            return "'content' is not text"
    if kind in ("tool_use", "tool_result") and text_id(record.get("tool_id")) is None:
        return "'tool_id' is not a non-empty string"
    if kind == "tool_use" and text_id(record.get("tool_name")) is None:
        return "'tool_name' is not a non-empty string"
    if kind == "tool_result":
        if record.get("output") is not None and not isinstance(record.get("output"), str):
            return "'output' is not text"
        if record.get("error") is not None and not isinstance(record.get("error"), Mapping):
            return "'error' is not an object"
    if kind == "result" and not isinstance(record.get("stats") or {}, Mapping):
        return "'stats' is not an object"
    return None


def _strong(record: Any) -> bool:
    """An event of this stream's own shape (not just its type names, which others share)."""
    if not isinstance(record, Mapping):
        return False
    kind = record.get("type")
    if kind == "init":
        return isinstance(record.get("session_id"), str) and "model" in record
    if kind == "tool_use":
        return "tool_name" in record and "tool_id" in record
    if kind == "tool_result":
        return "tool_id" in record and "status" in record
    if kind == "message":
        return (
            record.keys() <= _MESSAGE_KEYS
            and "timestamp" in record
            and isinstance(record.get("content"), str)
        )
    return False


def sniff_gemini_stream(doc: Document, path: str | Path = "") -> bool:
    """Gemini CLI stream-json: JSONL that opens with one of its events and holds an ``init``,
    ``tool_use``, ``tool_result`` or bare ``message`` event of its shape in its first lines."""
    if doc.records is None:
        return False
    first = head(doc)
    return first[0].get("type") in _EVENTS and any(_strong(r) for r in first)


@attrs.define(slots=True)
class _Reply:
    """The model's reply being put together: its streamed pieces and its calls."""

    line: int
    model: str | None
    pieces: list[str] = attrs.field(factory=list)
    calls: list[ToolCall] = attrs.field(factory=list)
    timestamp: str | None = None
    repeated: int = 0

    def message(self) -> Message:
        source = {"line": self.line, "pieces": len(self.pieces)}
        if self.repeated:
            source["repeated"] = self.repeated
        meta = {
            SOURCE_KEY: source,
            RECORDED_KEY: recorded(timestamp=self.timestamp, model=self.model),
        }
        return Message("assistant", "".join(self.pieces), tool_calls=tuple(self.calls), meta=meta)


class _Stream:
    def __init__(self) -> None:
        self.out: list[Message] = []
        self.reply: _Reply | None = None
        self.model: str | None = None
        self.sessions: list[str] = []
        self.results: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.names: dict[str, str] = {}
        self.skipped: Counter[str] = Counter()
        self.bad: list[Repair] = []

    def close(self) -> None:
        if self.reply is not None:
            self.out.append(self.reply.message())
            self.reply = None

    def open(self, line: int) -> _Reply:
        if self.reply is None:
            self.reply = _Reply(line, self.model)
        return self.reply

    def assistant(self, line: int, record: Mapping[str, Any]) -> None:
        reply = self.open(line)
        content = record["content"]
        if record.get("delta") is not True and reply.pieces and content == "".join(reply.pieces):
            reply.repeated += 1  # the whole reply again, after its pieces
            self.skipped["assistant message repeating its streamed pieces"] += 1
        else:
            reply.pieces.append(content)
        reply.timestamp = iso_time(record.get("timestamp")) or reply.timestamp

    def result(self, line: int, record: Mapping[str, Any]) -> None:
        self.close()
        tool_id = record["tool_id"]
        output, error = record.get("output"), record.get("error")
        parts = []
        said = error.get("message") if isinstance(error, Mapping) else None
        if said is not None:
            parts.append(f"Error: {result_text(said)}")
        if output and output != said:
            parts.append(output)
        if not parts and record.get("status") == "error":
            parts.append("Error")
        source = {"line": line, "status": record.get("status"), "output_shown": output is not None}
        stamp = iso_time(record.get("timestamp"))
        if stamp is not None:
            source["timestamp"] = stamp
        self.out.append(
            Message(
                "tool",
                "\n".join(parts),
                tool_call_id=tool_id,
                name=self.names.get(tool_id),
                meta={SOURCE_KEY: source},
            )
        )

    def add(self, line: int, record: Mapping[str, Any]) -> None:
        problem = _problem(record)
        kind = record.get("type")
        if problem is not None:
            self.bad.append(Repair("skipped_line", "", -1, f"a {kind!r} event: {problem}", line))
            return
        if kind == "message" and record["role"] == "assistant":
            self.assistant(line, record)
        elif kind == "message":
            self.close()
            source = {"line": line, "timestamp": iso_time(record.get("timestamp"))}
            self.out.append(Message("user", record["content"], meta={SOURCE_KEY: source}))
        elif kind == "tool_use":
            reply = self.open(line)
            name, params = record["tool_name"], record.get("parameters")
            reply.calls.append(ToolCall(record["tool_id"], name, args_text(params)))
            self.names[record["tool_id"]] = name
            reply.timestamp = iso_time(record.get("timestamp")) or reply.timestamp
        elif kind == "tool_result":
            self.result(line, record)
        elif kind == "init":
            self.close()
            self.model = text_id(record.get("model"))
            self.sessions.append(str(record.get("session_id")))
            self.skipped["init"] += 1
        elif kind == "error":
            kept = {k: record.get(k) for k in ("severity", "message", "timestamp")}
            self.errors.append({"line": line, **kept})
            self.skipped["error notice"] += 1
        elif kind == "result":
            self.close()
            kept = {k: record[k] for k in ("status", "error", "stats") if k in record}
            self.results.append({"line": line, **kept})
            self.skipped["result"] += 1
        else:
            self.skipped[str(kind)] += 1


def read_gemini_stream(doc: Document, path: str | Path) -> Loaded:
    """Read a Gemini CLI stream-json log (see the module docstring)."""
    stream = _Stream()
    for line, record in records(doc):
        stream.add(line, record)
    stream.close()
    loaded = done(stream.out, FORMAT, path, skipped=stream.skipped)
    extra: dict[str, Any] = {}
    if stream.sessions:
        extra["session_id"] = stream.sessions[-1]
    if len(stream.sessions) > 1:
        extra["sessions"] = stream.sessions
    if stream.model is not None:
        extra["model"] = stream.model
    if stream.results:
        last = stream.results[-1]
        extra.update({k: last[k] for k in ("status", "error", "stats") if k in last})
    if len(stream.results) > 1:
        extra["results"] = stream.results
    if stream.errors:
        extra["errors"] = stream.errors
    return attrs.evolve(loaded, extra=extra, repairs=(*stream.bad, *loaded.repairs))


READER: Final = Reader(
    name=FORMAT,
    title="Gemini CLI headless run (gemini -p --output-format stream-json)",
    shape='one {"type": "init|message|tool_use|tool_result|error|result", "timestamp", ...} '
    "event per line",
    sniff=sniff_gemini_stream,
    read=read_gemini_stream,
    output="openai",
    priority=25,
)
