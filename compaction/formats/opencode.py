"""OpenCode session exports (``opencode export [sessionID] > session.json``).

The export is one JSON object: ``{"info": {...the session...}, "messages": [{"info":
{...}, "parts": [...]}], "todos": [...]}``. A message's ``info`` has its ``role``, ``id``,
``time.created`` (milliseconds) and, for an assistant message, ``modelID``, ``providerID``,
``tokens`` (``input``, ``output``, ``reasoning``, ``cache.read``, ``cache.write``), ``cost``,
``error`` and ``summary``. Its ``parts`` are typed: ``text``, ``reasoning``, ``tool``,
``file``, ``step-start``, ``step-finish``, ``compaction``, ``subtask``, ``patch``,
``snapshot``, ``agent``, ``retry``. It is read the way OpenCode itself turns a session into
the model's messages:

- an assistant message can hold several model calls: each ``step-start`` begins one, so the
  message is split there, each step an assistant message of its own (its text and calls)
  followed by its calls' results. A ``tool`` part is both a call and its result: ``callID``,
  ``tool`` and ``state.input`` are the call; ``state.output`` (``completed``) or
  ``state.error`` (``error``) the result. A ``pending`` or ``running`` call never finished
  and gets the visible ``no_result``, as in every log;
- each step's ``step-finish`` holds that call's ``tokens`` and ``cost``: its recorded usage
  (``tokens.input`` is already the uncached input, OpenCode subtracts the cache itself;
  ``reasoning`` is billed as output). A one-step message without one uses the message's own;
- an assistant message with an ``error`` (other than an abort after some output) was never
  sent to the model again: skipped and counted, as OpenCode does;
- in a user message, text parts marked ``synthetic`` (the contents of a file the person
  mentioned, system reminders, "Continue if you have next steps") are OpenCode's, not the
  person's: they become a separate user message marked synthetic, after the person's own
  text; ``ignored`` text never reached the model and is skipped;
- OpenCode's own compaction is a user message with a ``compaction`` part (sent as "What did
  we do so far?", marked synthetic) answered by an assistant message with ``summary: true``:
  that summary is kept where it happened as a native compaction standing for everything
  before the request. A ``subtask`` part is sent as "The following tool was executed by the
  user" (synthetic, its prompt in ``meta``).

OpenCode's on-disk storage (``storage/message/<session>/<id>.json`` and
``storage/part/<message>/<id>.json``) keeps one message's info or one part per file: no
single file of it is a conversation, so only the export is read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import args_text, count, done, iso_time, result_text, text_id
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, native_compaction, recorded
from .registry import Reader

__all__ = ["READERS", "read_opencode", "sniff_opencode"]

FORMAT: Final = "opencode"
SOURCE_KEY: Final = "opencode"

#: What OpenCode sends in place of a ``compaction`` or ``subtask`` part.
COMPACTION_PROMPT: Final = "What did we do so far?"
SUBTASK_PROMPT: Final = "The following tool was executed by the user"
#: Files OpenCode turns into synthetic text parts (their part itself is not sent).
_TEXT_FILES: Final = frozenset({"text/plain", "application/x-directory"})
#: Parts that record the run, never sent to the model.
_RECORD_PARTS: Final = frozenset({"patch", "snapshot", "agent", "retry"})


def _entry(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("info"), Mapping)
        and value["info"].get("role") in ("user", "assistant")
        and isinstance(value.get("parts"), list)
    )


def sniff_opencode(doc: Document, path: str = "") -> bool:
    """An OpenCode export: a session ``info`` with an ``id`` and ``messages`` that are each
    ``{"info": {"role"...}, "parts": [...]}``."""
    value = doc.value
    if doc.records is not None or not isinstance(value, Mapping):
        return False
    info, messages = value.get("info"), value.get("messages")
    if not isinstance(info, Mapping) or not isinstance(info.get("id"), str):
        return False
    if not isinstance(messages, list):
        return False
    if not messages:  # an empty session still says it is one, to be refused as empty
        return "directory" in info or "title" in info
    return all(_entry(m) for m in messages[:8])


def _source(info: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": text_id(info.get("id"))}
    time = info.get("time")
    stamp = iso_time(time.get("created")) if isinstance(time, Mapping) else None
    if stamp is not None:
        out["timestamp"] = stamp
    out.update({k: v for k, v in more.items() if v is not None})
    return out


def _usage(tokens: Any) -> dict[str, Any]:
    if not isinstance(tokens, Mapping) or "input" not in tokens:
        return {}
    cache = tokens.get("cache")
    cache = cache if isinstance(cache, Mapping) else {}
    return {
        "uncached": count(tokens.get("input")),
        "cache_read": count(cache.get("read")),
        "cache_write": count(cache.get("write")),
        "output": count(tokens.get("output")) + count(tokens.get("reasoning")),
        "raw_usage": dict(tokens),
    }


def _text(part: Mapping[str, Any]) -> str:
    text = part.get("text")
    return text if isinstance(text, str) else ""


def _is_synthetic_text(part: Mapping[str, Any]) -> bool:
    # The flag is OpenCode's own word for what it wrote; text is not guessed at (a reminder
    # OpenCode wraps around a queued message is added when it sends, never stored).
    return part.get("synthetic") is True


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.messages: list[Message] = []
        self.skipped: Counter[str] = Counter()
        self.since = 0  # first message a later native compaction stands for

    def parts(self, index: int, entry: Any) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
        if not _entry(entry):
            raise FormatError(
                self.path,
                f"messages[{index}]: expected {{'info': {{'role': 'user'|'assistant', ...}}, "
                "'parts': [...]}",
            )
        parts = entry["parts"]
        for at, part in enumerate(parts):
            if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                raise FormatError(
                    self.path, f"messages[{index}].parts[{at}]: expected an object with a 'type'"
                )
        return entry["info"], parts

    def user(self, index: int, info: Mapping[str, Any], parts: list[Mapping[str, Any]]) -> None:
        own: list[str] = []
        harness: list[str] = []
        files: list[dict[str, Any]] = []
        compaction: dict[str, Any] | None = None
        subtasks: list[dict[str, Any]] = []
        for part in parts:
            kind = part["type"]
            if kind == "text":
                if part.get("ignored") is True:
                    self.skipped["ignored text part"] += 1
                elif _is_synthetic_text(part):
                    harness.append(_text(part))
                else:
                    own.append(_text(part))
            elif kind == "file":
                if part.get("mime") not in _TEXT_FILES:
                    files.append({k: part.get(k) for k in ("mime", "filename")})
            elif kind == "compaction":
                compaction = {k: part.get(k) for k in ("auto", "overflow") if k in part}
                harness.append(COMPACTION_PROMPT)
            elif kind == "subtask":
                subtasks.append({k: part.get(k) for k in ("agent", "description", "prompt")})
                harness.append(SUBTASK_PROMPT)
            else:
                self.skipped[f"{kind} part"] += 1
        text = "\n".join(t for t in own if t)
        if text.strip() or files:
            meta: dict[str, Any] = {SOURCE_KEY: _source(info, index=index)}
            if files:
                meta[SOURCE_KEY]["files"] = files
            if not text.strip():
                names = ", ".join(str(f.get("filename") or f.get("mime")) for f in files)
                text, meta[SYNTHETIC_KEY] = f"[attached: {names}]", True
            self.messages.append(Message("user", text, id=text_id(info.get("id")), meta=meta))
        note = "\n".join(t for t in harness if t)
        if note.strip():
            source = _source(info, index=index, harness=True)
            if compaction is not None:
                source["compaction_request"] = compaction
            if subtasks:
                source["subtasks"] = subtasks
            self.messages.append(
                Message("user", note, meta={SOURCE_KEY: source, SYNTHETIC_KEY: True})
            )
        if not text.strip() and not files and not note.strip():
            self.skipped["user message without text"] += 1

    def assistant(
        self, index: int, info: Mapping[str, Any], parts: list[Mapping[str, Any]]
    ) -> None:
        error = info.get("error")
        if error:
            aborted = isinstance(error, Mapping) and error.get("name") == "MessageAbortedError"
            if not (aborted and any(p["type"] not in ("step-start", "reasoning") for p in parts)):
                self.skipped["assistant message with an error"] += 1
                return
        for part in parts:
            if part["type"] in _RECORD_PARTS:
                self.skipped[f"{part['type']} part"] += 1
        steps = _steps(parts)
        made: list[Message] = []
        for number, step in enumerate(steps):
            fallback = info.get("tokens") if len(steps) == 1 else None
            made.extend(self.step(index, number, info, step, fallback))
        if not made:
            self.skipped["assistant message without text or calls"] += 1
            return
        if info.get("summary") is True:
            replaced = self.messages[self.since : _request_at(self.messages)]
            for at, m in enumerate(made):
                made[at] = native_compaction(m, agent=FORMAT, replaces=replaced)
            self.messages.extend(made)
            self.since = len(self.messages)
            return
        self.messages.extend(made)

    def step(
        self,
        index: int,
        number: int,
        info: Mapping[str, Any],
        parts: Sequence[Mapping[str, Any]],
        fallback: Any,
    ) -> list[Message]:
        texts = [_text(p) for p in parts if p["type"] == "text"]
        reasoning = [_text(p) for p in parts if p["type"] == "reasoning"]
        tools = [p for p in parts if p["type"] == "tool"]
        finish = next((p for p in parts if p["type"] == "step-finish"), None)
        calls: list[ToolCall] = []
        results: list[Message] = []
        for at, part in enumerate(tools):
            state = part.get("state")
            state = state if isinstance(state, Mapping) else {}
            name = part.get("tool") if isinstance(part.get("tool"), str) else "tool"
            cid = text_id(part.get("callID")) or f"{info.get('id')}-{number}-{at}"
            calls.append(ToolCall(cid, name or "tool", args_text(state.get("input"))))
            answer = _answer(state)
            if answer is None:
                continue  # never finished: repaired as no_result
            source = {"status": state.get("status"), "title": state.get("title")}
            time = state.get("time")
            if isinstance(time, Mapping) and time.get("compacted") is not None:
                source["pruned"] = iso_time(time.get("compacted"))
            results.append(
                Message(
                    "tool",
                    answer,
                    tool_call_id=cid,
                    name=name,
                    meta={SOURCE_KEY: {k: v for k, v in source.items() if v is not None}},
                )
            )
        text = "\n".join(t for t in texts if t)
        if not text.strip() and not calls:
            return []
        usage = _usage(finish.get("tokens") if finish is not None else fallback)
        cost = finish.get("cost") if finish is not None else info.get("cost")
        model = info.get("modelID") if isinstance(info.get("modelID"), str) else None
        source = _source(info, index=index, step=number, provider=info.get("providerID"))
        if reasoning:
            source["reasoning"] = "\n".join(reasoning)
        extra: dict[str, Any] = dict(usage)
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            extra["cost"] = cost
        meta = {
            SOURCE_KEY: source,
            RECORDED_KEY: recorded(timestamp=source.get("timestamp"), model=model, **extra),
        }
        mid = text_id(info.get("id"))
        ident = mid if number == 0 or mid is None else f"{mid}-{number}"
        return [Message("assistant", text, tool_calls=tuple(calls), id=ident, meta=meta), *results]


def _steps(parts: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """``parts`` split where a ``step-start`` begins a new model call."""
    steps: list[list[Mapping[str, Any]]] = [[]]
    for part in parts:
        if part["type"] == "step-start" and steps[-1]:
            steps.append([])
        steps[-1].append(part)
    return steps


def _answer(state: Mapping[str, Any]) -> str | None:
    """A tool part's result as the model was given it (None: it never finished)."""
    status = state.get("status")
    if status == "completed":
        return result_text(state.get("output"))
    if status == "error":
        meta = state.get("metadata")
        # An interrupted call's partial output is what OpenCode sends in place of the error.
        if (
            isinstance(meta, Mapping)
            and meta.get("interrupted") is True
            and (isinstance(meta.get("output"), str))
        ):
            return str(meta["output"])
        return f"Error: {result_text(state.get('error'))}"
    return None


def _request_at(messages: Sequence[Message]) -> int:
    """Where the compaction request the summary answers is (the messages before it are what
    the summary stands for)."""
    for at in range(len(messages) - 1, -1, -1):
        source = messages[at].meta.get(SOURCE_KEY)
        if isinstance(source, Mapping) and "compaction_request" in source:
            return at
    return len(messages)


def read_opencode(doc: Document, path: str) -> Loaded:
    """Read an OpenCode session export (see the module docstring)."""
    value = doc.value
    if doc.records is not None or not isinstance(value, Mapping):
        raise FormatError(path, "expected the JSON object 'opencode export' writes")
    entries = value.get("messages")
    if not isinstance(entries, list):
        raise FormatError(path, "'messages': expected a list of {'info', 'parts'}")
    reader = _Reader(path)
    for index, entry in enumerate(entries):
        info, parts = reader.parts(index, entry)
        if info["role"] == "user":
            reader.user(index, info, parts)
        else:
            reader.assistant(index, info, parts)
    loaded = done(reader.messages, FORMAT, path, skipped=reader.skipped, container="object")
    session = value.get("info")
    keep = ("id", "title", "directory", "version", "parentID")
    extra = {k: session[k] for k in keep if isinstance(session, Mapping) and k in session}
    return attrs.evolve(loaded, extra={"session": extra}) if extra else loaded


READERS = (
    Reader(
        name=FORMAT,
        title="OpenCode session export (opencode export [sessionID])",
        shape='{"info": {"id", ...}, "messages": [{"info": {"role", ...}, "parts": [{"type": '
        '"text|tool|reasoning|step-start|step-finish|..."}]}]}',
        sniff=sniff_opencode,
        read=read_opencode,
        output="openai",
        priority=25,
    ),
)
