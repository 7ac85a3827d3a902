"""Claude Code's printed stream (``claude -p --output-format stream-json --verbose``), and the
Claude Agent SDK's message stream saved one message per line, as session-log records.

The stream prints the records a session log holds, under other names: ``session_id`` for
``sessionId``, ``compact_metadata`` (``pre_tokens``) for ``compactMetadata`` (``preTokens``),
``isSynthetic`` for ``isMeta``, and a sub-agent's records carry the ``parent_tool_use_id`` of
the ``Task`` call that started it where a log says ``isSidechain``. ``log_records`` renames
them, so the stream is then read by the Claude Code log reader itself
(``compaction.formats.claude_code``): one API message's lines merged by ``message.id``,
``tool_result`` blocks paired with their ``tool_use``, a compaction summary kept as one, the
usage and model of each API message kept where the priced replay reads them.

What only the stream has is kept beside the conversation, never in it:

- the ``system``/``init`` record (model, tools, working directory, version) as
  ``Loaded.extra["session"]``;
- each ``result`` record (the run's ``total_cost_usd``, ``usage``, ``modelUsage``,
  ``num_turns``, durations, ``subtype``/``is_error``) in ``Loaded.extra["results"]``: it is
  the whole run's bill, not one call's, so it is never put on a message;
- ``stream_event`` records (``--include-partial-messages``) are the pieces of a message the
  stream prints whole afterwards: counted in ``Loaded.skipped``, not read twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ._agent_log import records
from ._stream_json import claude_event, cursor_event, stream_head
from .detect import Document

__all__ = ["log_records", "sniff_claude_stream"]

#: The init record's fields kept in ``Loaded.extra["session"]`` (its lists of slash
#: commands, agents and plugins say nothing about the conversation).
_SESSION_FIELDS: Final = (
    "session_id",
    "model",
    "cwd",
    "tools",
    "mcp_servers",
    "permissionMode",
    "claude_code_version",
    "output_style",
)
#: Text Claude Code writes into the user role for a local command's output: the person did
#: not type it.
_LOCAL_COMMAND: Final = "<local-command-"


def sniff_claude_stream(doc: Document, path: str | Path = "") -> bool:
    """A printed stream with a record only Claude Code prints and none only Cursor prints."""
    first = stream_head(doc)
    if first is None:
        return False
    return any(claude_event(r) for r in first) and not any(cursor_event(r) for r in first)


def _opens_with_command_output(message: Any) -> bool:
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        content = content[0].get("text")
    return isinstance(content, str) and content.lstrip().startswith(_LOCAL_COMMAND)


def _chat_record(record: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(record)
    session = record.get("session_id")
    if isinstance(session, str):
        out["sessionId"] = session
    parent = record.get("parent_tool_use_id")
    if isinstance(parent, str) and parent:
        # A sub-agent's turn: its own context, not the main conversation's (the main
        # conversation sees only the Task call's result), as a log's sidechain is.
        out["isSidechain"] = True
    if record.get("isSynthetic") is True or (
        record.get("type") == "user" and _opens_with_command_output(record.get("message"))
    ):
        out["isMeta"] = True
    return out


def _boundary(record: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(record)
    metadata = record.get("compact_metadata")
    if isinstance(metadata, Mapping):
        names = (("trigger", "trigger"), ("preTokens", "pre_tokens"))
        out["compactMetadata"] = {ours: metadata[its] for ours, its in names if its in metadata}
    return out


def log_records(
    doc: Document,
) -> tuple[tuple[tuple[int, Mapping[str, Any]], ...], dict[str, Any], int]:
    """The stream's records as Claude Code log records (see the module docstring), what it
    says beside the conversation (``{"session": ..., "results": [...]}``, for
    ``Loaded.extra``), and how many items were no JSON object (a JSON list can hold them)."""
    out: list[tuple[int, Mapping[str, Any]]] = []
    extra: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    odd = 0
    for line, record in records(doc):
        if not isinstance(record, Mapping):
            odd += 1
            continue
        kind = record.get("type")
        if kind in ("user", "assistant"):
            out.append((line, _chat_record(record)))
            continue
        if kind == "system" and record.get("subtype") == "init" and "session" not in extra:
            extra["session"] = {k: record[k] for k in _SESSION_FIELDS if k in record}
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            record = _boundary(record)
        elif kind == "result":
            results.append({k: v for k, v in record.items() if k not in ("type", "result")})
        out.append((line, record))
    if results:
        extra["results"] = results
    return tuple(out), extra, odd
