"""Claude Code session logs (``~/.claude/projects/*/<session>.jsonl`` and ``subagents/``).

A log is one JSON record per line. Only ``user`` and ``assistant`` records are chat turns;
the rest (``progress``, ``file-history-snapshot``, ``system``, ``summary``,
``queue-operation``...) are skipped and counted in [`Loaded.skipped`][]. Quirks handled:

- Claude Code writes **one line per content block**: the lines of one API message share
  ``message.id`` and are merged back into one assistant message (``Message.id`` = that id).
  With parallel calls, results can be logged between the lines of their message; every
  result is placed right after the message that made the call, in call order.
- Tool results arrive as ``tool_result`` blocks inside ``user`` lines; each becomes a tool
  message whose ``id`` is the line's ``uuid``. User text lines keep their ``uuid`` as id.
- A previous compaction (``isCompactSummary``) is kept where it is, marked as a summary with
  [`compaction.formats.logs.native_compaction`][] (strategy ``"claude-code"``, a
  ``meta["boundary"]``), so it is never taken as the task anchor; it records the messages it
  replaced, which stay in the log before it.
- Subagent files (``subagents/agent-*.jsonl``, every record ``isSidechain``) read on their own.
  A main log that also holds sidechain records (older versions) keeps only its main chain.
- A session killed mid-tool leaves calls unanswered: they get an explicit "no result
  recorded" result; a result whose call is not in the log is kept as a user message saying
  so. Both are reported in [`Loaded.repairs`][].

What ``claude -p --output-format stream-json`` prints (and the Agent SDK's messages) is the
same records under other names: the ``claude-code-stream`` reader renames them
(``compaction.formats._claude_stream``) and reads them here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from ..adapters import AdapterError
from ..adapters.anthropic import assistant_from_blocks, tool_from_block, user_from_blocks
from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message
from ._claude_stream import log_records, sniff_claude_stream
from .detect import Document, is_claude_code_record
from .errors import FormatError
from .loaded import Loaded, Repair
from .logs import native_compaction
from .registry import Reader
from .repair import repair
from .validate_loaded import finish

__all__ = ["READERS", "read_claude_code", "read_claude_stream"]

SOURCE_KEY: Final = "claude_code"

_CHAT: Final = frozenset({"user", "assistant"})
_KEEP_FIELDS: Final = (
    "uuid",
    "timestamp",
    "isMeta",
    "isSidechain",
    "agentId",
    "sessionId",
    "isVisibleInTranscriptOnly",
    "sourceToolUseID",
    "parent_tool_use_id",
)


def _source(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: record[k] for k in _KEEP_FIELDS if k in record}


#: Text Claude Code itself puts in user turns: the user did not type it, so it must not become
#: the task anchor in place of the request the user did type.
_HARNESS_PREFIXES: Final = (
    "[Request interrupted by user",
    "<task-notification>",
    "<system-reminder>",
)


def _user_meta(record: Mapping[str, Any], source: dict[str, Any], text: str) -> dict[str, Any]:
    meta: dict[str, Any] = {SOURCE_KEY: source}
    if record.get("isMeta") is True or text.lstrip().startswith(_HARNESS_PREFIXES):
        meta[SYNTHETIC_KEY] = True
    return meta


class _Assistant:
    """The lines of one API message, merged."""

    __slots__ = ("blocks", "dropped", "id", "line", "source")

    def __init__(self, key: str, line: int, record: Mapping[str, Any]) -> None:
        self.id = key
        self.line = line
        self.blocks: list[Any] = []
        self.dropped = 0
        message = record["message"]
        self.source: dict[str, Any] = {
            **_source(record),
            "uuids": [],
            "model": message.get("model"),
            "requestId": record.get("requestId"),
        }

    def add(self, record: Mapping[str, Any], line: int, path: str | Path) -> None:
        content = record["message"].get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        if not isinstance(content, list):
            raise FormatError(
                path, "assistant message content: expected text or a list of blocks", line=line
            )
        for block in content:
            # Claude Code logs a whitespace-only text block ahead of thinking while streaming;
            # it is no part of the message (the API rejects blank text and wants thinking
            # first), so it is left out.
            if (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
                and not block["text"].strip()
            ):
                self.dropped += 1
                continue
            self.blocks.append(block)
        self.source["uuids"].append(record.get("uuid"))
        usage = record["message"].get("usage")
        if usage is not None:
            self.source["usage"] = usage  # the last line's usage is the message's


def _text_id(value: Any) -> str | None:
    """An id as text; None for anything else (a number or list is no id to keep)."""
    return value if isinstance(value, str) and value else None


def _malformed(record: Mapping[str, Any]) -> str | None:
    """What makes a user/assistant record unreadable (None when it is fine)."""
    message = record.get("message")
    if not isinstance(message, Mapping):
        return "no 'message' object; expected {'type', 'uuid', 'message': {...}}"
    content = message.get("content")
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return "message.content: expected text or a list of blocks"
    if not all(isinstance(b, Mapping) for b in content):
        return "message.content: expected a list of block objects"
    return None


def read_claude_code(doc: Document, path: str | Path, *, format: str = "claude-code") -> Loaded:
    records = (
        doc.records
        if doc.records is not None
        else (tuple(enumerate(doc.value, 1)) if isinstance(doc.value, list) else ((1, doc.value),))
    )
    skipped: Counter[str] = Counter()
    chat = []
    seen_uuids: set[str] = set()
    boundaries: dict[int, Mapping[str, Any]] = {}
    last_boundary: Mapping[str, Any] | None = None
    bad: list[Repair] = []
    for line, record in records:
        kind = record.get("type")
        if not isinstance(kind, str) or kind not in _CHAT:  # a list is no type (nor hashable)
            skipped[str(kind)] += 1
            if kind == "system" and record.get("subtype") == "compact_boundary":
                metadata = record.get("compactMetadata")
                last_boundary = metadata if isinstance(metadata, Mapping) else {}
            continue
        if record.get("isCompactSummary") and last_boundary is not None:
            boundaries[line] = last_boundary
            last_boundary = None
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen_uuids:  # the same line logged twice (resumed sessions do this)
                skipped["duplicate"] += 1
                continue
            seen_uuids.add(uuid)
        problem = _malformed(record)
        if problem is not None:
            # A log is read as a log: one odd record is skipped and reported, not the file lost.
            bad.append(Repair("skipped_line", "", -1, f"a {kind!r} record: {problem}", line=line))
            continue
        chat.append((line, record))
    if any(not r.get("isSidechain") for _, r in chat):
        sidechain = sum(1 for _, r in chat if r.get("isSidechain"))
        if sidechain:
            skipped["sidechain"] += sidechain
            chat = [(n, r) for n, r in chat if not r.get("isSidechain")]

    # Positions in order: assistant messages at their first line, user turns at theirs.
    # Tool results are not positions: they follow the message that made the call.
    items: list[Any] = []
    assistants: dict[str, _Assistant] = {}
    # An id can be reused by a later message (a resumed session): each result goes to the
    # first message with that call still unanswered; repair() then gives the reuse a new id.
    owners: dict[str, list[_Assistant]] = {}
    results: dict[tuple[int, str], Message] = {}
    names: dict[str, str | None] = {}
    for line, record in chat:
        message = record["message"]
        if record["type"] == "assistant":
            key = _text_id(message.get("id")) or _text_id(record.get("uuid")) or f"line-{line}"
            target = assistants.get(key)
            if target is None:
                target = assistants[key] = _Assistant(key, line, record)
                items.append(target)
            target.add(record, line, path)
            for block in target.blocks:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    use_id = block.get("id")
                    # No tool_result can name a missing id (an id that is no text is refused
                    # when the message is built, with the block's own error).
                    if isinstance(use_id, str):
                        claimed = owners.setdefault(use_id, [])
                        if target not in claimed:
                            claimed.append(target)
                        name = block.get("name")
                        names[use_id] = name if isinstance(name, str) else None
            continue
        content = message.get("content")
        uuid = _text_id(record.get("uuid"))
        source = _source(record)
        if isinstance(content, str):
            items.append(
                Message("user", content, id=uuid, meta=_user_meta(record, source, content))
            )
        elif isinstance(content, list):
            rest = []
            for block in content:
                if not isinstance(block, Mapping):
                    raise FormatError(path, "user content: expected block objects", line=line)
                if block.get("type") != "tool_result":
                    rest.append(block)
                    continue
                use_id = block.get("tool_use_id")
                try:
                    result = tool_from_block(
                        block,
                        None,
                        names.get(use_id) if isinstance(use_id, str) else None,
                        id=uuid,
                        meta={SOURCE_KEY: source},
                    )
                except AdapterError as exc:
                    raise FormatError(path, exc.reason, line=line) from None
                call_id = result.tool_call_id or ""
                waiting = [a for a in owners.get(call_id, ()) if (id(a), call_id) not in results]
                if waiting:
                    results[(id(waiting[0]), call_id)] = result
                else:
                    items.append(result)  # an orphan (or a second answer): repaired below
            if rest:
                text = "".join(b.get("text", "") for b in rest if b.get("type") == "text")
                items.append(user_from_blocks(rest, id=uuid, meta=_user_meta(record, source, text)))
        else:
            raise FormatError(
                path, "user message content: expected text or a list of blocks", line=line
            )
        if record.get("isCompactSummary"):
            items[-1] = ("summary", items[-1], boundaries.get(line, {}))

    blank = sum(a.dropped for a in assistants.values())
    if blank:
        skipped["blank text block"] = blank
    messages: list[Message] = []
    since_summary: list[Message] = []
    for item in items:
        if isinstance(item, _Assistant):
            try:
                m = assistant_from_blocks(
                    item.blocks, None, id=item.id, meta={SOURCE_KEY: item.source}
                )
            except AdapterError as exc:
                raise FormatError(path, exc.reason, line=item.line) from None
            messages.append(m)
            since_summary.append(m)
            for call in m.tool_calls:
                answer = results.get((id(item), call.id))
                if answer is not None:
                    messages.append(answer)
                    since_summary.append(answer)
            continue
        if isinstance(item, tuple):
            _, m, boundary = item
            # Claude Code's own record of the compaction (trigger, tokens before) goes along.
            details = {k: boundary[k] for k in ("trigger", "preTokens") if k in boundary}
            m = native_compaction(m, agent="claude-code", replaces=since_summary, **details)
            since_summary = []
        else:
            m = item
            since_summary.append(m)
        messages.append(m)
    fixed, repairs = repair(messages)
    return finish(
        Loaded(
            fixed,
            format,
            str(path),
            repairs=(*bad, *repairs),
            skipped=dict(skipped),
            container="jsonl",
        )
    )


def read_claude_stream(doc: Document, path: str | Path) -> Loaded:
    """Claude Code's printed stream (``claude -p --output-format stream-json``) or the Agent
    SDK's messages, read as the log records they are (``compaction.formats._claude_stream``).

    A sub-agent's records (``parent_tool_use_id`` set) are its own context: left out of the
    main conversation as a log's sidechain is, counted as ``subagent``."""
    chat, extra, odd = log_records(doc)
    loaded = read_claude_code(Document(records=chat), path, format="claude-code-stream")
    skipped = dict(loaded.skipped)
    if "sidechain" in skipped:
        skipped["subagent"] = skipped.pop("sidechain")
    if odd:
        skipped["not a record"] = odd
    container = "jsonl" if doc.records is not None else "list"
    return attrs.evolve(loaded, skipped=skipped, extra=extra, container=container)


def _sniff(doc: Document, path: str) -> bool:
    if doc.records is not None:
        return is_claude_code_record(doc.records[0][1])
    value = doc.value
    if isinstance(value, list):
        return bool(value) and all(is_claude_code_record(r) for r in value)
    return is_claude_code_record(value)


READERS = (
    Reader(
        name="claude-code",
        title="Claude Code session log (~/.claude/projects/*/<session>.jsonl)",
        shape='one {"type", "uuid", "message": {...}} record per line',
        sniff=_sniff,
        read=read_claude_code,
        output="anthropic",
        priority=70,
    ),
    Reader(
        name="claude-code-stream",
        title="Claude Code headless stream (claude -p --output-format stream-json), Agent SDK",
        shape='one {"type": "system|user|assistant|result", "session_id", "message", '
        '"parent_tool_use_id", ...} event per line',
        sniff=sniff_claude_stream,
        read=read_claude_stream,
        output="anthropic",
        priority=30,
    ),
)
