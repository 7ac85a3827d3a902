"""One named, persistent conversation: raw history, global context, state, metadata, view.

On disk a session is a directory under the store root::

    messages.jsonl   the raw history, append-only (see journal.py)
    context.json     global context   } versioned JSON documents, each replaced atomically
    state.json       state            }
    metadata.json    metadata         }
    view.json        the compacted view last sent to the model (optional)

Every change is on disk when the call returns (there is nothing to forget to save); ``save()``
exists to create the session's files before anything is written.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..messages import Message
from ..transcript import is_compaction_output, message_ref, provenance
from .codec import (
    check_json,
    decode_message,
    dump_document,
    encode_message,
    format_ts,
    now,
    parse_ts,
    read_document,
)
from .errors import SessionFormatError
from .files import FileLock, atomic_write, ensure_private_dir, fsync_dir, write_new_file
from .journal import Entry, Journal
from .mapping import SessionMapping
from .recall import RecallTool

if TYPE_CHECKING:
    from .store import SessionStore

__all__ = ["FILES", "Session"]

LOG_FILE: Final = "messages.jsonl"
FILES: Final = {
    "context": "context.json",
    "state": "state.json",
    "metadata": "metadata.json",
    "view": "view.json",
}
_MAPS: Final = ("context", "state", "metadata")


class Session:
    """A named conversation context in a :class:`SessionStore` (get one with ``store.open``).

    Opening does not create anything: ``exists()`` stays False, and ``messages`` is empty,
    until the first write or ``save()``.
    """

    def __init__(self, store: SessionStore, name: str) -> None:
        self.store = store
        self.name = name
        self.path: Path = store.root / name
        self._journal = Journal(self.path / LOG_FILE, durable=store.durable)
        self._docs: dict[str, tuple[tuple[int, ...], dict[str, Any]]] = {}
        self._mutex = threading.RLock()
        self._holding = False
        self.global_context = SessionMapping(self, "context", "global context")
        self.state = SessionMapping(self, "state", "state")
        self.metadata = SessionMapping(self, "metadata", "metadata")

    def __repr__(self) -> str:
        return f"<Session {self.name!r} at {self.path}>"

    # -- locking and creation ----------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex:
            if self._holding:
                yield
                return
            with FileLock(self.store._lock_path(self.name)):
                self._holding = True
                try:
                    yield
                finally:
                    self._holding = False

    def exists(self) -> bool:
        """True once the session has been written to disk (and until it is deleted)."""
        return self._journal.exists()

    def save(self) -> Session:
        """Make sure the session exists on disk. Every change is already saved when made."""
        with self._locked():
            self._materialize()
        return self

    def _materialize(self) -> None:
        # Built in a hidden directory and renamed into place, so a session directory is
        # either absent or complete: a crash here never leaves a half-created session.
        if self._journal.exists():
            return
        root = self.store.root
        ensure_private_dir(root)
        tmp = root / f".tmp-{self.name}-{os.getpid()}-{secrets.token_hex(4)}"
        os.mkdir(tmp, 0o700)
        os.chmod(tmp, 0o700)
        durable = self.store.durable
        try:
            created = now()
            stamp = format_ts(created)
            Journal.create(tmp / LOG_FILE, self.name, created, durable=durable)
            for kind in _MAPS:
                data = {"created": stamp} if kind == "metadata" else {}
                body = {"updated": stamp, "data": data}
                write_new_file(tmp / FILES[kind], dump_document(kind, body), durable=durable)
            if durable:
                fsync_dir(tmp)
            try:
                os.rename(tmp, self.path)
            except OSError:
                if self.path.is_dir():
                    raise SessionFormatError(
                        self.path,
                        f"exists but is not a compaction session (no {LOG_FILE}); move it "
                        "away or choose another name",
                    ) from None
                raise
            if durable:
                fsync_dir(root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._docs.clear()

    # -- the JSON documents ------------------------------------------------------------------

    def _read_doc(self, kind: str) -> dict[str, Any] | None:
        path = self.path / FILES[kind]
        with self._mutex:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                if kind != "view" and self._journal.exists():
                    raise SessionFormatError(
                        path, f"missing, although the session's {LOG_FILE} is there"
                    ) from None
                self._docs.pop(kind, None)
                return None
            key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
            cached = self._docs.get(kind)
            if cached is not None and cached[0] == key:
                return cached[1]
            try:
                doc = read_document(path, kind)
            except FileNotFoundError:  # deleted between stat and read
                return self._read_doc(kind)

            def fail(reason: str) -> SessionFormatError:
                return SessionFormatError(path, reason)

            doc["_updated"] = parse_ts(doc.get("updated"), fail)
            if kind == "view":
                doc["messages"] = _decode_view(doc, fail)
            elif not isinstance(doc.get("data"), dict):
                raise fail("'data' must be a JSON object")
            self._docs[kind] = (key, doc)
            return doc

    def _read_data(self, kind: str) -> dict[str, Any]:
        doc = self._read_doc(kind)
        return {} if doc is None else doc["data"]

    def _sweep(self) -> None:
        # A writer killed mid-replace leaves its ".<file>.<pid>.<rand>.tmp" behind. Every
        # write into the session directory holds the lock we hold now, so any such file
        # is a leftover, never a write in progress.
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.path):
                if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)

    def _write_doc(self, kind: str, body: dict[str, Any]) -> None:
        self._sweep()
        atomic_write(self.path / FILES[kind], dump_document(kind, body), durable=self.store.durable)
        self._docs.pop(kind, None)

    def _update_data(self, kind: str, mutate: Callable[[dict[str, Any]], None]) -> None:
        with self._locked():
            self._materialize()
            self._docs.pop(kind, None)  # re-read under the lock: another process may have written
            data = dict(self._read_data(kind))
            mutate(data)
            self._write_doc(kind, {"updated": format_ts(now()), "data": data})

    # -- the raw history ---------------------------------------------------------------------

    @property
    def entries(self) -> tuple[Entry, ...]:
        """The raw history with each message's sequence number and timestamp."""
        with self._mutex:
            self._journal.refresh()
            return tuple(self._journal.entries)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The full raw history, oldest first (empty for a session not written yet)."""
        return tuple(entry.message for entry in self.entries)

    def last(self, n: int) -> tuple[Message, ...]:
        """The ``n`` most recent messages, oldest first."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"last(n) needs a non-negative int, got {n!r}")
        messages = self.messages
        return messages[len(messages) - n :] if n else ()

    def add(
        self,
        message: Message | Iterable[Message],
        /,
        *more: Message,
        at: datetime | None = None,
    ) -> tuple[Message, ...]:
        """Append messages to the raw history; return them as stored (with their ids).

        A message without an ``id`` gets ``"<session>-<seq>"``. ``at`` sets the timestamp
        (default: now). The batch is one write: all of it is committed, or none.
        """
        batch = [message] if isinstance(message, Message) else list(message)
        batch.extend(more)
        for i, item in enumerate(batch):
            if not isinstance(item, Message):
                raise TypeError(f"add() takes Message objects; item {i} is {type(item).__name__}")
            if item.meta:
                # Stored as JSON: hand back (and keep) what a fresh process will read.
                meta = check_json(dict(item.meta), f"meta of message {i}")
                if meta != dict(item.meta):
                    batch[i] = attrs.evolve(item, meta=meta)
        if not batch:
            return ()
        with self._locked():
            self._materialize()
            entries = self._journal.append(self.name, batch, at or now())
        return tuple(entry.message for entry in entries)

    def add_user(self, text: str, *, at: datetime | None = None, **fields: Any) -> Message:
        """Append a user message (``fields`` as for Message); return it as stored."""
        return self.add(Message("user", text, **fields), at=at)[0]

    def add_assistant(
        self, text: str = "", *, at: datetime | None = None, **fields: Any
    ) -> Message:
        """Append an assistant message (``fields`` as for Message); return it as stored."""
        return self.add(Message("assistant", text, **fields), at=at)[0]

    def clear(self) -> None:
        """Empty the history (and the view). Global context, state and metadata stay.

        Unlike compaction, which never loses a message, this is deletion on request: the
        raw history is gone, so :meth:`recall` of an id from before the clear answers None.
        Ids are never reused (sequence numbers carry on), so an old id never names a newer
        message. Export the session first to keep a copy.
        """
        with self._locked():
            if not self._journal.exists():
                return
            self._journal.refresh()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path / FILES["view"])
            self._docs.pop("view", None)
            # Sequence numbers carry on after a clear, so an id is never reused.
            Journal.create(
                self._journal.path,
                self.name,
                self._journal.created or now(),
                self._journal.next_seq,
                durable=self.store.durable,
            )

    def delete(self) -> None:
        """Delete the session and everything in it (the store's ``delete``)."""
        self.store.delete(self.name)

    @property
    def created(self) -> datetime | None:
        """When the session was first written (None before that)."""
        with self._mutex:
            self._journal.refresh()
            return self._journal.created

    @property
    def updated(self) -> datetime | None:
        """When anything in the session last changed (None before it exists)."""
        moments: list[datetime] = []
        with self._mutex:
            self._journal.refresh()
            if self._journal.created is not None:
                moments.append(self._journal.created)
            if self._journal.entries:
                moments.append(self._journal.entries[-1].timestamp)
            for kind in FILES:
                doc = self._read_doc(kind)
                if doc is not None:
                    moments.append(doc["_updated"])
        return max(moments) if moments else None

    # -- the compacted view and recall -------------------------------------------------------

    def set_view(self, messages: Sequence[Message]) -> None:
        """Store ``messages`` (a compacted view of the history) beside the raw history.

        Every message a view stands in for (``meta["compaction"]["replaces"]``) must be in the
        raw history, so that it can be recalled: a view that would lose a message is refused.
        """
        view = list(messages)
        for i, item in enumerate(view):
            if not isinstance(item, Message):
                raise TypeError(
                    f"set_view() takes Message objects; item {i} is {type(item).__name__}"
                )
        with self._locked():
            self._materialize()
            self._journal.refresh()
            covered = -1
            for i, item in enumerate(view):
                record = provenance(item)
                refs = list(record.get("replaces", ())) if record is not None else []
                for ref in refs:
                    entry = self._journal.find(ref) if isinstance(ref, str) else None
                    if entry is None:
                        raise ValueError(
                            f"view message {i} replaces {ref!r}, which is not in the history "
                            f"of session {self.name!r}: storing this view would lose it"
                        )
                    covered = max(covered, entry.seq)
                if not is_compaction_output(item):
                    entry = self._journal.find(message_ref(item))
                    if entry is not None:
                        covered = max(covered, entry.seq)
            through = covered + 1 if covered >= 0 else self._journal.next_seq
            body = {
                "updated": format_ts(now()),
                "through_seq": through,
                "messages": [encode_message(m) for m in view],
            }
            self._write_doc("view", body)

    save_view = set_view

    def view(self) -> tuple[Message, ...]:
        """The messages to send: the stored view plus anything added after it was taken.

        Without a stored view, the raw history.
        """
        with self._mutex:
            entries = self.entries
            doc = self._read_doc("view")
            if doc is None:
                return tuple(e.message for e in entries)
            through = doc["through_seq"]
            return tuple(doc["messages"]) + tuple(e.message for e in entries if e.seq >= through)

    def recall(self, ref: str) -> Message | None:
        """The original message ``ref`` names (an id, or a ``sha1:`` fingerprint), or None
        (never stored, or emptied by :meth:`clear`)."""
        with self._mutex:
            self._journal.refresh()
            entry = self._journal.find(ref)
        return None if entry is None else entry.message

    def recall_tool(self) -> RecallTool:
        """``recall`` as a tool for the model: ``.spec``/``.openai()`` and a callable."""
        return RecallTool(self)

    # -- presentation and export -------------------------------------------------------------

    def format_history(self, with_metadata: bool = False) -> str:
        """The history as text, one message per line: timestamp, role, content.

        ``with_metadata`` adds a header with the session's timestamps, metadata, global
        context and state, and each message's id, token count and meta.
        """
        lines: list[str] = []
        entries = self.entries
        if with_metadata:
            created, updated = self.created, self.updated
            lines.append(f"Session: {self.name}")
            lines.append(f"Created: {_stamp(created) if created else '-'}")
            lines.append(f"Updated: {_stamp(updated) if updated else '-'}")
            for label, mapping in (
                ("Metadata", self.metadata),
                ("Global context", self.global_context),
                ("State", self.state),
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

    def snapshot(self) -> dict[str, Any]:
        """Everything in the session as JSON-ready data (what ``export`` writes)."""
        with self._locked():
            self._journal.refresh()
            journal = self._journal
            view = self._read_doc("view")
            docs = {kind: self._read_doc(kind) for kind in _MAPS}
            return {
                "name": self.name,
                "created": format_ts(journal.created) if journal.created else None,
                "first_seq": journal.first_seq,
                "messages": [
                    {
                        "seq": e.seq,
                        "ts": format_ts(e.timestamp),
                        "message": encode_message(e.message),
                    }
                    for e in journal.entries
                ],
                **{
                    _EXPORT_KEYS[kind]: {"updated": doc["updated"], "data": doc["data"]}
                    if doc is not None
                    else None
                    for kind, doc in docs.items()
                },
                "view": None
                if view is None
                else {
                    "updated": view["updated"],
                    "through_seq": view["through_seq"],
                    "messages": [encode_message(m) for m in view["messages"]],
                },
            }

    def export(self, path: str | os.PathLike[str]) -> Path:
        """Write the whole session to one JSON file (owner-only, atomically); return its path."""
        return self.store.export(self.name, path)


_EXPORT_KEYS: Final = {"context": "global_context", "state": "state", "metadata": "metadata"}


def _decode_view(doc: dict[str, Any], fail: Callable[[str], SessionFormatError]) -> list[Message]:
    through = doc.get("through_seq")
    if not isinstance(through, int) or isinstance(through, bool) or through < 0:
        raise fail("'through_seq' must be a non-negative integer")
    items = doc.get("messages")
    if not isinstance(items, list):
        raise fail("'messages' must be a list")
    out = []
    for i, item in enumerate(items):

        def where(reason: str, i: int = i) -> SessionFormatError:
            return fail(f"messages[{i}]: {reason}")

        out.append(decode_message(item, where))
    return out


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)
