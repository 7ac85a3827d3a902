"""The Claude Code web export: ``{"loglines": [...]}``.

A session exported from Claude Code on the web holds the same records a local session log
writes one per line (``{"type", "uuid", "message", ...}``), as a JSON list under ``loglines``.
It is read exactly as a local log is ([`compaction.formats.claude_code`][]): the same merging
of an API message's lines, the same pairing of results, the same compaction summaries and
repairs; the records are numbered by their place in the list (1-based) where a local log
would name a line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .claude_code import read_claude_code
from .detect import Document, is_claude_code_record
from .errors import FormatError
from .loaded import Loaded
from .registry import Reader

__all__ = ["READERS", "read_claude_web"]


def read_claude_web(doc: Document, path: str) -> Loaded:
    value: Any = doc.value
    lines = value.get("loglines") if isinstance(value, Mapping) else None
    if not isinstance(lines, list):
        raise FormatError(path, "'loglines': expected a list of Claude Code records")
    records = []
    skipped = 0
    for no, record in enumerate(lines, 1):
        if isinstance(record, Mapping) and isinstance(record.get("type"), str):
            records.append((no, record))
        else:
            skipped += 1
    if not records:
        raise FormatError(path, "'loglines' holds no Claude Code record ({'type', 'message'})")
    loaded = read_claude_code(Document(records=tuple(records)), path, format="claude-code-web")
    extra = {"not a record": skipped} if skipped else {}
    return attrs.evolve(loaded, skipped={**loaded.skipped, **extra}, container="object")


def _sniff(doc: Document, path: str) -> bool:
    value = doc.value
    if not isinstance(value, Mapping) or not isinstance(value.get("loglines"), list):
        return False
    return any(is_claude_code_record(r) for r in value["loglines"][:20])


READERS = (
    Reader(
        name="claude-code-web",
        title='Claude Code web export ({"loglines": [...]})',
        shape='{"loglines": [Claude Code records...]}',
        sniff=_sniff,
        read=read_claude_web,
        output="anthropic",
        priority=25,
    ),
)
