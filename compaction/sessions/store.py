"""The session store: a directory holding one directory per named session.

The root is, in order of preference: the ``root`` argument, the ``COMPACTION_SESSIONS_DIR``
environment variable, or the platform's user data directory (``$XDG_DATA_HOME`` or
``~/.local/share`` on Linux, ``~/Library/Application Support`` on macOS, ``%LOCALAPPDATA%``
on Windows) plus ``compaction/sessions``. Hidden entries in the root (``.locks``, the
``.tmp-*``/``.trash-*`` directories used for atomic create and delete) are never sessions,
and no valid session name starts with a dot.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Final

from .archive import dump_archive, read_archive, write_archive_files
from .errors import SessionExistsError, SessionNotFoundError
from .files import DIR_MODE, atomic_write, ensure_private_dir, fsync_dir
from .names import validate_name
from .session import LOG_FILE, Session

__all__ = ["ENV_VAR", "SessionStore", "default_root"]

ENV_VAR: Final = "COMPACTION_SESSIONS_DIR"
_LOCKS: Final = ".locks"


def default_root() -> Path:
    """Where sessions live when no root is given (see the module docstring)."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else home / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_DATA_HOME")
        # The XDG spec says relative paths in these variables are invalid and to be ignored.
        base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".local" / "share"
    return base / "compaction" / "sessions"


class SessionStore:
    """Named persistent sessions under one root directory.

    ``durable=False`` skips fsync (faster, still atomic against a crashed process, but not
    against a power cut); keep the default unless you know you can lose the last writes.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, *, durable: bool = True) -> None:
        chosen = default_root() if root is None else Path(root).expanduser()
        # Absolute now, so a later chdir does not move the store.
        self.root: Path = Path(os.path.abspath(chosen))
        self.durable = durable

    def __repr__(self) -> str:
        return f"SessionStore({str(self.root)!r})"

    def _lock_path(self, name: str) -> Path:
        locks = self.root / _LOCKS
        if not locks.is_dir():
            ensure_private_dir(locks)
        return locks / f"{name}.lock"

    def open(self, name: str, create: bool = True) -> Session:
        """The session ``name``. With ``create=False``, SessionNotFoundError if it does not exist.

        Nothing is written by opening: a new session appears on disk with its first write
        (or ``save()``; see :meth:`create`).
        """
        validate_name(name)
        session = Session(self, name)
        if not create and not session.exists():
            raise SessionNotFoundError(name, self.root)
        return session

    def create(self, name: str) -> Session:
        """Open ``name`` and write its files now (an existing session is simply opened)."""
        return self.open(name).save()

    def exists(self, name: str) -> bool:
        """True when session ``name`` has been written and not deleted."""
        validate_name(name)
        return (self.root / name / LOG_FILE).is_file()

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._valid(name) and self.exists(name)

    @staticmethod
    def _valid(name: str) -> bool:
        try:
            validate_name(name)
        except ValueError:
            return False
        return True

    def list(self) -> list[str]:
        """The names of all sessions, sorted alphabetically."""
        try:
            children = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted(
            name
            for name in children
            if self._valid(name) and (self.root / name / LOG_FILE).is_file()
        )

    def delete(self, name: str) -> None:
        """Delete session ``name`` and all its files (SessionNotFoundError if there is none)."""
        session = self.open(name, create=False)
        with session._locked():
            if not session.exists():
                raise SessionNotFoundError(name, self.root)
            # Renamed out of the way first, so no reader ever sees a half-deleted session.
            trash = self.root / f".trash-{name}-{secrets.token_hex(4)}"
            os.rename(session.path, trash)
            if self.durable:
                fsync_dir(self.root)
        shutil.rmtree(trash, ignore_errors=True)

    def clear(self, name: str) -> None:
        """Empty the history of session ``name`` (SessionNotFoundError if there is none)."""
        self.open(name, create=False).clear()

    def export(self, name: str, path: str | os.PathLike[str]) -> Path:
        """Write session ``name`` to the single JSON file ``path``; return its path."""
        session = self.open(name, create=False)
        target = Path(path)
        atomic_write(target, dump_archive(session.snapshot()), durable=self.durable)
        return target

    def import_(self, path: str | os.PathLike[str], name: str | None = None) -> Session:
        """Create session ``name`` (default: the exported name) from an export file.

        The new session is identical to the exported one: messages with their ids, sequence
        numbers and timestamps, global context, state, metadata and view. An existing session
        is never overwritten or merged into (SessionExistsError).
        """
        archive = read_archive(Path(path))
        name = archive.name if name is None else name
        validate_name(name)
        session = Session(self, name)
        with session._locked():
            if session.exists():
                raise SessionExistsError(name, self.root)
            ensure_private_dir(self.root)
            tmp = self.root / f".tmp-{name}-{os.getpid()}-{secrets.token_hex(4)}"
            os.mkdir(tmp, DIR_MODE)
            os.chmod(tmp, DIR_MODE)
            try:
                write_archive_files(tmp, name, archive, durable=self.durable)
                if self.durable:
                    fsync_dir(tmp)
                try:
                    os.rename(tmp, session.path)
                except OSError:
                    if session.path.exists():
                        raise SessionExistsError(name, self.root) from None
                    raise
                if self.durable:
                    fsync_dir(self.root)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return session

    import_session = import_
