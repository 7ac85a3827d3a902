"""GitHub Copilot CLI session events (``~/.copilot/session-state/<id>/events.jsonl``).

One event per line: ``{"type", "data", "id", "timestamp", "parentId"}``. Chat turns come from
four kinds:

- ``system.message``: the system prompt. Copilot logs it again before each exchange; a copy
  equal to the first is skipped (counted), a different one mid-run is kept where it is, as
  the marked boundary every log reader makes of a mid-run system message.
- ``user.message``: ``data.content`` is what the person typed. When it is empty the turn was
  written by the CLI itself (autopilot's "you have not yet marked the task as complete"): its
  ``transformedContent`` is read instead, marked synthetic.
- ``assistant.message``: ``content`` and ``toolRequests`` (``toolCallId``, ``name``,
  ``arguments``): an assistant message with its calls; ``reasoningText`` stays in ``meta``.
- ``tool.execution_complete``: the result of the call with the same ``toolCallId``
  (``result.content``, the text the model was given; ``error.message`` on failure), placed
  right after the message that asked for it. A ``tool.execution_start`` no
  ``assistant.message`` asked for still names the tool and its arguments: its call is kept, on
  an assistant message of its own marked ``rebuilt``, so its result is not lost.

Everything else (``session.*``, ``assistant.turn_*``...) is skipped and counted. The log
records each message's output tokens (``outputTokens``) and the model in use
(``session.model_change``), not the input side: the model and timestamp are kept for
``replay --price``, the output tokens as ``output_tokens`` beside them (with no input side
there is no bill to check).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import args_text, done, head, record_source, result_text, text_id
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, recorded
from .registry import Reader

__all__ = ["FORMAT", "READERS", "read_copilot_cli", "sniff_copilot_cli"]

FORMAT: Final = "copilot-cli"
SOURCE_KEY: Final = "copilot_cli"

_KINDS: Final = frozenset(
    {
        "session.start",
        "user.message",
        "assistant.message",
        "system.message",
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.turn_start",
    }
)


def sniff_copilot_cli(doc: Document, path: str | Path = "") -> bool:
    """Copilot CLI events: records with ``type`` like ``session.start`` and a ``data`` object."""
    if doc.records is None:
        return False
    return any(
        isinstance(r, Mapping) and r.get("type") in _KINDS and isinstance(r.get("data"), Mapping)
        for r in head(doc)
    )


class _Turn:
    __slots__ = ("calls", "content", "line", "meta")

    def __init__(self, line: int, content: str, meta: dict[str, Any]) -> None:
        self.line = line
        self.content = content
        self.calls: list[ToolCall] = []
        self.meta = meta


def _source(record: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    return record_source(record, "event", **more)


def _result(data: Mapping[str, Any]) -> str:
    result = data.get("result")
    if isinstance(result, Mapping) and "content" in result:
        return result_text(result["content"])
    error = data.get("error")
    if isinstance(error, Mapping) and "message" in error:
        return f"Error: {result_text(error['message'])}"
    if error is not None:
        return f"Error: {result_text(error)}"
    return result_text(result)


def read_copilot_cli(doc: Document, path: str | Path) -> Loaded:
    """Read a Copilot CLI ``events.jsonl`` (see the module docstring)."""
    if doc.records is None:
        raise FormatError(path, "read as copilot-cli: expected one event per line (JSONL)")
    skipped: Counter[str] = Counter()
    items: list[_Turn | Message] = []
    owner: dict[str, _Turn] = {}
    results: dict[str, Message] = {}
    system: str | None = None
    model: str | None = None
    rebuilt: _Turn | None = None
    for line, record in doc.records:
        kind = record.get("type")
        data = record.get("data")
        if not isinstance(data, Mapping):
            skipped[str(kind)] += 1
            continue
        if kind != "tool.execution_start" and kind != "tool.execution_complete":
            rebuilt = None
        if kind == "session.model_change" and isinstance(data.get("newModel"), str):
            model = data["newModel"]
        if kind == "session.start" and isinstance(data.get("selectedModel"), str):
            model = data["selectedModel"]
        if kind == "system.message":
            text = result_text(data.get("content"))
            if system is None and not items:
                system = text
                items.append(Message("system", text, meta={SOURCE_KEY: _source(record)}))
            elif text == system:
                skipped["system.message repeated"] += 1
            else:
                items.append(Message("system", text, meta={SOURCE_KEY: _source(record)}))
        elif kind == "user.message":
            typed = result_text(data.get("content"))
            sent = data.get("transformedContent")
            source = _source(record, transformedContent=sent)
            if typed.strip():
                items.append(
                    Message("user", typed, id=text_id(record.get("id")), meta={SOURCE_KEY: source})
                )
            elif isinstance(sent, str) and sent.strip():
                items.append(
                    Message(
                        "user",
                        sent,
                        id=text_id(record.get("id")),
                        meta={SOURCE_KEY: source, SYNTHETIC_KEY: True},
                    )
                )
            else:
                skipped["empty user.message"] += 1
        elif kind == "assistant.message":
            extra = {
                "model": model,
                "messageId": data.get("messageId"),
                "outputTokens": data.get("outputTokens"),
                "reasoningText": data.get("reasoningText"),
            }
            turn = _Turn(line, result_text(data.get("content")), _source(record, **extra))
            requests = data.get("toolRequests")
            for index, request in enumerate(requests if isinstance(requests, list) else ()):
                if not isinstance(request, Mapping):
                    raise FormatError(path, f"toolRequests[{index}]: expected an object", line=line)
                cid = text_id(request.get("toolCallId")) or f"line{line}-call{index}"
                turn.calls.append(
                    ToolCall(
                        cid,
                        text_id(request.get("name")) or "tool",
                        args_text(request.get("arguments")),
                    )
                )
                owner.setdefault(cid, turn)
            items.append(turn)
        elif kind == "tool.execution_start":
            started = text_id(data.get("toolCallId"))
            if started is not None and started not in owner:
                if rebuilt is None:
                    rebuilt = _Turn(line, "", _source(record, model=model, rebuilt=True))
                    items.append(rebuilt)
                tool = text_id(data.get("toolName")) or "tool"
                rebuilt.calls.append(ToolCall(started, tool, args_text(data.get("arguments"))))
                owner[started] = rebuilt
            else:
                skipped[kind] += 1
        elif kind == "tool.execution_complete":
            cid = text_id(data.get("toolCallId")) or f"line{line}-result"
            asker = owner.get(cid)
            called = next((c.name for c in asker.calls if c.id == cid), None) if asker else None
            meta = {SOURCE_KEY: _source(record, success=data.get("success"))}
            result = Message("tool", _result(data), tool_call_id=cid, name=called, meta=meta)
            if asker is not None and cid not in results:
                results[cid] = result
            else:
                items.append(result)  # an orphan or a second answer: repaired visibly
        else:
            skipped[str(kind)] += 1
    messages: list[Message] = []
    for item in items:
        if isinstance(item, Message):
            messages.append(item)
            continue
        messages.append(
            Message(
                "assistant",
                item.content,
                tool_calls=tuple(item.calls),
                meta={
                    SOURCE_KEY: item.meta,
                    RECORDED_KEY: recorded(
                        timestamp=item.meta.get("timestamp"),
                        model=item.meta.get("model"),
                        output_tokens=item.meta.get("outputTokens"),
                    ),
                },
            )
        )
        messages.extend(results[c.id] for c in item.calls if c.id in results)
    return done(messages, FORMAT, path, skipped=skipped)


READERS = (
    Reader(
        name=FORMAT,
        title="GitHub Copilot CLI session events (~/.copilot/session-state/*/events.jsonl)",
        shape='one {"type": "session.start|user.message|assistant.message|tool.execution_*", '
        '"data", "id", "timestamp"} event per line',
        sniff=sniff_copilot_cli,
        read=read_copilot_cli,
        output="openai",
        priority=25,
    ),
)
