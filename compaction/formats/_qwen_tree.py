"""Qwen Code's record tree: which records of a session file are the conversation.

Qwen Code appends records and never rewrites them; each names its parent (``parentUuid``).
Its loader (``prepareTranscriptRecords``) takes the active conversation to be the chain of
parents back from the last record, so a ``/rewind`` (which re-roots the chain) leaves the
rewound turns on a dead branch, and several records with one ``uuid`` are fragments of one
message, joined. [`active_chain`][] does the same, in one pass and linear time, and says what
it left out; [`compaction.formats.qwen_code`][] reads the chain.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from ._agent_log import count, iso_time, records
from .detect import Document
from .loaded import Repair

__all__ = ["Record", "active_chain", "invalid", "is_record", "qwen_only", "origin", "usage_split"]

SOURCE_KEY: Final = "qwen_code"

TYPES: Final = frozenset({"user", "assistant", "tool_result", "system"})
#: Records that are never part of the conversation tree (Qwen picks the leaf among the others).
_NOT_CONVERSATION: Final = frozenset(
    {
        "session_artifact_event",
        "session_artifact_snapshot",
        "session_sources_snapshot",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
    }
)


def is_record(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("type"), str)
        and value["type"] in TYPES
        and isinstance(value.get("uuid"), str)
        and "parentUuid" in value
        and "sessionId" in value
    )


def qwen_only(value: Mapping[str, Any]) -> bool:
    """What tells a Qwen record from a Claude Code one, which shares the tree fields."""
    message = value.get("message")
    return (
        (isinstance(message, Mapping) and isinstance(message.get("parts"), list))
        or value.get("type") == "tool_result"
        or isinstance(value.get("systemPayload"), Mapping)
    )


def invalid(record: Any) -> str | None:
    """Why Qwen's loader would skip ``record`` (None: it is a record)."""
    if not isinstance(record, Mapping):
        return "a Qwen Code record: expected an object"
    if not isinstance(record.get("uuid"), str) or not record["uuid"]:
        return "a Qwen Code record: 'uuid' is not a non-empty string"
    parent = record.get("parentUuid")
    if parent is not None and not isinstance(parent, str):
        return "a Qwen Code record: 'parentUuid' is neither a string nor null"
    kind = record.get("type")
    if not isinstance(kind, str) or kind not in TYPES:
        return f"a Qwen Code record: 'type' {kind!r} is not user, assistant, tool_result or system"
    if not isinstance(record.get("subtype"), str | None):
        return "a Qwen Code record: 'subtype' is not a string"
    message = record.get("message")
    if message is not None and (
        not isinstance(message, Mapping) or not isinstance(message.get("parts", []), list)
    ):
        return "a Qwen Code record: 'message' is not a Content object with a 'parts' list"
    return None


class Record:
    """One logical record: its fragments (records sharing a ``uuid``) joined."""

    __slots__ = ("data", "line", "parts", "pos")

    def __init__(self, line: int, pos: int, data: Mapping[str, Any]) -> None:
        self.line = line
        self.pos = pos  # its place among the file's logical records
        self.data: dict[str, Any] = dict(data)
        message = data.get("message")
        self.parts: list[Any] = list(message.get("parts") or []) if message else []

    def add(self, data: Mapping[str, Any]) -> None:
        message = data.get("message")
        if message:
            self.parts.extend(message.get("parts") or [])
        if data.get("usageMetadata"):
            self.data["usageMetadata"] = data["usageMetadata"]
        for key in ("model", "toolCallResult"):
            if data.get(key) and not self.data.get(key):
                self.data[key] = data[key]


def _components(order: list[str], by_uuid: dict[str, Record]) -> dict[str, str]:
    """Each record's connected part of the tree (linked through parents the file holds)."""
    root = {u: u for u in order}

    def find(x: str) -> str:
        top = x
        while root[top] != top:
            top = root[top]
        while root[x] != top:  # path compression keeps every lookup near constant
            root[x], x = top, root[x]
        return top

    for u in order:
        parent = by_uuid[u].data.get("parentUuid")
        if parent in by_uuid and find(u) != find(parent):
            root[find(u)] = find(parent)
    return {u: find(u) for u in order}


class _Walk:
    """The walk back from the leaf, across gaps: a parent the file no longer holds (a lost
    stretch, a line cut in the middle) is bridged, as Qwen does when it finds one, to the
    latest earlier record of a part of the tree not yet walked, so one bad line never loses
    everything before it. A rewound branch shares an ancestor with the walk, so it is never
    taken for such a part. The scan only moves back through the file: linear time."""

    def __init__(self, order: list[str], by_uuid: dict[str, Record]) -> None:
        self.order = order
        self.by_uuid = by_uuid
        self.parts: dict[str, str] | None = None
        self.walked: set[str] = set()
        self.cursor = len(order)
        self.gaps = 0

    def bridge(self, child: Record, first: Record) -> str | None:
        if child.data.get("subtype") == "rewind":
            return None  # a rewind re-roots the chain on purpose: nothing was lost
        if self.parts is None:
            self.parts = _components(self.order, self.by_uuid)
            self.walked.add(self.parts[first.data["uuid"]])
        self.cursor = min(self.cursor, child.pos)
        while self.cursor > 0:
            self.cursor -= 1
            uuid = self.order[self.cursor]
            if self.parts[uuid] not in self.walked:
                self.walked.add(self.parts[uuid])
                self.gaps += 1
                return uuid
        return None


def active_chain(doc: Document, path: str) -> tuple[list[Record], Counter[str], list[Repair]]:
    """The active chain, root first; what was skipped; the records that could not be read."""
    skipped: Counter[str] = Counter()
    bad: list[Repair] = []
    by_uuid: dict[str, Record] = {}
    order: list[str] = []
    leaf: str | None = None
    for line, record in records(doc):
        reason = invalid(record)
        if reason is not None:
            bad.append(Repair("skipped_line", "", -1, reason, line=line))
            continue
        if record.get("subtype") in _NOT_CONVERSATION:
            skipped[f"system/{record['subtype']}"] += 1
            continue
        uuid = record["uuid"]
        if uuid in by_uuid:
            by_uuid[uuid].add(record)
        else:
            by_uuid[uuid] = Record(line, len(order), record)
            order.append(uuid)
        leaf = uuid  # the last record written, fragment or not, is where the walk starts
    walk = _Walk(order, by_uuid)
    chain: list[Record] = []
    seen: set[str] = set()
    while leaf is not None and leaf not in seen:
        seen.add(leaf)
        rec = by_uuid[leaf]
        chain.append(rec)
        parent = rec.data.get("parentUuid")
        leaf = parent if parent in by_uuid or parent is None else walk.bridge(rec, chain[0])
    if walk.gaps:
        skipped["parentUuid the file does not hold (bridged to the records before)"] += walk.gaps
    if len(by_uuid) > len(chain):
        skipped["record off the active chain (rewound)"] += len(by_uuid) - len(chain)
    chain.reverse()
    return chain, skipped, bad


def origin(rec: Record, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"uuid": rec.data["uuid"], "line": rec.line}
    stamp = iso_time(rec.data.get("timestamp"))
    if stamp is not None:
        out["timestamp"] = stamp
    out.update({k: v for k, v in more.items() if v is not None})
    return out


def usage_split(meta: Any) -> dict[str, int]:
    """Gemini ``usageMetadata`` as the provider's split: ``promptTokenCount`` includes the
    cache reads. Converters disagree on whether ``candidatesTokenCount`` holds the thoughts,
    so the output is ``totalTokenCount`` less the input when the total is recorded."""
    if not isinstance(meta, Mapping) or "promptTokenCount" not in meta:
        return {}
    prompt = count(meta.get("promptTokenCount"))
    tool = count(meta.get("toolUsePromptTokenCount"))
    cached = min(count(meta.get("cachedContentTokenCount")), prompt)
    total = count(meta.get("totalTokenCount"))
    if total >= prompt + tool and "totalTokenCount" in meta:
        output = total - prompt - tool
    else:
        output = count(meta.get("candidatesTokenCount")) + count(meta.get("thoughtsTokenCount"))
    return dict(uncached=prompt - cached + tool, cache_read=cached, output=output)
