"""Writing a file all at once: a reader, or a crash, sees the old file or the new one.

Only regular files are ever written. What already stands at the path decides:

- nothing, or a regular file: the data goes to a temporary file in the same directory, which
  then replaces the path (``os.replace``), so the path never holds half of it;
- a symlink, a device node (``/dev/null``, ``/dev/full``), a FIFO, a socket or a directory: the
  write is refused with ``NotRegularFileError``, and nothing is written. Replacing such an
  entry would swap out something that is not ours (a replaced ``/dev/null`` breaks a machine;
  a followed symlink writes wherever someone else pointed it).

A write that fails (``ENOSPC``, ``EFBIG``, ``EDQUOT``...) removes its temporary file and raises
``OSError`` naming the destination, so the caller reports the real reason and the old file
stays as it was.

The temporary file is created with the process umask applied (like any file a command writes),
not ``mkstemp``'s owner-only mode, so ``compaction compact -o out.json`` gives the same
permissions as ``> out.json`` would; ``mode`` asks for another (an export of private data is
owner-only). An existing file keeps its own mode unless ``mode`` is given.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

__all__ = ["NotRegularFileError", "check_destination", "write_atomic"]

_KINDS = (
    (stat.S_ISLNK, "a symlink"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFileError(OSError):
    """The destination exists and is not a regular file; nothing was written."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(
            errno.EEXIST,
            f"is {kind}, not a regular file; refusing to replace it (write to a regular file "
            "path instead)",
            str(path),
        )
        self.kind = kind


def _kind(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_destination(path: str | os.PathLike[str]) -> int | None:
    """Raise ``NotRegularFileError`` unless ``path`` is absent or a regular file; answer
    the existing file's permission bits (None when absent). The last component is never
    followed: a symlink is refused, not written through."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    kind = _kind(st.st_mode)
    if kind is not None:
        raise NotRegularFileError(path, kind)
    return stat.S_IMODE(st.st_mode)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> None:
    """Replace the regular file ``path`` with ``data`` (creating parent directories), durably
    and atomically; refuse anything else at ``path`` (see the module docstring)."""
    target = Path(path)
    existing = check_destination(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | os.O_EXCL
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_BINARY", 0)
    )
    fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    try:
        try:
            wanted = mode if mode is not None else existing
            if wanted is not None:
                os.fchmod(fd, wanted)
            view = memoryview(data)
            while view:  # a short write (a nearly full disk) is retried, then fails loudly
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        # Checked again right before the swap: a FIFO or link planted while we wrote is
        # still never replaced.
        check_destination(target)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, NotRegularFileError) or exc.filename == str(target):
            raise
        # Name the file the user asked for, not our temporary file.
        raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
