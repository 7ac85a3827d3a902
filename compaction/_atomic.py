"""Writing a file all at once: a reader, or a crash, sees the old file or the new one.

The temporary file is created with the process umask applied (like any file a command writes),
not ``mkstemp``'s owner-only mode, so ``compaction compact -o out.json`` gives the same
permissions as ``> out.json`` would. An existing file keeps its own mode.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` (creating parent directories), durably and atomically."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(fd if os.name == "posix" else tmp, stat.S_IMODE(os.stat(target).st_mode))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
