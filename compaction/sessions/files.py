"""Private files, atomic replacement and inter-process locks, with the standard library only.

Every file is created owner-only (0o600) and every directory 0o700, whatever the umask: a
session holds a user's conversations. A JSON document is replaced atomically (temporary file
in the same directory, fsync, ``os.replace``, fsync of the directory), so a crash leaves
either the old complete version or the new one, never a torn file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from pathlib import Path
from types import TracebackType

__all__ = [
    "FileLock",
    "append_bytes",
    "atomic_write",
    "ensure_private_dir",
    "fsync_dir",
    "write_new_file",
]

FILE_MODE = 0o600
DIR_MODE = 0o700
_POSIX = os.name == "posix"
_BINARY = getattr(os, "O_BINARY", 0)


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` and any missing parents as 0o700 directories (existing ones untouched)."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            continue
        # mkdir's mode is filtered by the umask; chmod is not.
        os.chmod(directory, DIR_MODE)


def fsync_dir(path: Path) -> None:
    """Make a rename or create in ``path`` durable (a no-op where directories cannot be opened)."""
    if not _POSIX:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_owner_only(path: Path, flags: int, data: bytes, durable: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | _BINARY | flags, FILE_MODE)
    try:
        if _POSIX:
            os.fchmod(fd, FILE_MODE)  # the umask may have widened or narrowed FILE_MODE
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_new_file(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Create ``path`` (which must not exist) owner-only, holding ``data``."""
    _write_owner_only(path, os.O_EXCL, data, durable)


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers and crashes see the old or the new file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        write_new_file(tmp, data, durable=durable)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


def append_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Append ``data`` to the end of an existing file, creating it owner-only if needed."""
    _write_owner_only(path, os.O_APPEND, data, durable)


class FileLock:
    """An exclusive lock between processes (and threads) on ``path``: flock, or msvcrt.

    The lock file itself is never deleted: deleting a lock file while another process waits
    on it is how two processes end up "holding" the same lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> FileLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _BINARY, FILE_MODE)
        try:
            _lock(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlock(fd)
        finally:
            os.close(fd)


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fd: int) -> None:
        # msvcrt.locking gives up after ~10 s of retries; a lock is held only for one write,
        # so we keep asking rather than fail a legitimate wait.
        while True:
            try:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                return
            except OSError:
                time.sleep(0.05)

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
