"""Goose sessions: the JSONL session file and the JSON of ``goose session export``.

Two shapes hold the same messages:

- **JSONL** (``~/.local/share/goose/sessions/<id>.jsonl``, what Goose wrote before it moved
  its sessions into SQLite, and what a newer Goose still imports): a first line of session
  metadata (``working_dir``, ``description``, ``message_count``, the token totals), then one
  message per line;
- **JSON** (``goose session export --format json``): the session object (``id``,
  ``working_dir``, ``name``, the token totals, ``conversation``: the list of messages).

A message is ``{"id", "role": "user"|"assistant", "created": <unix seconds>, "content":
[...], "metadata": {"userVisible", "agentVisible"}}``; each content item has a camelCase
``type``:

- ``text``; ``image`` (kept in ``meta``); ``thinking`` / ``redactedThinking`` (kept in
  ``meta``: Goose does not resend them as text);
- ``toolRequest``: the call, ``{"id", "toolCall": {"status": "success", "value": {"name",
  "arguments"}}}`` (``{"status": "error", "error"}`` when the model's call did not parse);
- ``toolResponse``, in a user-role message: the result of the call with that ``id``,
  ``toolResult.value`` an MCP ``CallToolResult`` (``content``, ``isError``) or, in older
  files, the content list itself. Only the items the model was sent are read: an item whose
  ``annotations.audience`` names only the user (the copy a tool writes for the screen) never
  reached the model, as Goose's provider formats filter it;
- ``toolConfirmationRequest``, ``actionRequired``, ``frontendToolRequest``,
  ``systemNotification`` and the old ``conversationCompacted`` are the UI's, never sent to the
  model: skipped and counted.

Goose compacts by keeping every earlier message (now ``agentVisible: false``, still shown to
the person) and adding a **summary** as a user message only the agent sees
(``userVisible: false``), then an agent-only assistant message that starts "Your context was
compacted". The summary is kept where it happened as a native compaction standing for the
messages before it; the continuation note is the harness's (marked synthetic). Any other
user-role text the person never saw (``userVisible: false``) was written by Goose, not the
person: marked synthetic, never the task. Goose records no per-call usage in a message: each
assistant message has its time (``meta["recorded"]``), and the session's token totals are
kept in ``Loaded.extra``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

import attrs

from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import args_text, done, head, iso_time, records, text_id
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, native_compaction, recorded
from .registry import Reader

__all__ = ["READERS", "read_goose", "sniff_goose"]

FORMAT: Final = "goose"
SOURCE_KEY: Final = "goose"

#: Content the UI shows and the model never receives.
_UI_ONLY: Final = frozenset(
    {
        "toolConfirmationRequest",
        "actionRequired",
        "frontendToolRequest",
        "systemNotification",
        "conversationCompacted",
        "summarizationRequested",
        "contextLengthExceeded",
    }
)
#: Content types only Goose writes (camelCase; ``thinking`` is Anthropic's too, so it is not
#: one of them): a message record holding one is Goose's and no other format's.
_GOOSE_ONLY: Final = frozenset({"toolRequest", "toolResponse", "redactedThinking"} | _UI_ONLY)
#: How Goose's note after a compaction summary begins.
CONTINUATION: Final = "Your context was compacted"
#: The session fields kept in ``Loaded.extra["session"]``.
_SESSION_KEYS: Final = (
    "id",
    "name",
    "description",
    "working_dir",
    "schedule_id",
    "message_count",
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "accumulated_total_tokens",
    "accumulated_input_tokens",
    "accumulated_output_tokens",
)


def _is_metadata(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and "message_count" in value
        and ("description" in value or "working_dir" in value or "name" in value)
        and "role" not in value
    )


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and value.get("role") in ("user", "assistant")
        and isinstance(value.get("content"), list)
        and isinstance(value.get("created"), int | float)
        and not isinstance(value.get("created"), bool)
    )


def _goose_message(value: Any) -> bool:
    """A message no other format writes: Goose's visibility metadata or content types."""
    if not _is_message(value):
        return False
    meta = value.get("metadata")
    if isinstance(meta, Mapping) and ("agentVisible" in meta or "userVisible" in meta):
        return True
    return any(isinstance(c, Mapping) and c.get("type") in _GOOSE_ONLY for c in value["content"])


def sniff_goose(doc: Document, path: str = "") -> bool:
    """A Goose session: the JSONL's metadata line followed by messages, messages of Goose's
    own shape, or the exported session object with its ``conversation``."""
    if doc.records is None:
        value = doc.value
        if not isinstance(value, Mapping) or "conversation" not in value:
            return False
        if "working_dir" in value and "id" in value and "message_count" in value:
            return True
        first = value["conversation"]
        return isinstance(first, list) and any(_goose_message(m) for m in first[:8])
    first = head(doc)
    if _is_metadata(first[0]):
        return len(first) == 1 or _is_message(first[1])
    return any(_goose_message(r) for r in first)


def _text_items(items: Any) -> str:
    """The text of an MCP content list as the model was sent it (user-only items left out)."""
    out: list[str] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        notes = item.get("annotations")
        audience = notes.get("audience") if isinstance(notes, Mapping) else None
        if isinstance(audience, list) and audience and "assistant" not in audience:
            continue
        kind = item.get("type")
        if kind == "text" and isinstance(item.get("text"), str):
            out.append(item["text"])
        elif kind == "resource" and isinstance(item.get("resource"), Mapping):
            resource = item["resource"]
            text = resource.get("text")
            out.append(text if isinstance(text, str) else f"[resource: {resource.get('uri')}]")
        elif kind == "image":
            out.append(f"[image: {item.get('mimeType')}]")
        elif isinstance(kind, str):
            out.append(f"[{kind}]")
    return "\n".join(out)


def _result(item: Mapping[str, Any]) -> tuple[str, bool]:
    """A ``toolResponse``'s text and whether it is an error."""
    result = item.get("toolResult")
    if not isinstance(result, Mapping):
        return "[no result content]", False
    if result.get("status") == "error":
        return f"Error: {result.get('error')}", True
    value = result.get("value")
    if isinstance(value, Mapping):  # CallToolResult
        return _text_items(value.get("content")), value.get("isError") is True
    return _text_items(value), False


def _call(item: Mapping[str, Any], fallback: str) -> ToolCall:
    cid = text_id(item.get("id")) or fallback
    request = item.get("toolCall")
    request = request if isinstance(request, Mapping) else {}
    value = request.get("value")
    if request.get("status") == "success" and isinstance(value, Mapping):
        name = value.get("name")
        return ToolCall(
            cid,
            name if isinstance(name, str) and name else "tool",
            args_text(value.get("arguments")),
        )
    # The model's call did not parse: kept, so the error Goose answered it with has a call.
    error = json.dumps({"error": str(request.get("error"))}, ensure_ascii=False)
    return ToolCall(cid, "invalid_tool_call", error)


class _Session:
    def __init__(self, path: str) -> None:
        self.path = path
        self.messages: list[Message] = []
        self.skipped: Counter[str] = Counter()
        self.since = 0

    def add(self, where: str, line: int | None, msg: Any) -> None:
        if not _is_message(msg):
            raise FormatError(
                self.path,
                f"{where}: expected a message {{'role': 'user'|'assistant', 'created': "
                "<seconds>, 'content': [...]}",
                line=line,
            )
        meta = msg.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        seen_by_user = meta.get("userVisible") is not False
        source: dict[str, Any] = {"id": text_id(msg.get("id"))}
        stamp = iso_time(msg["created"])
        if stamp is not None:
            source["timestamp"] = stamp
        if line is not None:
            source["line"] = line
        if meta:
            source["visibility"] = {
                k: meta[k] for k in ("userVisible", "agentVisible") if k in meta
            }
        texts: list[str] = []
        calls: list[ToolCall] = []
        answers: list[Message] = []
        kept: dict[str, list[Any]] = {}
        counted = False
        for at, item in enumerate(msg["content"]):
            kind = item.get("type") if isinstance(item, Mapping) else None
            if not isinstance(item, Mapping) or not isinstance(kind, str):
                raise FormatError(
                    self.path, f"{where}.content[{at}]: expected an object with a 'type'", line=line
                )
            if kind == "text":
                text = item.get("text")
                texts.append(text if isinstance(text, str) else "")
            elif kind == "toolRequest" and msg["role"] == "assistant":
                calls.append(_call(item, f"{source['id'] or where}-call-{at}"))
            elif kind == "toolResponse":
                text, error = _result(item)
                cid = text_id(item.get("id")) or "unknown"
                info = {**source, "is_error": True} if error else source
                answers.append(Message("tool", text, tool_call_id=cid, meta={SOURCE_KEY: info}))
            elif kind in ("thinking", "redactedThinking", "image"):
                kept.setdefault(kind, []).append(dict(item))
            else:
                self.skipped[f"{kind} content"] += 1
                counted = True
        source.update(kept)
        text = "\n".join(t for t in texts if t)
        if msg["role"] == "assistant":
            self.assistant(text, calls, source, seen_by_user)
            return
        self.messages.extend(answers)
        if text.strip():
            self.user(text, source, seen_by_user)
        elif not answers and not counted:  # UI content was counted as what it is
            self.skipped["user message without text"] += 1

    def assistant(
        self, text: str, calls: list[ToolCall], source: dict[str, Any], seen: bool
    ) -> None:
        if not text.strip() and not calls:
            self.skipped["assistant message without text or calls"] += 1
            return
        meta: dict[str, Any] = {
            SOURCE_KEY: source,
            RECORDED_KEY: recorded(timestamp=source.get("timestamp")),
        }
        if not seen and not calls and text.lstrip().startswith(CONTINUATION):
            meta[SYNTHETIC_KEY] = True  # Goose's own note after a summary
        self.messages.append(
            Message("assistant", text, tool_calls=tuple(calls), id=source["id"], meta=meta)
        )

    def user(self, text: str, source: dict[str, Any], seen: bool) -> None:
        message = Message("user", text, id=source["id"], meta={SOURCE_KEY: source})
        if seen:
            self.messages.append(message)
            return
        # Text the person never saw was Goose's: a compaction summary, or other context.
        self.messages.append(message.replace(meta={**message.meta, SYNTHETIC_KEY: True}))

    def summaries(self) -> None:
        """Mark each agent-only user message followed by Goose's continuation note as the
        native compaction it is."""
        out = self.messages
        for at in range(len(out) - 1):
            m, nxt = out[at], out[at + 1]
            note = nxt.role == "assistant" and nxt.content.lstrip().startswith(CONTINUATION)
            if m.role == "user" and m.meta.get(SYNTHETIC_KEY) is True and note:
                out[at] = native_compaction(m, agent=FORMAT, replaces=out[self.since : at])
                self.since = at + 1


def read_goose(doc: Document, path: str) -> Loaded:
    """Read a Goose session (both shapes; see the module docstring)."""
    session = _Session(path)
    info: Mapping[str, Any] = {}
    if doc.records is None:
        value = doc.value
        conversation = value.get("conversation") if isinstance(value, Mapping) else None
        if not isinstance(conversation, list):
            raise FormatError(
                path,
                "'conversation': expected the list of messages 'goose session export' writes "
                f"(found {type(conversation).__name__}: a session exported without them?)",
            )
        info = value
        for index, msg in enumerate(conversation):
            session.add(f"conversation[{index}]", None, msg)
        container = "object"
    else:
        lines = records(doc)
        for line, record in lines:
            if line == lines[0][0] and _is_metadata(record):
                info = record
                session.skipped["session metadata"] += 1
                continue
            session.add("message", line, record)
        container = "jsonl"
    session.summaries()
    loaded = done(session.messages, FORMAT, path, skipped=session.skipped, container=container)
    extra = {k: info[k] for k in _SESSION_KEYS if k in info}
    return attrs.evolve(loaded, extra={"session": extra}) if extra else loaded


READERS = (
    Reader(
        name=FORMAT,
        title="Goose session (~/.local/share/goose/sessions/*.jsonl, goose session export)",
        shape='a {"working_dir", "description", "message_count"} line then one {"role", '
        '"created", "content": [{"type": "text|toolRequest|toolResponse|..."}]} message per '
        'line, or the exported session {"id", "working_dir", "conversation": [...]}',
        sniff=sniff_goose,
        read=read_goose,
        output="openai",
        priority=25,
    ),
)
