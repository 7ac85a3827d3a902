"""The file backend: one directory per session under a root directory (the embedded default).

    <root>/<name>/messages.jsonl   the raw history, append-only (see journal.py)
    <root>/<name>/context.json     global context   } versioned JSON documents, each
    <root>/<name>/state.json       state            } replaced atomically
    <root>/<name>/metadata.json    metadata         }
    <root>/<name>/view.json        the compacted view last stored (optional)
    <root>/.locks/<name>.lock      the session's inter-process lock

Every write holds the session's lock; reads take none (a record is committed by its newline,
a document by its rename). A session is created and imported in a hidden ``.tmp-*`` directory
renamed into place, and deleted by renaming it to ``.trash-*`` first, so it is never seen half
made or half gone; a process killed in between leaves those folders behind, and the next
process to open the store sweeps them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ..messages import Message
from . import journal
from .archive import Archive
from .backend import (
    DOCUMENTS,
    MAPPINGS,
    Backend,
    check_epoch,
    check_view_update,
    encoded_view,
)
from .codec import check_view, dump_document, format_ts, now, parse_ts, read_document
from .errors import SessionExistsError, SessionFormatError, SessionNotFoundError
from .files import (
    DIR_MODE,
    FileLock,
    atomic_write,
    check_private_dir,
    ensure_private_dir,
    fsync_dir,
    write_new_file,
)
from .history import Entry, History
from .names import validate_name

__all__ = ["FILES", "LOG_FILE", "FileBackend"]

LOG_FILE: Final = "messages.jsonl"
FILES: Final = {
    "context": "context.json",
    "state": "state.json",
    "metadata": "metadata.json",
    "view": "view.json",
}
_LOCKS: Final = ".locks"


class FileBackend(Backend):
    """Sessions as directories under ``root`` (``durable=False`` skips fsync)."""

    def __init__(self, root: Path, *, durable: bool = True) -> None:
        self.root = root
        self.location = str(root)
        self.durable = durable
        self._checked = False
        self._docs: dict[tuple[str, str], tuple[tuple[int, ...], dict[str, Any]]] = {}

    # -- the root, its safety and its leftovers ------------------------------------------------

    def _ready(self) -> bool:
        """Check the root (once) and sweep what killed processes left; False if it is absent."""
        if not check_private_dir(self.root, "session store root", follow=True):
            return False
        if not self._checked:
            self._checked = True
            self._sweep_root()
        return True

    def _sweep_root(self) -> None:
        # A delete killed after its rename leaves ".trash-<name>-<rand>": already out of the
        # store, garbage. A create or import killed before its rename leaves
        # ".tmp-<name>-<pid>-<rand>": garbage once no process holds that session's lock
        # (every create holds it), so we take the lock without waiting, or leave it be.
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.root):
                if entry.name.startswith(".trash-") and entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                elif entry.name.startswith(".tmp-") and entry.is_dir(follow_symlinks=False):
                    parts = entry.name[len(".tmp-") :].rsplit("-", 2)
                    if len(parts) != 3:
                        continue
                    try:
                        validate_name(parts[0])
                        with FileLock(self._lock_path(parts[0]), blocking=False):
                            shutil.rmtree(entry.path, ignore_errors=True)
                    except (ValueError, BlockingIOError):
                        continue

    def _lock_path(self, name: str) -> Path:
        locks = self.root / _LOCKS
        if not check_private_dir(locks, "session lock directory"):
            ensure_private_dir(locks)
        return locks / f"{name}.lock"

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[FileLock]:
        ensure_private_dir(self.root)
        self._ready()
        with FileLock(self._lock_path(name)) as lock:
            yield lock

    def path(self, name: str) -> Path:
        return self.root / name

    def _dir(self, name: str) -> Path | None:
        """The session directory after checking it is ours alone (None when absent)."""
        if not self._ready():
            return None
        path = self.root / name
        return path if check_private_dir(path, "session directory") else None

    # -- sessions -----------------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        path = self._dir(name)
        return path is not None and (path / LOG_FILE).is_file()

    def names(self) -> list[str]:
        if not self._ready():
            return []
        found = []
        for child in os.listdir(self.root):
            try:
                validate_name(child)
            except ValueError:
                continue
            # A symlink in the root is never a session of ours (see check_private_dir).
            if not (self.root / child).is_symlink() and (self.root / child / LOG_FILE).is_file():
                found.append(child)
        return sorted(found)

    def create(self, name: str) -> None:
        with self._locked(name):
            self._materialize(name)

    def _materialize(self, name: str) -> Path:
        # Built in a hidden directory and renamed into place, so a session directory is
        # either absent or complete: a crash here never leaves a half-created session.
        path = self._dir(name)
        if path is not None and (path / LOG_FILE).exists():
            return path
        created = now()
        stamp = format_ts(created)

        def fill(tmp: Path) -> None:
            journal.create(tmp / LOG_FILE, name, created, durable=self.durable)
            for kind in MAPPINGS:
                data = {"created": stamp} if kind == "metadata" else {}
                body = {"updated": stamp, "data": data}
                write_new_file(tmp / FILES[kind], dump_document(kind, body), durable=self.durable)

        self._build(name, fill, exists=lambda: self._not_a_session(name))
        return self.root / name

    def _not_a_session(self, name: str) -> Exception:
        return SessionFormatError(
            self.root / name,
            f"exists but is not a compaction session (no {LOG_FILE}); move it "
            "away or choose another name",
        )

    def _build(
        self, name: str, fill: Callable[[Path], None], exists: Callable[[], Exception]
    ) -> None:
        tmp = self.root / f".tmp-{name}-{os.getpid()}-{secrets.token_hex(4)}"
        os.mkdir(tmp, DIR_MODE)
        os.chmod(tmp, DIR_MODE)
        try:
            fill(tmp)
            if self.durable:
                fsync_dir(tmp)
            try:
                os.rename(tmp, self.root / name)
            except OSError:
                if os.path.lexists(self.root / name):
                    raise exists() from None
                raise
            if self.durable:
                fsync_dir(self.root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._forget(name)

    def _forget(self, name: str) -> None:
        for kind in DOCUMENTS:
            self._docs.pop((name, kind), None)

    # -- the raw history ----------------------------------------------------------------------

    def read(self, name: str, history: History) -> None:
        path = self._dir(name)
        if path is None:
            history.reset()
            return
        journal.refresh(path / LOG_FILE, history)

    def append(
        self, name: str, history: History, messages: Sequence[Message], at: datetime
    ) -> list[Entry]:
        with self._locked(name):
            path = self._materialize(name)
            return journal.append(
                path / LOG_FILE, name, history, messages, at, durable=self.durable
            )

    # -- the documents ------------------------------------------------------------------------

    def read_document(self, name: str, kind: str) -> dict[str, Any] | None:
        directory = self._dir(name)
        path = self.root / name / FILES[kind]
        try:
            if directory is None:
                raise FileNotFoundError(path)
            st = os.lstat(path)
        except FileNotFoundError:
            self._docs.pop((name, kind), None)
            if kind != "view" and directory is not None and (directory / LOG_FILE).exists():
                raise SessionFormatError(
                    path, f"missing, although the session's {LOG_FILE} is there"
                ) from None
            return None
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        cached = self._docs.get((name, kind))
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            doc = read_document(path, kind)
        except FileNotFoundError:  # replaced between stat and read
            return self.read_document(name, kind)
        except OSError as exc:  # ELOOP: a symlink planted in place of the file
            raise SessionFormatError(path, f"cannot be read safely: {exc.strerror}") from None

        def fail(reason: str) -> SessionFormatError:
            return SessionFormatError(path, reason)

        parse_ts(doc.get("updated"), fail)
        if kind == "view":
            doc["messages"] = [m for m in check_view(doc, fail)]
        elif not isinstance(doc.get("data"), dict):
            raise fail("'data' must be a JSON object")
        self._docs[(name, kind)] = (key, doc)
        return doc

    def _write_document(self, name: str, kind: str, body: dict[str, Any]) -> None:
        directory = self.root / name
        # A writer killed mid-replace leaves its ".<file>.<pid>.<rand>.tmp" behind. Every
        # write into the session directory holds the lock we hold now, so any such file
        # is a leftover, never a write in progress.
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(directory):
                if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
        atomic_write(directory / FILES[kind], dump_document(kind, body), durable=self.durable)
        self._docs.pop((name, kind), None)

    def update_document(
        self, name: str, kind: str, mutate: Callable[[dict[str, Any]], None], updated: str
    ) -> None:
        with self._locked(name):
            self._materialize(name)
            self._docs.pop((name, kind), None)  # re-read under the lock
            doc = self.read_document(name, kind)
            data = dict(doc["data"]) if doc is not None else {}
            mutate(data)
            self._write_document(name, kind, {"updated": updated, "data": data})

    def put_view(
        self, name: str, body: dict[str, Any], min_seq: int | None, epoch: str | None
    ) -> None:
        with self._locked(name):
            self._materialize(name)
            self._docs.pop((name, "view"), None)
            # Read before replacing: a view in a newer format is refused here (by the version
            # check), never overwritten, like every other document.
            stored = self.read_document(name, "view")
            history = History()
            self.read(name, history)
            check_epoch(name, epoch, history.epoch)
            check_view_update(name, stored, body, min_seq, history.first_seq)
            self._write_document(name, "view", body)

    # -- whole sessions -----------------------------------------------------------------------

    def clear(self, name: str) -> None:
        with self._locked(name):
            path = self._dir(name)
            if path is None or not (path / LOG_FILE).exists():
                return
            history = History()
            journal.refresh(path / LOG_FILE, history)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path / FILES["view"])
            self._docs.pop((name, "view"), None)
            # Sequence numbers carry on after a clear, so an id is never reused.
            journal.create(
                path / LOG_FILE,
                name,
                history.created or now(),
                history.next_seq,
                durable=self.durable,
            )
            # A clear is a change: the session's "updated" moment (read from its documents
            # and its newest message) must move, though no message is left to carry it.
            self._docs.pop((name, "metadata"), None)
            meta = self.read_document(name, "metadata")
            data = dict(meta["data"]) if meta is not None else {}
            self._write_document(name, "metadata", {"updated": format_ts(now()), "data": data})

    def delete(self, name: str) -> None:
        with self._locked(name) as lock:
            if not self.exists(name):
                raise SessionNotFoundError(name, self.root)
            # Renamed out of the way first, so no reader ever sees a half-deleted session.
            trash = self.root / f".trash-{name}-{secrets.token_hex(4)}"
            os.rename(self.root / name, trash)
            if self.durable:
                fsync_dir(self.root)
            lock.unlink()  # nothing of the session is left behind, its lock file included
        self._forget(name)
        shutil.rmtree(trash, ignore_errors=True)

    def snapshot(self, name: str) -> Archive:
        with self._locked(name):
            if not self.exists(name):
                raise SessionNotFoundError(name, self.root)
            history = History()
            self.read(name, history)
            docs = {kind: self.read_document(name, kind) for kind in DOCUMENTS}
        view = docs.pop("view")
        return Archive(
            name,
            history.created or now(),
            history.first_seq,
            tuple(history.entries),
            {k: {"updated": d["updated"], "data": d["data"]} for k, d in docs.items() if d},
            None if view is None else encoded_view(view),
        )

    def restore(self, name: str, archive: Archive) -> None:
        def fill(tmp: Path) -> None:
            journal.create(
                tmp / LOG_FILE,
                name,
                archive.created,
                archive.first_seq,
                archive.entries,
                durable=self.durable,
            )
            for kind, body in archive.documents.items():
                data = dump_document(kind, body)
                write_new_file(tmp / FILES[kind], data, durable=self.durable)
            if archive.view is not None:
                data = dump_document("view", archive.view)
                write_new_file(tmp / FILES["view"], data, durable=self.durable)

        with self._locked(name):
            if self.exists(name):
                raise SessionExistsError(name, self.root)
            self._build(name, fill, exists=lambda: SessionExistsError(name, self.root))
