"""Export a session to one JSON file, and import it back under any name, identical.

The export holds everything: every message with its sequence number and timestamp, global
context, state, metadata (with their "updated" stamps) and the stored view. Importing builds
the new session in a hidden directory and renames it into place, so it appears whole or not
at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import attrs

from .codec import (
    FORMAT_VERSION,
    PREFIX,
    check_header,
    decode_message,
    dump_document,
    encode_json,
    format_ts,
    loads,
    now,
    parse_ts,
)
from .errors import SessionFormatError
from .journal import Entry, Journal

__all__ = ["EXPORT_FORMAT", "Archive", "dump_archive", "read_archive"]

EXPORT_FORMAT: Final = f"{PREFIX}.export"
_SECTIONS: Final = {"global_context": "context", "state": "state", "metadata": "metadata"}


@attrs.frozen
class Archive:
    """A parsed export file."""

    name: str
    created: Any  # datetime
    first_seq: int
    entries: tuple[Entry, ...]
    documents: dict[str, dict[str, Any]]  # kind -> {"updated", "data"}
    view: dict[str, Any] | None  # {"updated", "through_seq", "messages": [encoded]}


def dump_archive(snapshot: dict[str, Any]) -> bytes:
    """The bytes of an export file for a session ``snapshot``."""
    doc = {
        "format": EXPORT_FORMAT,
        "version": FORMAT_VERSION,
        "exported": format_ts(now()),
        **snapshot,
    }
    return encode_json(doc, indent=1)


def read_archive(path: Path) -> Archive:
    """Parse and check an export file; every problem names the file and the field."""

    def fail(reason: str) -> SessionFormatError:
        return SessionFormatError(path, reason)

    doc = check_header(loads(path.read_bytes(), fail), EXPORT_FORMAT, fail)
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
        view = {k: view[k] for k in ("updated", "through_seq", "messages")}
    return Archive(name, created, first_seq, tuple(entries), documents, view)


def write_archive_files(directory: Path, name: str, archive: Archive, *, durable: bool) -> None:
    """Write the files of a session named ``name`` holding ``archive`` into ``directory``."""
    from .files import write_new_file
    from .session import FILES, LOG_FILE

    Journal.create(
        directory / LOG_FILE,
        name,
        archive.created,
        archive.first_seq,
        archive.entries,
        durable=durable,
    )
    for kind, body in archive.documents.items():
        write_new_file(directory / FILES[kind], dump_document(kind, body), durable=durable)
    if archive.view is not None:
        write_new_file(
            directory / FILES["view"], dump_document("view", archive.view), durable=durable
        )
