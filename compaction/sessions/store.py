"""The session store: named sessions in one backend, chosen by a path or a URL.

    SessionStore()                                   # the default: files (see below)
    SessionStore("/some/dir")                        # files under that directory
    SessionStore.from_url("file:///some/dir")        # the same, as a URL (or a bare path)
    SessionStore.from_url("postgresql://u@db/agents")  # PostgreSQL, for fleets of workers

Without a root, the ``COMPACTION_SESSIONS_URL`` environment variable picks the store; else
files under ``COMPACTION_SESSIONS_DIR``; else the platform's user data directory
(``$XDG_DATA_HOME`` or ``~/.local/share`` on Linux, ``~/Library/Application Support`` on
macOS, ``%LOCALAPPDATA%`` on Windows) plus ``compaction/sessions``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Final
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from .archive import read_archive
from .backend import Backend
from .errors import SessionExistsError, SessionNotFoundError
from .filestore import FileBackend
from .indexer import Indexer
from .names import validate_name
from .session import Session

__all__ = ["ENV_VAR", "URL_ENV_VAR", "SessionStore", "default_root"]

ENV_VAR: Final = "COMPACTION_SESSIONS_DIR"
URL_ENV_VAR: Final = "COMPACTION_SESSIONS_URL"
_POSTGRES: Final = ("postgresql", "postgres")


def default_root() -> Path:
    """Where file sessions live when no root is given (see the module docstring)."""
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


def backend_for(url: str, *, durable: bool = True, **options: Any) -> Backend:
    """The backend a store URL names: ``postgresql://…``, ``file:///path`` or a bare path."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"a session store URL must be a non-empty string, got {url!r}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in _POSTGRES:
        try:
            from .postgres import PostgresBackend
        except ImportError as exc:
            raise ImportError(
                f"the PostgreSQL session store needs psycopg 3 ({exc.name} is missing): "
                "pip install 'compaction-ladder[postgres]'"
            ) from exc
        return PostgresBackend(url, **options)
    if options:
        raise TypeError(f"options {sorted(options)} apply to a PostgreSQL store only")
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"{url!r}: a file:// store URL must name a local path (file:///dir)")
        path = Path(url2pathname(unquote(parts.path)))
        return FileBackend(Path(os.path.abspath(path.expanduser())), durable=durable)
    # One letter is a Windows drive ("C:\\sessions"), not a scheme.
    if "://" in url and len(scheme) > 1:
        raise ValueError(
            f"unknown session store URL scheme {parts.scheme!r} in {url!r}: use "
            "postgresql://…, file:///path or a plain directory path"
        )
    return FileBackend(Path(os.path.abspath(Path(url).expanduser())), durable=durable)


class SessionStore:
    """Named persistent sessions in one backend (files under a root directory by default).

    ``durable=False`` (files only) skips fsync: faster, still atomic against a crashed
    process, but not against a power cut; keep the default unless you can lose the last
    writes. ``location`` names the store for people (a directory, or the database URL
    without its password); ``root`` is the directory of a file store (for a database store,
    the same text as ``location``).

    ``index_views=True`` brings a session's search index up to date on a thread of the
    store's own each time a view (a compaction) is stored, so the next search only asks and
    the caller never waits for the indexing (see [`compaction.sessions.indexer`][]); by
    default the index is brought up to date at search time. Close the store (or use it as a
    context manager) to wait for what is queued.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        durable: bool = True,
        backend: Backend | None = None,
        index_views: bool = False,
    ) -> None:
        if backend is None:
            url = os.environ.get(URL_ENV_VAR) if root is None else None
            if url:
                backend = backend_for(url, durable=durable)
            else:
                chosen = default_root() if root is None else Path(root).expanduser()
                # Absolute now, so a later chdir does not move the store.
                backend = FileBackend(Path(os.path.abspath(chosen)), durable=durable)
        self.backend = backend
        self.durable = durable
        self.location: str = backend.location
        self.root: Any = backend.root if isinstance(backend, FileBackend) else backend.location
        #: The background indexer (``index_views=True``), else None.
        self.indexer: Indexer | None = Indexer() if index_views else None

    @classmethod
    def from_url(
        cls,
        url: str | os.PathLike[str] | None = None,
        *,
        durable: bool = True,
        index_views: bool = False,
        **options: Any,
    ) -> SessionStore:
        """The store ``url`` names: ``postgresql://user@host/db`` (psycopg 3, the
        ``compaction-ladder[postgres]`` extra; ``options`` such as ``min_size``/``max_size`` go to
        its connection pool), ``file:///path``, or a bare path. Without ``url``,
        ``$COMPACTION_SESSIONS_URL``, else the default file store."""
        if url is None:
            url = os.environ.get(URL_ENV_VAR) or None
            if url is None:
                return cls(durable=durable, index_views=index_views)
        backend = backend_for(os.fspath(url), durable=durable, **options)
        return cls(backend=backend, index_views=index_views)

    def __repr__(self) -> str:
        return f"SessionStore({self.location!r})"

    def close(self) -> None:
        """Wait (up to 30 s) for the background indexer's queue, if any, then release the
        backend's connections (a no-op for files)."""
        if self.indexer is not None:
            self.indexer.close()
        self.backend.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self, name: str, create: bool = True) -> Session:
        """The session ``name``. With ``create=False``, SessionNotFoundError if it does not exist.

        Nothing is written by opening: a new session appears with its first write (or
        ``save()``; see [`create`][]).
        """
        validate_name(name)
        session = Session(self.backend, name, store=self, indexer=self.indexer)
        if not create and not session.exists():
            raise SessionNotFoundError(name, self.location)
        return session

    def create(self, name: str) -> Session:
        """Open ``name`` and write it now (an existing session is simply opened)."""
        return self.open(name).save()

    def exists(self, name: str) -> bool:
        """True when session ``name`` has been written and not deleted."""
        validate_name(name)
        return self.backend.exists(name)

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
        return self.backend.names()

    def delete(self, name: str) -> None:
        """Delete session ``name`` and all its data (SessionNotFoundError if there is none)."""
        validate_name(name)
        self.backend.delete(name)

    def clear(self, name: str) -> None:
        """Empty the history of session ``name`` (SessionNotFoundError if there is none)."""
        self.open(name, create=False).clear()

    def export(self, name: str, path: str | os.PathLike[str]) -> Path:
        """Write session ``name`` to the single JSON file ``path``; return its path."""
        return self.open(name, create=False).export(path)

    def import_(self, path: str | os.PathLike[str] | bytes, name: str | None = None) -> Session:
        """Create session ``name`` (default: the exported name) from an export file (or its
        bytes: ``path`` may be the file's contents, read from stdin say).

        The new session is identical to the exported one, whichever store exported it:
        messages with their ids, sequence numbers and timestamps, global context, state,
        metadata and view. An existing session is never overwritten or merged into
        (SessionExistsError). The file must be a regular one, named directly (a symlink, a
        device or a FIFO is refused with an ``OSError`` naming it), of at most 512 MiB.
        """
        if isinstance(path, bytes):
            archive = read_archive(Path("<stdin>"), path)
        else:
            archive = read_archive(Path(path))
        name = archive.name if name is None else name
        validate_name(name)
        if self.backend.exists(name):
            raise SessionExistsError(name, self.location)
        self.backend.restore(name, archive)
        return self.open(name)

    import_session = import_
