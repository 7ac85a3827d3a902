"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

A rollout is one ``{"timestamp", "type", "payload"}`` record per line:

- ``response_item``: a Responses API item (``message``, ``reasoning``, ``function_call`` /
  ``function_call_output``, ``custom_tool_call`` / ``custom_tool_call_output``, hosted calls),
  read through [`compaction.adapters.responses`][] exactly as a Responses conversation is:
  a run of assistant-side items is one assistant message, an output answers its ``call_id``;
- ``session_meta``: the session (id, cwd, version); its ``instructions`` (or
  ``base_instructions.text``), when present, are the system prompt;
- ``turn_context``: the model of the calls that follow (kept as their recorded model);
- ``event_msg``: UI events. ``token_count`` is kept as the provider usage of the model call
  it reports (``last_token_usage``: ``input_tokens`` of which ``cached_input_tokens`` were
  cache reads, and ``output_tokens``) in ``meta["recorded"]``; the others repeat what the
  response items hold (``user_message``, ``agent_message``) and are counted as skipped;
- ``compacted``: Codex's own compaction. Its summary (``payload.message``) is kept where it
  happened, as a user message marked a native compaction summary (standing for the messages
  before it), never dropped.

A ``token_count`` belongs to the model call still open when it comes (older Codex versions
write it just before the call's items, newer ones just after them): to the last assistant step
if no tool output or user message came since and that step has no usage yet, else to the next
step. Text Codex writes into the user role (``<environment_context>``,
``<user_instructions>``, AGENTS.md) is marked synthetic. Unanswered calls and mid-run
developer messages are repaired as every log's are ([`compaction.formats.logs.as_log`][]).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from ..adapters import AdapterError
from ..adapters.responses import from_responses
from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message
from ._codex_exec import READER as CODEX_EXEC
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, as_log, native_compaction, recorded
from .registry import Reader
from .validate_loaded import finish

__all__ = ["READERS", "read_codex"]

SOURCE_KEY: Final = "codex"

_TYPES: Final = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
)

#: Openings of the text Codex itself puts in the user role.
_HARNESS: Final = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
    "<turn_aborted>",
)


def _people(item: Mapping[str, Any]) -> bool:
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message" and item.get("role") in ("user", "system", "developer"):
        return True
    return isinstance(kind, str) and kind.endswith("_call_output")


def _usage(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    info = payload.get("info")
    last = info.get("last_token_usage") if isinstance(info, Mapping) else None
    if not isinstance(last, Mapping):
        return None
    numbers = {k: v for k, v in last.items() if isinstance(v, int) and not isinstance(v, bool)}
    total_in = max(numbers.get("input_tokens", 0), 0)
    cached = min(max(numbers.get("cached_input_tokens", 0), 0), total_in)
    return {
        "cache_read": cached,
        "uncached": total_in - cached,
        "output": max(numbers.get("output_tokens", 0), 0),
        "raw_usage": dict(last),
    }


class _Step:
    __slots__ = ("line", "model", "timestamp", "usage")

    def __init__(self, line: int, model: str | None) -> None:
        self.line = line
        self.model = model
        self.timestamp: Any = None
        self.usage: dict[str, Any] | None = None


class _Rollout:
    """The records of one rollout, split where Codex compacted."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.segments: list[tuple[list[tuple[int, Any, Mapping[str, Any]]], Any]] = []
        self.items: list[tuple[int, Any, Mapping[str, Any]]] = []
        self.steps: list[_Step] = []
        self.open: _Step | None = None
        self.pending: dict[str, Any] | None = None
        self.model: str | None = None
        self.system: str | None = None
        self.session: dict[str, Any] = {}
        self.skipped: Counter[str] = Counter()

    def item(self, line: int, record: Mapping[str, Any], payload: Mapping[str, Any]) -> None:
        if _people(payload):
            self.open = None
        elif self.open is None:
            self.open = _Step(line, self.model)
            self.steps.append(self.open)
            if self.pending is not None:
                self.open.usage, self.pending = self.pending, None
        if self.open is not None:
            self.open.timestamp = record.get("timestamp")
        self.items.append((line, record.get("timestamp"), payload))

    def event(self, payload: Mapping[str, Any]) -> None:
        kind = payload.get("type")
        usage = _usage(payload) if kind == "token_count" else None
        if usage is None:
            self.skipped[f"event_msg {kind}"] += 1
            return
        if self.open is not None and self.open.usage is None:
            self.open.usage = usage
        else:
            self.pending = usage

    def add(self, line: int, record: Mapping[str, Any]) -> None:
        kind, payload = record.get("type"), record.get("payload")
        if not isinstance(payload, Mapping):
            raise FormatError(
                self.path, f"a {kind!r} record: 'payload' must be an object", line=line
            )
        if kind == "response_item":
            self.item(line, record, payload)
        elif kind == "event_msg":
            self.event(payload)
        elif kind == "turn_context":
            model = payload.get("model")
            self.model = model if isinstance(model, str) else self.model
        elif kind == "session_meta":
            self.session = {k: payload[k] for k in ("id", "cwd", "cli_version") if k in payload}
            text = payload.get("instructions")
            base = payload.get("base_instructions")
            if not isinstance(text, str) and isinstance(base, Mapping):
                text = base.get("text")
            if isinstance(text, str) and text.strip():
                self.system = text
        elif kind == "compacted":
            self.segments.append((self.items, (line, record)))
            self.items, self.open = [], None
        else:
            self.skipped[str(kind)] += 1


def _messages(
    rollout: _Rollout, items: list[tuple[int, Any, Mapping[str, Any]]], steps: list[_Step]
) -> list[Message]:
    try:
        converted = from_responses([payload for _, _, payload in items])
    except AdapterError as exc:
        line = items[exc.index][0] if exc.index is not None and exc.index < len(items) else None
        raise FormatError(rollout.path, str(exc), line=line) from None
    out = []
    lines = iter(items)
    for m in converted:
        line, stamp, _ = next(lines)
        source = {"line": line, "timestamp": stamp}
        meta: dict[str, Any] = {**m.meta, SOURCE_KEY: source}
        if m.role == "assistant" and steps:
            step = steps.pop(0)
            usage = step.usage or {}
            meta[RECORDED_KEY] = recorded(timestamp=step.timestamp, model=step.model, **usage)
        if m.role == "user" and m.content.lstrip().startswith(_HARNESS):
            meta[SYNTHETIC_KEY] = True
        out.append(m.replace(meta=meta))
        # The next message starts after the items this one took.
        taken = len(m.meta["responses"].get("items", ())) if m.role == "assistant" else 1
        for _ in range(taken - 1):
            next(lines, None)
    return out


def read_codex(doc: Document, path: str) -> Loaded:
    records = doc.records if doc.records is not None else ()
    rollout = _Rollout(path)
    for line, record in records:
        rollout.add(line, record)
    rollout.segments.append((rollout.items, None))
    steps = list(rollout.steps)
    messages: list[Message] = []
    if rollout.system is not None:
        messages.append(Message("system", rollout.system, meta={SOURCE_KEY: rollout.session}))
    since = len(messages)
    for items, compacted in rollout.segments:
        mine = [s for s in steps if items and items[0][0] <= s.line <= items[-1][0]]
        messages.extend(_messages(rollout, items, mine))
        if compacted is None:
            continue
        line, record = compacted
        text = record["payload"].get("message")
        history = record["payload"].get("replacement_history")
        details = {"line": line, "timestamp": record.get("timestamp")}
        if isinstance(history, list):
            details["replacement_items"] = len(history)
        summary = Message("user", text if isinstance(text, str) else "", meta={SOURCE_KEY: details})
        messages.append(native_compaction(summary, agent="codex", replaces=messages[since:]))
        since = len(messages)
    fixed, repairs = as_log(messages)
    return finish(
        Loaded(
            fixed,
            "codex",
            path,
            repairs=repairs,
            skipped=dict(rollout.skipped),
            container="jsonl",
            extra={"session": rollout.session} if rollout.session else {},
        )
    )


def _sniff(doc: Document, path: str) -> bool:
    if doc.records is None:
        return False
    first = doc.records[0][1]
    return (
        first.get("type") in _TYPES
        and isinstance(first.get("payload"), Mapping)
        and "timestamp" in first
        and not {"role", "uuid", "message"} & first.keys()
    )


READERS = (
    Reader(
        name="codex",
        title="Codex CLI rollout (~/.codex/sessions/**/rollout-*.jsonl)",
        shape='one {"timestamp", "type": "session_meta|turn_context|response_item|event_msg|'
        'compacted", "payload"} record per line',
        sniff=_sniff,
        read=read_codex,
        output="openai",
        priority=20,
    ),
    CODEX_EXEC,  # the `codex exec --json` stream: its own shape, read in its own module
)
