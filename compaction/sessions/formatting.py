"""A session's history as text for people: what ``Session.format_history`` returns.

Apart from session.py because it is presentation, not storage: it only reads what any
Session already offers, and a change of layout here can never touch what is stored. It
imports no session (a Protocol says what it reads), so the package's imports stay one-way.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Protocol

from .history import Entry

__all__ = ["format_history"]


class _Mapping(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


class Readable(Protocol):
    """What the text is made from (a Session has all of it)."""

    @property
    def name(self) -> str: ...
    @property
    def entries(self) -> tuple[Entry, ...]: ...
    @property
    def created(self) -> datetime | None: ...
    @property
    def updated(self) -> datetime | None: ...
    @property
    def metadata(self) -> _Mapping: ...
    @property
    def global_context(self) -> _Mapping: ...
    @property
    def state(self) -> _Mapping: ...


def format_history(session: Readable, with_metadata: bool = False) -> str:
    """The history as text, one message per line: timestamp, role, content.

    ``with_metadata`` adds a header with the session's timestamps, metadata, global
    context and state, and each message's id, token count and meta.
    """
    lines: list[str] = []
    entries = session.entries
    if with_metadata:
        created, updated = session.created, session.updated
        lines.append(f"Session: {session.name}")
        lines.append(f"Created: {_stamp(created) if created else '-'}")
        lines.append(f"Updated: {_stamp(updated) if updated else '-'}")
        for label, mapping in (
            ("Metadata", session.metadata),
            ("Global context", session.global_context),
            ("State", session.state),
        ):
            data = mapping.to_dict()
            lines.append(f"{label}:" + ("" if data else " (none)"))
            lines.extend(f"  {k}: {_json(v)}" for k, v in data.items())
        lines.append(f"Messages: {len(entries)}")
        lines.append("")
    for entry in entries:
        m = entry.message
        who = m.role if m.name is None else f"{m.role} ({m.name})"
        text = m.content
        if m.tool_calls:
            calls = ", ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
            text = f"{text} [calls: {calls}]" if text else f"[calls: {calls}]"
        lines.append(f"[{_stamp(entry.timestamp)}] {who}: {text}")
        if with_metadata:
            details = [f"id={m.id}"]
            if m.tool_call_id:
                details.append(f"tool_call_id={m.tool_call_id}")
            if m.tokens is not None:
                details.append(f"tokens={m.tokens}")
            if m.meta:
                details.append(f"meta={_json(dict(m.meta))}")
            lines.append("    " + " ".join(details))
    return "\n".join(lines)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
