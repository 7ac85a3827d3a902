"""Telling apart the ``--output-format stream-json`` printers that share one shape.

Claude Code (``claude -p``, and the Claude Agent SDK's message stream) and the Cursor CLI
(``cursor-agent -p``) both print one ``{"type", "session_id", ...}`` event per line, both open
with a ``{"type": "system", "subtype": "init"}`` record, both say ``user`` and ``assistant``
with a ``message`` inside and end with a ``result``. What sets them apart:

- Claude Code: ``parent_tool_use_id`` on every ``user``/``assistant`` record (the SDK's
  sub-agent link), the Anthropic API message itself in ``assistant.message`` (``id``,
  ``model``, ``usage``...), ``stream_event`` records (partial messages), the run's
  ``total_cost_usd``/``num_turns`` in ``result``, ``claude_code_version`` in ``system``;
- Cursor: ``tool_call`` events (``call_id`` and a ``tool_call`` object), ``thinking``
  events, ``model_call_id``/``timestamp_ms`` on its events, and messages that hold only
  ``role`` and ``content``.

A session log of either agent carries ``sessionId``/``parentUuid`` instead; neither stream
reader takes a file that does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._agent_log import SNIFF_RECORDS, records
from .detect import Document

__all__ = ["claude_event", "cursor_event", "stream_head"]

#: Fields of a session log's records (Claude Code's, Qwen Code's), never of a printed stream.
_LOG_FIELDS: Final = ("sessionId", "parentUuid", "leafUuid")
#: How many records a sniffer reads at most, to pass the ``system`` records a stream opens with.
_MAX_SCAN: Final = 64
#: What an Anthropic API message holds besides ``role`` and ``content``.
_API_FIELDS: Final = ("id", "model", "usage", "stop_reason")


def stream_head(doc: Document) -> list[Mapping[str, Any]] | None:
    """The first records of ``doc`` that have a text ``type`` (up to ``SNIFF_RECORDS`` of
    them besides ``system`` records), when they look like a printed stream (at least one with
    ``session_id``, none with a session log's fields); None when they do not."""
    first: list[Mapping[str, Any]] = []
    others = 0
    # Claude Code prints a ``system`` record per hook before its init record: they are passed
    # (up to a bound), so the records that tell the printers apart are looked at.
    for _, record in records(doc)[:_MAX_SCAN]:
        # A record of an odd shape (one corrupt line) does not decide for the rest.
        if not isinstance(record, Mapping) or not isinstance(record.get("type"), str):
            continue
        first.append(record)
        others += record["type"] != "system"
        if others >= SNIFF_RECORDS:
            break
    if not first:
        return None
    if any(k in r for r in first for k in _LOG_FIELDS):
        return None
    if not any("session_id" in r for r in first):
        return None
    return first


def claude_event(record: Mapping[str, Any]) -> bool:
    """True for a record only Claude Code's stream prints (see the module docstring)."""
    kind = record.get("type")
    if kind == "stream_event":
        return "event" in record
    if kind in ("user", "assistant"):
        if "parent_tool_use_id" in record:
            return True
        message = record.get("message")
        return (
            kind == "assistant"
            and isinstance(message, Mapping)
            and any(k in message for k in _API_FIELDS)
        )
    if kind == "result":
        return "total_cost_usd" in record or "num_turns" in record
    return kind == "system" and "claude_code_version" in record


def cursor_event(record: Mapping[str, Any]) -> bool:
    """True for a record only the Cursor CLI's stream prints (see the module docstring)."""
    kind = record.get("type")
    if kind == "tool_call":
        return "call_id" in record and isinstance(record.get("tool_call"), Mapping)
    if kind in ("thinking", "interaction_query"):
        return True
    return kind in ("user", "assistant") and ("model_call_id" in record or "timestamp_ms" in record)
