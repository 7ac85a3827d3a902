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
import stat
import sys
import time
from pathlib import Path
from types import TracebackType

__all__ = [
    "FileLock",
    "UnsafeLocationError",
    "check_private_dir",
    "read_bytes",
    "append_all_or_nothing",
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
# Where the platform has it (POSIX), opening a symlink fails with ELOOP instead of following it.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafeLocationError(PermissionError):
    """A store root or session directory we must not trust (see [`check_private_dir`][])."""


def check_private_dir(path: Path, what: str, *, follow: bool = False) -> bool:
    """True when ``path`` is a directory only we can write to; False when it does not exist.

    Refused (UnsafeLocationError, saying how to fix it): a symlink (unless ``follow``, for a
    store root the user chose), a non-directory, a directory another user owns, or one that
    group or others can write to.
    """
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeLocationError(
            f"{what} {path} is a symbolic link; a session directory must be a real directory "
            "(remove the link)"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeLocationError(f"{what} {path} is not a directory")
    if not _POSIX:
        return True
    uid = os.geteuid()
    if st.st_uid != uid:
        raise UnsafeLocationError(
            f"{what} {path} is owned by uid {st.st_uid}, not by you (uid {uid}): another user "
            "could change what is in it. Use a session store you own (--store or "
            "COMPACTION_SESSIONS_URL), or take ownership: chown -R "
            f"{uid} {path}"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeLocationError(
            f"{what} {path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}): "
            "anyone who can write there could plant links that make your next write land in "
            f"another file. Fix it with: chmod go-w {path}"
        )
    return True


def read_bytes(path: Path) -> bytes:
    """The contents of ``path``, never through a symlink (FileNotFoundError if absent)."""
    fd = os.open(path, os.O_RDONLY | _BINARY | NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return f.read()


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
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW)
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
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | _BINARY | NOFOLLOW | flags, FILE_MODE)
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


def append_all_or_nothing(path: Path, data: bytes, end: int, *, durable: bool = True) -> None:
    """Append ``data`` to the existing file ``path``, whose committed length is ``end``.

    When the write fails part way (a full disk, a file size limit), the bytes that did land
    are cut off again before the error is raised, so the file holds all of ``data`` or none.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | _BINARY | NOFOLLOW)
    try:
        try:
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        except BaseException:
            # Best effort: if even this fails, the unterminated tail is a torn record that
            # readers skip and the next writer sets aside (see journal.py).
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
            raise
    finally:
        os.close(fd)


class FileLock:
    """An exclusive lock between processes (and threads) on ``path``: flock, or msvcrt.

    Deleting a lock file while another process waits on it is how two processes end up
    "holding" the same lock (the waiter locks the deleted file, a newcomer a new one). So the
    file is deleted only by its holder (`unlink`), and a lock taken counts only once the
    path still names the very file locked; otherwise it is taken again on the new file.
    """

    def __init__(self, path: Path, *, blocking: bool = True) -> None:
        self.path = path
        self.blocking = blocking
        self._fd: int | None = None

    def __enter__(self) -> FileLock:
        """Take the lock (BlockingIOError at once when not ``blocking`` and it is held)."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _BINARY | NOFOLLOW, FILE_MODE)
            try:
                _lock(fd, self.blocking)
                if _still_named(fd, self.path):
                    self._fd = fd
                    return self
                _unlock(fd)  # its holder deleted it while we waited: lock the new one
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def unlink(self) -> None:
        """Delete the lock file while holding it (a no-op where an open file cannot be
        deleted): a process waiting on it then locks a new file instead. This ends the
        exclusion at once (a newcomer may lock the new file), so it is the last thing done
        under the lock."""
        if self._fd is not None and sys.platform != "win32":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

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


def _still_named(fd: int, path: Path) -> bool:
    if sys.platform == "win32":  # pragma: no cover - lock files are never deleted there
        return True
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fd: int, blocking: bool) -> None:
        # msvcrt.locking gives up after ~10 s of retries; a lock is held only for one write,
        # so we keep asking rather than fail a legitimate wait.
        if not blocking:
            os.lseek(fd, 0, os.SEEK_SET)
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                raise BlockingIOError(f"{fd} is locked") from None
            return
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

    def _lock(fd: int, blocking: bool) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
