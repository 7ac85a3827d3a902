"""Qwen Code sessions (``~/.qwen/tmp/<project>/chats/<sessionId>.jsonl``).

Qwen Code began as a fork of Gemini CLI but records its sessions its own way (its
``ChatRecordingService``): one record per line, never rewritten, each
``{"uuid", "parentUuid", "sessionId", "timestamp", "type", "subtype"?, "message"?, ...}``
with ``type`` one of ``user``, ``assistant``, ``tool_result`` or ``system`` and ``message`` a
Gemini ``Content`` (``role``, ``parts``: ``text``, ``thought``, ``functionCall``,
``functionResponse``, ``inlineData``...). The Gemini CLI reader does not take these files (no
``projectHash``, no ``content``), and Claude Code's, which would, finds no text in ``parts``.

The conversation is rebuilt the way Qwen Code resumes a session:

- the records form a tree: the active conversation is the chain of ``parentUuid`` links back
  from the last record. Records off that chain were rewound away (``/rewind`` re-roots the
  chain), so they are skipped and counted. A parent the file no longer holds (a line cut in
  the middle) is bridged to the records before it, as Qwen does, and counted
  ([`compaction.formats._qwen_tree`][]);
- several records with one ``uuid`` are fragments of one message: their parts are joined in
  order, the last ``usageMetadata`` and the first ``model`` kept;
- ``assistant`` records are the model's turns: ``functionCall`` parts are its calls, ``thought``
  parts stay in ``meta``; ``usageMetadata`` (``promptTokenCount`` includes
  ``cachedContentTokenCount``) and ``model`` are the recorded call;
- ``tool_result`` records hold ``functionResponse`` parts (``response.output``, or
  ``response.error``): each is the tool message of the call with its ``id``; a call never
  answered gets the visible ``no_result``;
- ``user`` records without a ``subtype`` are the person's prompts; a ``mid_turn_user_message``
  is the person's too (typed while tools ran: it goes after the results, as Qwen sends it).
  Every other user record was written by the harness (background ``notification``, ``cron``
  prompt, ``goal_runtime`` nudge, another agent's message) and is marked synthetic, as is what
  Qwen puts beside the person's words (``<system-reminder>`` blocks, in parts of their own or
  inside the prompt's part; the hook context part): it is split off into a synthetic message
  of its own, so the person's message holds only what they typed;
- ``system`` records never reach the model, except ``chat_compression``: Qwen's own
  compaction, whose ``compressedHistory`` (the summary turns, then a copy of the last turns
  it kept) replaced what the model saw. Its summary is kept where it happened, as a native
  compaction; the kept copies are not read twice. A ``slash_command`` record removes the user
  record just before it when that was the command's own text and never went to the model.
  ``realtime_message`` turns were never in the model's history either.

A record that is not an object with a ``uuid``, ``type`` and ``parentUuid`` is left out and
reported as a skipped line, as Qwen's loader skips it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import args_text, done, head, iso_time, text_id
from ._qwen_tree import SOURCE_KEY, Record, active_chain, is_record, origin, qwen_only, usage_split
from .detect import Document
from .loaded import Loaded
from .logs import RECORDED_KEY, native_compaction, recorded
from .registry import Reader

__all__ = ["FORMAT", "READERS", "read_qwen_code", "sniff_qwen_code"]

FORMAT: Final = "qwen-code"

_PERSON_SUBTYPES: Final = (None, "mid_turn_user_message")
#: The hook context Qwen Code adds as the last part of a prompt.
_HOOK_CONTEXT: Final = "<qwen:user-prompt-submit-context>"
_OPEN, _CLOSE = "<system-reminder>", "</system-reminder>"


def _reminders(text: str) -> tuple[str, list[str]]:
    """``text`` without its ``<system-reminder>`` blocks, and the blocks. Qwen Code puts its
    reminders (plan mode, subagents, recalled memory) in parts of their own before the prompt,
    and the IDE's after the prompt in the same part. A block never closed is left in place;
    each search starts where the last ended, so a hostile text costs one pass."""
    kept: list[str] = []
    blocks: list[str] = []
    at = 0
    while (start := text.find(_OPEN, at)) >= 0:
        end = text.find(_CLOSE, start)
        if end < 0:
            break
        kept.append(text[at:start])
        blocks.append(text[start : end + len(_CLOSE)])
        at = end + len(_CLOSE)
    kept.append(text[at:])
    return "".join(kept).strip() if blocks else text, blocks


def sniff_qwen_code(doc: Document, path: str | Path = "") -> bool:
    """A Qwen Code session: tree records (``uuid``, ``parentUuid``, ``sessionId``) whose
    ``message`` is a Gemini ``Content`` with ``parts``, or ``tool_result`` / ``systemPayload``
    records, among the first few."""
    return any(is_record(r) and qwen_only(r) for r in head(doc))


def _text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping) and isinstance(part.get("text"), str) and not part.get("thought"):
        return part["text"]
    return None


def _other(part: Any) -> str:
    """A part that is neither text nor a call, named (``[inlineData]``) so it is not lost."""
    kind = next(iter(part), "part") if isinstance(part, Mapping) and part else "part"
    return f"[{kind}]"


def _content(value: Any) -> tuple[Any, list[Any] | None]:
    """A Content as (role, parts), to tell a copy of one from another."""
    if isinstance(value, Mapping):
        parts = value.get("parts")
        return value.get("role"), parts if isinstance(parts, list) else None
    return None, None


def _response_text(response: Any) -> str:
    if isinstance(response, Mapping):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return f"Error: {response[key]}" if key == "error" else response[key]
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False, default=str)


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.messages: list[Message] = []
        self.skipped: Counter[str] = Counter()
        self.held: list[Message] = []  # mid-turn words, sent after the run of results
        self.contents: list[tuple[Any, Any]] = []  # each record's (role, parts), in order
        self.since = 0  # first message after the last compaction
        self.open: list[ToolCall] = []

    def emit(self, message: Message) -> None:
        if message.role != "tool" and self.held:
            self.messages.extend(self.held)
            self.held.clear()
        self.messages.append(message)

    def assistant(self, rec: Record) -> None:
        texts, thoughts, calls = [], [], []
        for index, part in enumerate(rec.parts):
            call = part.get("functionCall") if isinstance(part, Mapping) else None
            if isinstance(call, Mapping):
                name = call.get("name")
                cid = text_id(call.get("id")) or f"{rec.data['uuid']}-call-{index}"
                calls.append(
                    ToolCall(
                        cid,
                        name if isinstance(name, str) and name else "tool",
                        args_text(call.get("args")),
                    )
                )
            elif isinstance(part, Mapping) and part.get("thought"):
                thoughts.append(part.get("text"))
            elif (text := _text(part)) is not None:
                texts.append(text)
            else:
                texts.append(_other(part))
        text = "\n".join(t for t in texts if t)
        if not text.strip() and not calls:
            self.skipped["assistant record without text or calls"] += 1
            return
        model = rec.data.get("model") if isinstance(rec.data.get("model"), str) else None
        usage = usage_split(rec.data.get("usageMetadata"))
        source = origin(
            rec,
            model=model,
            thoughts=thoughts or None,
            usageMetadata=rec.data.get("usageMetadata") if usage else None,
        )
        stamp = iso_time(rec.data.get("timestamp"))
        meta = {SOURCE_KEY: source, RECORDED_KEY: recorded(timestamp=stamp, model=model, **usage)}
        self.open = calls
        self.emit(Message("assistant", text, tool_calls=calls, id=rec.data["uuid"], meta=meta))

    def tool_result(self, rec: Record) -> None:
        status = rec.data.get("toolCallResult")
        status = status.get("status") if isinstance(status, Mapping) else None
        extra: list[str] = []
        answered = False
        for part in rec.parts:
            response = part.get("functionResponse") if isinstance(part, Mapping) else None
            if not isinstance(response, Mapping):
                text = _text(part)
                extra.append(text if text is not None else _other(part))
                continue
            name = response.get("name") if isinstance(response.get("name"), str) else None
            cid = text_id(response.get("id"))
            if cid is None:  # no id: the oldest open call of that name
                cid = next((c.id for c in self.open if c.name == name), "unknown")
            self.open = [c for c in self.open if c.id != cid]
            answered = True
            self.emit(
                Message(
                    "tool",
                    _response_text(response.get("response")),
                    tool_call_id=cid,
                    name=name,
                    meta={SOURCE_KEY: origin(rec, status=status)},
                )
            )
        if extra and answered:
            # Text a tool returned beside its response (a note on binary output) is its output.
            last = self.messages[-1]
            self.messages[-1] = last.replace(content="\n".join([last.content, *extra]))
        elif extra:
            self.user(rec, synthetic=True)

    def user(self, rec: Record, *, synthetic: bool) -> None:
        mine: list[str] = []
        harness: list[str] = []
        for part in rec.parts:
            text = _text(part)
            if text is None:
                (harness if synthetic else mine).append(_other(part))
            elif synthetic or text.lstrip().startswith(_HOOK_CONTEXT):
                harness.append(text)
            else:
                said, blocks = _reminders(text)
                harness.extend(blocks)
                mine.append(said)
        payload = rec.data.get("systemPayload")
        shown = payload.get("displayText") if isinstance(payload, Mapping) else None
        source = origin(rec, subtype=rec.data.get("subtype"), displayText=shown)
        if any(t.strip() for t in harness):
            meta = {SOURCE_KEY: source, SYNTHETIC_KEY: True}
            uuid = rec.data["uuid"] if synthetic else f"{rec.data['uuid']}-harness"
            self.emit(Message("user", "\n".join(harness), id=uuid, meta=meta))
        if any(t.strip() for t in mine):
            message = Message(
                "user",
                "\n".join(t for t in mine if t),
                id=rec.data["uuid"],
                meta={SOURCE_KEY: source},
            )
            if (
                rec.data.get("subtype") == "mid_turn_user_message"
                and self.messages
                and (self.messages[-1].role == "tool")
            ):
                self.held.append(message)
            else:
                self.emit(message)
        elif not any(t.strip() for t in harness):
            self.skipped["empty user record"] += 1

    def compression(self, rec: Record) -> None:
        payload = rec.data.get("systemPayload")
        payload = payload if isinstance(payload, Mapping) else {}
        history = payload.get("compressedHistory")
        if not isinstance(history, list):
            self.skipped["chat_compression without compressedHistory"] += 1
            return
        kept = 0  # the longest end of it that copies the end of what was read
        while kept < min(len(history), len(self.contents)) and (
            _content(history[-1 - kept]) == self.contents[-1 - kept]
        ):
            kept += 1
        lead = history[: len(history) - kept]
        texts = [t for c in lead for p in _content(c)[1] or () if (t := _text(p))]
        if not any(t.strip() for t in texts):
            self.skipped["chat_compression with no summary text"] += 1
            return
        info = payload.get("info")
        info = info if isinstance(info, Mapping) else {}
        details = {k: info[k] for k in ("originalTokenCount", "newTokenCount") if k in info}
        source = origin(rec, subtype="chat_compression", kept=kept, entries=len(history))
        summary = Message(
            "user", "\n\n".join(texts), id=rec.data["uuid"], meta={SOURCE_KEY: source}
        )
        self.emit(
            native_compaction(
                summary, agent=FORMAT, replaces=self.messages[self.since :], **details
            )
        )
        self.since = len(self.messages)

    def slash(self, rec: Record, previous: Record | None) -> None:
        payload = rec.data.get("systemPayload")
        payload = payload if isinstance(payload, Mapping) else {}
        self.skipped["system/slash_command"] += 1
        if (
            previous is not None
            and payload.get("phase") == "result"
            and payload.get("sentToModel") is not True
            and previous.data.get("type") == "user"
            and previous.data.get("subtype") is None
            and [_text(p) for p in previous.parts] == [payload.get("rawCommand")]
            and self.messages
            and self.messages[-1].id == previous.data["uuid"]
        ):
            self.messages.pop()  # the command's own text, which Qwen never sends to the model
            self.skipped["slash command text (never sent to the model)"] += 1

    def read(self, chain: list[Record]) -> None:
        previous: Record | None = None
        for rec in chain:
            kind, subtype = rec.data["type"], rec.data.get("subtype")
            if kind == "system":
                if subtype == "chat_compression":
                    self.compression(rec)
                elif subtype == "slash_command":
                    self.slash(rec, previous)
                    if previous is not None and previous.data["type"] == "user":
                        previous = None  # a command fences off the input before it
                else:
                    self.skipped[f"system/{subtype or 'record'}"] += 1
                continue
            if subtype in ("realtime_message", "code_mode_tool_result"):
                self.skipped[f"{kind}/{subtype} (not in the model's history)"] += 1
                continue
            if kind == "assistant":
                self.assistant(rec)
            elif kind == "tool_result":
                self.tool_result(rec)
            else:
                person = subtype in _PERSON_SUBTYPES and rec.data.get("provenance") in (
                    None,
                    "real_user",
                )
                self.user(rec, synthetic=not person)
            self.contents.append((_content(rec.data.get("message"))[0], rec.parts))
            previous = rec
        self.messages.extend(self.held)


def read_qwen_code(doc: Document, path: str | Path) -> Loaded:
    """Read a Qwen Code session (see the module docstring)."""
    chain, skipped, bad = active_chain(doc, str(path))
    reader = _Reader(str(path))
    reader.read(chain)
    skipped.update(reader.skipped)
    loaded = done(reader.messages, FORMAT, path, skipped=skipped)
    return attrs.evolve(loaded, repairs=(*bad, *loaded.repairs)) if bad else loaded


READERS = (
    Reader(
        name=FORMAT,
        title="Qwen Code session (~/.qwen/tmp/*/chats/<session>.jsonl)",
        shape='one {"uuid", "parentUuid", "sessionId", "type": "user|assistant|tool_result|'
        'system", "message": {"role", "parts": [...]}} record per line',
        sniff=sniff_qwen_code,
        read=read_qwen_code,
        output="openai",
        priority=30,
    ),
)
