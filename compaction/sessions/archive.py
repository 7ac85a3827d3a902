"""Export a session to one JSON file, and import it back under any name, identical.

The export holds everything: every message with its sequence number and timestamp, global
context, state, metadata (with their "updated" stamps) and the stored view. The layout is
the same whichever backend wrote it, so a session exported from files imports into PostgreSQL
(and back) unchanged; each backend's ``restore`` creates it whole or not at all.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Final

import attrs

from .._reading import MIB, read_regular
from ..memory.transcript import provenance
from .codec import (
    FORMAT_VERSION,
    PREFIX,
    check_header,
    decode_message,
    encode_json,
    encode_message,
    format_ts,
    loads,
    now,
    parse_ts,
)
from .errors import SessionFormatError
from .history import Entry

__all__ = ["EXPORT_FORMAT", "Archive", "dump_archive", "read_archive"]

EXPORT_FORMAT: Final = f"{PREFIX}.export"
#: The largest export file read: an export is read whole into memory, so a file named by
#: someone else (a link to ``/dev/zero``, a device, a huge file) must not be read unbounded.
MAX_EXPORT_BYTES: Final = 512 * MIB
_SECTIONS: Final = {"global_context": "context", "state": "state", "metadata": "metadata"}


@attrs.frozen
class Archive:
    """Everything in one session, in the same shape whichever backend it came from."""

    name: str
    created: datetime
    first_seq: int
    entries: tuple[Entry, ...]
    documents: dict[str, dict[str, Any]]  # kind -> {"updated", "data"}
    view: dict[str, Any] | None  # {"updated", "through_seq", "based_on", "messages": [encoded]}

    def to_json(self) -> dict[str, Any]:
        """The archive as JSON-ready data (what ``Session.snapshot`` answers)."""
        return {
            "name": self.name,
            "created": format_ts(self.created),
            "first_seq": self.first_seq,
            "messages": [
                {"seq": e.seq, "ts": format_ts(e.timestamp), "message": encode_message(e.message)}
                for e in self.entries
            ],
            **{
                key: {"updated": doc["updated"], "data": doc["data"]}
                for key, kind in _SECTIONS.items()
                for doc in [self.documents[kind]]
            },
            "view": None if self.view is None else dict(self.view),
        }


def dump_archive(archive: Archive) -> bytes:
    """The bytes of an export file holding ``archive``."""
    doc = {
        "format": EXPORT_FORMAT,
        "version": FORMAT_VERSION,
        "exported": format_ts(now()),
        **archive.to_json(),
    }
    return encode_json(doc, indent=1)


def read_archive(path: Path, data: bytes | None = None) -> Archive:
    """Parse and check an export file (``data``: its bytes, already read from ``path``);
    every problem names the file and the field."""

    def fail(reason: str) -> SessionFormatError:
        return SessionFormatError(path, reason)

    raw = read_regular(path, MAX_EXPORT_BYTES, "session export") if data is None else data
    doc = check_header(loads(raw, fail), EXPORT_FORMAT, fail)
    name = doc.get("name")
    if not isinstance(name, str):
        raise fail("'name' must be a string")
    created = parse_ts(doc.get("created"), lambda r: fail(f"created: {r}"))
    first_seq = doc.get("first_seq")
    if not isinstance(first_seq, int) or isinstance(first_seq, bool) or first_seq < 0:
        raise fail("'first_seq' must be a non-negative integer")
    records = doc.get("messages")
    if not isinstance(records, list):
        raise fail("'messages' must be a list")
    entries: list[Entry] = []
    for i, record in enumerate(records):

        def where(reason: str, i: int = i) -> SessionFormatError:
            return fail(f"messages[{i}]: {reason}")

        if not isinstance(record, dict) or set(record) != {"seq", "ts", "message"}:
            raise where("must be an object with exactly seq, ts and message")
        if record["seq"] != first_seq + i:
            raise where(f"seq {record['seq']!r} out of order (expected {first_seq + i})")
        entries.append(
            Entry(
                first_seq + i,
                parse_ts(record["ts"], where),
                decode_message(record["message"], where),
            )
        )
    ids = [e.message.id for e in entries]
    if len(set(ids)) != len(ids):
        raise fail("'messages' has duplicate message ids")
    documents: dict[str, dict[str, Any]] = {}
    for key, kind in _SECTIONS.items():
        section = doc.get(key)
        if not isinstance(section, dict) or not isinstance(section.get("data"), dict):
            raise fail(f"'{key}' must be an object with a 'data' object")

        def updated(reason: str, key: str = key) -> SessionFormatError:
            return fail(f"{key}.updated: {reason}")

        parse_ts(section.get("updated"), updated)
        documents[kind] = {"updated": section["updated"], "data": section["data"]}
    view = doc.get("view")
    if view is not None:
        if not isinstance(view, dict) or not isinstance(view.get("messages"), list):
            raise fail("'view' must be null or an object with a 'messages' list")
        through = view.get("through_seq")
        if not isinstance(through, int) or isinstance(through, bool) or through < 0:
            raise fail("'view.through_seq' must be a non-negative integer")
        parse_ts(view.get("updated"), lambda r: fail(f"view.updated: {r}"))
        for i, item in enumerate(view["messages"]):

            def in_view(reason: str, i: int = i) -> SessionFormatError:
                return fail(f"view.messages[{i}]: {reason}")

            decode_message(item, in_view)
        based_on = view.get("based_on", through)
        if not isinstance(based_on, int) or isinstance(based_on, bool) or based_on < through:
            raise fail("'view.based_on' must be an integer, at least 'through_seq'")
        view = {k: view[k] for k in ("updated", "through_seq", "messages")}
        view["based_on"] = based_on
        _check_view_stands_for(entries, first_seq, view, fail)
    return Archive(name, created, first_seq, tuple(entries), documents, view)


def _check_view_stands_for(
    entries: list[Entry], first_seq: int, view: dict[str, Any], fail: Any
) -> None:
    """Refuse a view that does not stand for the file's own history.

    An export file comes from outside, and its view is what an agent resuming the session
    sends (the history is only what ``session show`` lists). So each message of the view is
    either a message of the history, as it is there (same id, same content), or a compaction
    output whose every replaced id is in the history, as ``set_view`` requires; a
    compaction output speaks as the system only where it stands for system messages. And the
    view covers no more history than the file holds.
    """
    next_seq = first_seq + len(entries)
    if view["based_on"] > next_seq:
        raise fail(f"'view.based_on' is {view['based_on']}, past the history's end ({next_seq})")
    by_id = {e.message.id: e.message for e in entries}
    for i, item in enumerate(view["messages"]):
        message = decode_message(item, lambda r: fail(r))
        record = provenance(message)
        if record is None:
            stored = by_id.get(message.id)
            if stored is None or encode_message(stored) != encode_message(message):
                raise fail(
                    f"view.messages[{i}]: a {message.role} message that is not in the "
                    "history and not a compaction output: the view must stand for the history"
                )
            continue
        refs = record.get("replaces", ())
        if not isinstance(refs, list | tuple) or not all(r in by_id for r in refs):
            raise fail(
                f"view.messages[{i}]: it replaces messages that are not in the history "
                "(every id a compaction output replaces must be there)"
            )
        if message.role == "system" and not (refs and all(by_id[r].role == "system" for r in refs)):
            raise fail(
                f"view.messages[{i}]: a system message that stands for no system message of "
                "the history"
            )
