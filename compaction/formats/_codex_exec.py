"""Codex ``codex exec --json`` event streams: what a headless Codex run prints, kept from CI.

Not the rollout Codex writes under ``~/.codex/sessions`` (the ``codex`` reader), but the JSONL
stream of ``ThreadEvent`` s ``codex exec --json`` prints to stdout, one per line:

- ``thread.started`` (``thread_id``) opens a run; ``turn.started`` a turn (one prompt and
  every model call and command it led to); ``turn.completed`` (``usage``) or ``turn.failed``
  (``error.message``) ends it; ``error`` (``message``) is a stream error, shown to the person;
- ``item.started`` / ``item.updated`` / ``item.completed`` carry an ``item`` (``id``,
  ``type`` and its fields), whole each time: the last one seen is the item, put where it was
  first seen. ``item.plan.delta`` (``item_id``, ``delta``) streams a plan's text;
- ``agent_message`` and ``plan`` items are assistant text; a ``reasoning`` item (the reasoning
  summary) stays in ``meta`` of the next assistant message of its turn;
- ``command_execution`` (``command``, ``aggregated_output``, ``exit_code``, ``status``),
  ``mcp_tool_call`` (``server``, ``tool``, ``arguments``, ``result.content`` or
  ``error.message``), ``file_change`` (``changes``, ``status``), ``collab_tool_call`` and
  ``web_search`` (``query``) items are each a call (named by the item type, or
  ``server__tool`` for MCP) and, once completed, its result right after it. An item the stream
  never completed (the run was killed mid-command) gets the visible ``no_result``, as a
  ``request_user_input`` event does (the answer is not in the stream). The stream records no
  file change output and no search results: their results say only that;
- ``todo_list`` (the plan's checklist) and ``error`` items (CLI warnings to the person) never
  reached the model as text: skipped and counted, the errors kept in ``Loaded.extra``.

**The prompt is not in the stream**: it is the command-line argument (or stdin) of ``codex
exec``. Each turn opens with a user message marked synthetic that says so
([`PROMPT_NOT_RECORDED`][]); nothing is made up in its place, so such a log has no task.

**Usage**: ``turn.completed.usage`` is Codex's running total for the thread when the turn
ends (``input_tokens``, of which ``cached_input_tokens`` were cache reads, and
``output_tokens``), summed over every model call of the turn (and, in a resumed thread, the
turns before). It is no single call's bill, so it is kept as ``turn_usage`` in
``meta["recorded"]`` of the turn's last assistant message and in ``Loaded.extra["turns"]``,
never as ``usage``. The stream names no model and holds no times.

An event whose fields have the wrong types is left out and reported as a skipped line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import args_text, as_text, count, done, head, records, result_text, text_id
from .detect import Document
from .loaded import Loaded, Repair
from .logs import RECORDED_KEY, recorded
from .registry import Reader

__all__ = ["FORMAT", "PROMPT_NOT_RECORDED", "READER", "read_codex_exec", "sniff_codex_exec"]

FORMAT: Final = "codex-exec"
SOURCE_KEY: Final = "codex_exec"

#: The user message that opens each turn in place of the prompt the stream does not hold.
PROMPT_NOT_RECORDED: Final = (
    "[codex exec: the prompt that started this turn is not in its --json stream (it was given "
    "on the command line); not recorded]"
)

_ITEM_EVENTS: Final = frozenset({"item.started", "item.updated", "item.completed"})
_TURN_ENDS: Final = frozenset({"turn.completed", "turn.failed"})
_OTHER_EVENTS: Final = ("thread.started", "turn.started", "item.plan.delta", "request_user_input")
_EVENTS: Final = frozenset({*_OTHER_EVENTS, *_TURN_ENDS, *_ITEM_EVENTS, "error"})
_TEXTS: Final = frozenset({"agent_message", "plan"})
_CALLS: Final = frozenset(
    {"command_execution", "mcp_tool_call", "file_change", "collab_tool_call", "web_search"}
)
#: The fields an item of each type must hold as text (the ones the reader reads as text).
_TEXT_FIELDS: Final = {
    **dict.fromkeys(("agent_message", "plan", "reasoning"), ("text",)),
    "command_execution": ("command",),
    "mcp_tool_call": ("server", "tool"),
}
#: The type each of these item fields must have when it is there at all.
_FIELD_TYPES: Final = (
    ("status", str),
    ("aggregated_output", str),
    ("exit_code", int),
    ("result", Mapping),
    ("error", Mapping),
    ("changes", list),
)


def _item_problem(item: Any) -> str | None:
    if not isinstance(item, Mapping):
        return "'item' is not an object"
    if text_id(item.get("id")) is None:
        return "'item.id' is not a non-empty string"
    kind = item.get("type")
    if not isinstance(kind, str):
        return "'item.type' is not text"
    for field in _TEXT_FIELDS.get(kind, ()):
        if not isinstance(item.get(field), str):
            return f"'item.{field}' of a {kind} item is not text"
    for field, types in _FIELD_TYPES:
        value = item.get(field)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            return f"'item.{field}' has the wrong type ({type(value).__name__})"
    return None


def _problem(record: Mapping[str, Any]) -> str | None:
    """Why ``record`` cannot be read as the event it says it is (None when it can)."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return "'type' is not text"
    if kind in _ITEM_EVENTS:
        return _item_problem(record.get("item"))
    if kind == "turn.completed" and not isinstance(record.get("usage", {}), Mapping):
        return "'usage' is not an object"
    if kind == "turn.failed" and not isinstance(record.get("error") or {}, Mapping):
        return "'error' is not an object"
    if kind == "item.plan.delta" and (
        text_id(record.get("item_id")) is None or not isinstance(record.get("delta"), str)
    ):
        return "'item_id' or 'delta' is not text"
    if kind == "request_user_input" and text_id(record.get("call_id")) is None:
        return "'call_id' is not a non-empty string"
    return None


def _strong(record: Any) -> bool:
    """An event no other format writes: the dotted thread, turn and item events."""
    if not isinstance(record, Mapping):
        return False
    kind = record.get("type")
    if kind == "thread.started":
        return isinstance(record.get("thread_id"), str)
    if kind in _ITEM_EVENTS:
        return isinstance(record.get("item"), Mapping)
    return kind in ("turn.started", *_TURN_ENDS) and "payload" not in record


def sniff_codex_exec(doc: Document, path: str | Path = "") -> bool:
    """A ``codex exec --json`` stream: JSONL that opens with one of its events and holds a
    ``thread.started``, ``turn.*`` or ``item.*`` event among its first lines."""
    if doc.records is None:
        return False
    first = head(doc)
    return first[0].get("type") in _EVENTS and any(_strong(r) for r in first)


@attrs.define(slots=True)
class _Turn:
    line: int
    implicit: bool
    status: str = "open"
    usage: dict[str, Any] | None = None
    error: str | None = None
    last: int | None = None  # index of its last assistant message

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"line": self.line, "status": self.status}
        if self.usage is not None:
            out["usage"] = _split(self.usage)
        if self.error is not None:
            out["error"] = self.error
        return out


@attrs.define(slots=True)
class _Item:
    line: int
    data: Mapping[str, Any]
    turn: _Turn
    completed: bool = False
    deltas: list[str] = attrs.field(factory=list)


class _Stream:
    """The events of one stream, in order: turns, and items where they were first seen."""

    def __init__(self) -> None:
        self.seq: list[_Turn | _Item] = []
        self.open: dict[tuple[int, str], _Item] = {}
        self.turns: list[_Turn] = []
        self.turn: _Turn | None = None
        self.run = 0
        self.threads: list[str] = []
        self.errors: list[str] = []
        self.skipped: Counter[str] = Counter()
        self.bad: list[Repair] = []

    def start_turn(self, line: int, *, implicit: bool) -> _Turn:
        self.turn = _Turn(line, implicit)
        self.turns.append(self.turn)
        self.seq.append(self.turn)
        return self.turn

    def item(self, line: int, key: tuple[int, str], data: Mapping[str, Any]) -> _Item:
        """The open item ``key``, or a new one; an id seen again after its item completed
        starts a new item (ids restart with each run)."""
        entry = self.open.get(key)
        if entry is None:
            turn = self.turn or self.start_turn(line, implicit=True)
            entry = _Item(line, data, turn)
            self.open[key] = entry
            self.seq.append(entry)
        return entry

    def add(self, line: int, record: Mapping[str, Any]) -> None:
        problem = _problem(record)
        kind = record.get("type")
        if problem is not None:
            self.bad.append(Repair("skipped_line", "", -1, f"a {kind!r} event: {problem}", line))
            return
        if kind in _ITEM_EVENTS:
            data = record["item"]
            entry = self.item(line, (self.run, data["id"]), data)
            entry.data = data
            if kind == "item.completed":
                entry.completed = True
                del self.open[(self.run, data["id"])]
        elif kind == "item.plan.delta":
            stub = {"id": record["item_id"], "type": "plan", "text": ""}
            self.item(line, (self.run, record["item_id"]), stub).deltas.append(record["delta"])
        elif kind == "request_user_input":
            data = {**record, "id": record["call_id"], "type": "request_user_input"}
            self.item(line, (self.run, f"\0{record['call_id']}"), data)
        elif kind == "turn.started":
            self.start_turn(line, implicit=False)
        elif kind in _TURN_ENDS:
            turn = self.turn or self.start_turn(line, implicit=True)
            turn.status = "completed" if kind == "turn.completed" else "failed"
            usage = record.get("usage")
            turn.usage = dict(usage) if isinstance(usage, Mapping) else None
            error = record.get("error")
            if isinstance(error, Mapping):
                turn.error = result_text(error.get("message"))
            self.turn = None
        elif kind == "thread.started":
            self.run += 1
            self.threads.append(str(record.get("thread_id")))
            self.turn = None
            self.skipped["thread.started"] += 1
        elif kind == "error":
            self.errors.append(result_text(record.get("message")))
            self.skipped["error event"] += 1
        else:
            self.skipped[str(kind)] += 1


def _source(entry: _Item, **more: Any) -> dict[str, Any]:
    data = entry.data
    out = {"item_id": data["id"], "type": data["type"], "line": entry.line}
    for key in ("status", "exit_code"):
        if data.get(key) is not None:
            out[key] = data[key]
    out.update({k: v for k, v in more.items() if v is not None})
    return out


def _mcp_result(data: Mapping[str, Any]) -> str:
    error = data.get("error")
    if isinstance(error, Mapping):
        return f"Error: {result_text(error.get('message'))}"
    result = data.get("result")
    if not isinstance(result, Mapping):
        return ""
    blocks = result.get("content")
    texts = []
    for block in blocks if isinstance(blocks, list) else ():
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, Mapping):
            texts.append(f"[{block.get('type') if isinstance(block.get('type'), str) else 'part'}]")
    if not texts and result.get("structured_content") is not None:
        return result_text(result["structured_content"])
    return "\n".join(texts)


def _call(entry: _Item) -> tuple[ToolCall, str | None]:
    """The call an item is, and its result (None: the stream has none)."""
    data = entry.data
    kind = data["type"]
    answered = entry.completed and data.get("status") != "in_progress"
    result: str | None = None
    args: Any
    if kind == "command_execution":
        name, args = kind, {"command": data["command"]}
        result = as_text(data.get("aggregated_output"))
    elif kind == "mcp_tool_call":
        qualified = f"{data['server']}__{data['tool']}"
        name, args = qualified if qualified != "__" else kind, data.get("arguments")
        result = _mcp_result(data)
    elif kind == "file_change":
        name, args = kind, {"changes": data.get("changes") or []}
        result = f"[file change {data.get('status')}: the stream records no other output]"
    elif kind == "web_search":
        name, args = kind, {k: data[k] for k in ("query", "action") if k in data}
        result = "[web search: its results are not recorded in the stream]"
    elif kind == "collab_tool_call":
        tool = data.get("tool")
        name = f"collab_{tool}" if isinstance(tool, str) and tool else kind
        args = {k: data[k] for k in ("receiver_thread_ids", "prompt") if k in data}
        result = result_text(data.get("agents_states"))
    else:  # request_user_input: the person's answer is not in the stream
        name, args = kind, {"questions": data.get("questions")}
        answered = False
    return ToolCall(data["id"], name, args_text(args)), result if answered else None


def _messages(stream: _Stream) -> list[Message]:
    out: list[Message] = []
    reasoning: list[str] = []
    for entry in stream.seq:
        if isinstance(entry, _Turn):
            if reasoning:
                stream.skipped["reasoning with no later message in its turn"] += len(reasoning)
                reasoning = []
            source = {"line": entry.line, "prompt": "not recorded", "implicit": entry.implicit}
            meta = {SOURCE_KEY: source, SYNTHETIC_KEY: True}
            out.append(Message("user", PROMPT_NOT_RECORDED, meta=meta))
            continue
        kind = entry.data["type"]
        if kind == "reasoning":
            reasoning.append(entry.data["text"])
            continue
        more: dict[str, Any] = {"reasoning": reasoning or None}
        if kind in _TEXTS:
            text = entry.data["text"]
            if not text and entry.deltas:  # a plan the run never completed: its pieces
                text = "".join(entry.deltas)
            if not text.strip():
                stream.skipped[f"{kind} item without text"] += 1
                continue
            message = Message("assistant", text, meta={SOURCE_KEY: _source(entry, **more)})
            result = None
        elif kind in _CALLS or kind == "request_user_input":
            call, result = _call(entry)
            meta = {SOURCE_KEY: _source(entry, **more)}
            message = Message("assistant", "", tool_calls=(call,), meta=meta)
        else:  # todo_list, error items and types this reader does not know
            stream.skipped[f"{kind} item"] += 1
            if kind == "error" and isinstance(entry.data.get("message"), str):
                stream.errors.append(entry.data["message"])
            continue
        reasoning = []
        out.append(message)
        entry.turn.last = len(out) - 1
        if result is not None:
            call = message.tool_calls[0]
            source = _source(entry)
            out.append(
                Message(
                    "tool", result, tool_call_id=call.id, name=call.name, meta={SOURCE_KEY: source}
                )
            )
    if reasoning:
        stream.skipped["reasoning with no later message in its turn"] += len(reasoning)
    if all(SYNTHETIC_KEY in m.meta for m in out):
        # Only the stand-ins for prompts: the run left nothing of its own to read.
        stream.skipped["turn with nothing recorded"] += len(out)
        return []
    for turn in stream.turns:
        if turn.usage is not None and turn.last is not None:
            m = out[turn.last]
            got = recorded(turn_usage=_split(turn.usage))
            out[turn.last] = m.replace(meta={**m.meta, RECORDED_KEY: got})
    return out


def _split(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Codex's usage as the provider's split: ``input_tokens`` includes the cache reads."""
    total = count(usage.get("input_tokens"))
    cached = min(count(usage.get("cached_input_tokens")), total)
    return {
        "cache_read": cached,
        "uncached": total - cached,
        "output": count(usage.get("output_tokens")),
        "raw_usage": dict(usage),
    }


def read_codex_exec(doc: Document, path: str | Path) -> Loaded:
    """Read a ``codex exec --json`` stream (see the module docstring)."""
    stream = _Stream()
    for line, record in records(doc):
        stream.add(line, record)
    messages = _messages(stream)
    loaded = done(messages, FORMAT, path, skipped=stream.skipped)
    turns = [t.summary() for t in stream.turns]
    extra = {"threads": stream.threads, "turns": turns, "errors": stream.errors}
    extra = {k: v for k, v in extra.items() if v}
    repairs = (*stream.bad, *loaded.repairs)
    return attrs.evolve(loaded, extra=extra, repairs=repairs)


READER: Final = Reader(
    name=FORMAT,
    title="Codex headless run (codex exec --json event stream)",
    shape='one {"type": "thread.started|turn.started|item.started|item.updated|'
    'item.completed|turn.completed|turn.failed|error", ...} event per line',
    sniff=sniff_codex_exec,
    read=read_codex_exec,
    output="openai",
    priority=20,
)
