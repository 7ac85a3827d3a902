"""Cursor agent transcripts (``~/.cursor/projects/*/agent-transcripts/*.jsonl``).

One line per message: ``{"role": "user" | "assistant", "message": {"content": [blocks]}}``.
The blocks are Anthropic-like: ``text``, ``thinking``, ``tool_use`` (``name``, ``input``;
``tool_call`` in some versions), and, in user lines, ``tool_result`` / ``tool-result``. The text
sits in ``message.content``, not in a top-level ``content``: read as an OpenAI chat, every
message came out empty.

Cursor writes no call ids and, in most transcripts, no tool results at all: each call gets an
id of its own (``cursor-<line>-<n>``), a result in a later user line answers the oldest open
call (of that name, when it says), and a call the transcript never answers gets the visible
``no_result`` repair, so the count of calls is right and nothing pretends to be output.
``thinking`` blocks are kept in ``meta``; lines without ``role`` (``turn_ended``...) are
skipped and counted. The transcript records no usage, model or time.

The CLI's printed stream (``cursor-agent -p --output-format stream-json``) is another shape,
read by the ``cursor-stream`` reader (``compaction.formats._cursor_stream``).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..messages import Message, ToolCall
from ._agent_log import args_text, as_text, done, head, records, result_text, text_id
from ._cursor_stream import READERS as STREAM_READERS
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, recorded
from .registry import Reader

__all__ = ["FORMAT", "READERS", "read_cursor", "sniff_cursor"]

FORMAT: Final = "cursor"
SOURCE_KEY: Final = "cursor"

_CALLS: Final = frozenset({"tool_use", "tool_call"})
_RESULTS: Final = frozenset({"tool_result", "tool-result"})


def _is_line(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and value.get("role") in ("user", "assistant")
        and "content" not in value
        and isinstance(value.get("message"), Mapping)
        and "content" in value["message"]
    )


def sniff_cursor(doc: Document, path: str | Path = "") -> bool:
    """Cursor lines: a ``role`` with the content inside ``message``."""
    first = [r for r in head(doc) if isinstance(r, Mapping) and "role" in r]
    return bool(first) and _is_line(first[0])


class _Waiting:
    """The calls of the last assistant line still unanswered: a result takes the call it names
    by id, else the oldest of its tool name, else the oldest. Each lookup is O(1) amortised."""

    def __init__(self, calls: list[ToolCall]) -> None:
        self.by_id = {c.id: c for c in calls}
        self.queue: deque[ToolCall] = deque(calls)
        self.by_name: dict[str, deque[ToolCall]] = {}
        for c in calls:
            self.by_name.setdefault(c.name, deque()).append(c)

    def _first(self, queue: deque[ToolCall] | None) -> ToolCall | None:
        while queue:
            if queue[0].id in self.by_id:
                return queue[0]
            queue.popleft()
        return None

    def take(self, wanted: str | None, name: str | None) -> ToolCall | None:
        if wanted is not None:
            call = self.by_id.get(wanted)
        elif name is not None:
            call = self._first(self.by_name.get(name))
        else:
            call = self._first(self.queue)
        if call is not None:
            del self.by_id[call.id]
        return call


def _blocks(content: Any, path: str | Path, line: int) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(b, Mapping) for b in content):
        raise FormatError(path, "message.content: expected text or a list of blocks", line=line)
    return content


def read_cursor(doc: Document, path: str | Path) -> Loaded:
    """Read a Cursor agent transcript (see the module docstring)."""
    skipped: Counter[str] = Counter()
    messages: list[Message] = []
    waiting = _Waiting([])
    lines = records(doc)
    for line, record in lines:
        if not isinstance(record, Mapping) or "role" not in record:
            kind = record.get("type") if isinstance(record, Mapping) else None
            skipped[str(kind or "line without role")] += 1
            continue
        if not _is_line(record):
            raise FormatError(
                path,
                "expected {'role': 'user' | 'assistant', 'message': {'content': [...]}}",
                line=line,
            )
        blocks = _blocks(record["message"]["content"], path, line)
        source: dict[str, Any] = {"line": line}
        for key in ("model", "metadata"):
            if key in record:
                source[key] = record[key]
        if record["role"] == "assistant":
            texts: list[str] = []
            calls: list[ToolCall] = []
            thinking: list[Any] = []
            for block in blocks:
                kind = block.get("type")
                if kind in _CALLS:
                    cid = text_id(block.get("id")) or f"cursor-{line}-{len(calls) + 1}"
                    name = text_id(block.get("name")) or "tool"
                    calls.append(ToolCall(cid, name, args_text(block.get("input"))))
                elif kind == "thinking":
                    thinking.append(block.get("thinking"))
                elif isinstance(block.get("text"), str):
                    texts.append(block["text"])
            if thinking:
                source["thinking"] = thinking
            messages.append(
                Message(
                    "assistant",
                    "\n".join(texts),
                    tool_calls=tuple(calls),
                    meta={
                        SOURCE_KEY: source,
                        RECORDED_KEY: recorded(model=text_id(record.get("model"))),
                    },
                )
            )
            waiting = _Waiting(calls)
            continue
        rest = []
        for block in blocks:
            if block.get("type") not in _RESULTS:
                rest.append(block)
                continue
            wanted = text_id(block.get("tool_use_id")) or text_id(block.get("id"))
            named = text_id(block.get("name"))
            call = waiting.take(wanted, named)
            cid = call.id if call is not None else (wanted or f"cursor-{line}-result")
            content = block.get("content")
            text = as_text(content) if isinstance(content, list) else result_text(content)
            messages.append(
                Message(
                    "tool",
                    text,
                    tool_call_id=cid,
                    name=named or (call.name if call is not None else None),
                    meta={SOURCE_KEY: dict(source)},
                )
            )
        if rest:
            messages.append(Message("user", as_text(rest), meta={SOURCE_KEY: source}))
    return done(messages, FORMAT, path, skipped=skipped, output="anthropic")


READERS = (
    Reader(
        name=FORMAT,
        title="Cursor agent transcript (~/.cursor/projects/*/agent-transcripts/*.jsonl)",
        shape='one {"role": "user|assistant", "message": {"content": [blocks]}} line per message',
        sniff=sniff_cursor,
        read=read_cursor,
        output="anthropic",
        priority=40,
    ),
    *STREAM_READERS,
)
