"""Reading a file a user named: only a regular file, never through a symlink, never unbounded.

An input is read into memory (whole, or a line at a time), so what stands at the path decides
whether that is safe:

- a regular file no bigger than the limit is read; a bigger one is refused before a byte is
  read (its size is known up front), and the read itself stops at the limit, should the file
  grow meanwhile;
- a symlink is refused, never followed (``O_NOFOLLOW``): it points wherever someone else
  aimed it, and a link to ``/dev/zero`` reads for ever;
- a device (``/dev/zero``, ``/dev/stdin``), a FIFO or a socket is refused: it has no size, so
  a read of it either never ends or blocks until someone writes. It is opened non-blocking,
  so even opening a FIFO with no writer returns at once; the check is on the opened file
  (``fstat``), so the path cannot be swapped between the check and the read.

Problems raise [`InputFileError`][] (an ``OSError`` naming the path), which the command line
reports in one line.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO, Final

__all__ = [
    "MIB",
    "InputFileError",
    "TomlError",
    "grew",
    "open_regular",
    "parse_toml",
    "read_limited",
    "read_regular",
]

MIB: Final = 1 << 20

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_BINARY: Final = getattr(os, "O_BINARY", 0)


class InputFileError(OSError):
    """An input that is not a regular file, or is too big; nothing of it was used."""

    def __init__(self, path: str | os.PathLike[str], reason: str, code: int = errno.EINVAL):
        super().__init__(code, reason, os.fspath(path))


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit >= MIB else f"{limit} bytes"


def read_limited(stream: IO[bytes], limit: int, name: str) -> bytes:
    """At most ``limit`` bytes from an open binary ``stream`` (stdin): more is refused, and
    never read past ``limit + 1`` bytes."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise InputFileError(name, f"too big: more than {_size(limit)}", errno.EFBIG)
    return data


def open_regular(path: str | os.PathLike[str], limit: int, what: str = "file") -> IO[bytes]:
    """The regular file ``path``, open for binary reading (the caller closes it), when it is
    no bigger than ``limit``; an [`InputFileError`][] for anything else (see the module
    docstring). ``what`` names the kind of file in the too-big message ("price table",
    "transcript"). A caller reading it a line at a time still stops at ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise InputFileError(
                path,
                "is a symlink; refusing to follow it (name the file it points to)",
                errno.ELOOP,
            ) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
            raise InputFileError(path, f"is {kind}, not a regular file; refusing to read it")
        if st.st_size > limit:
            raise InputFileError(
                path,
                f"too big for a {what}: {st.st_size:,} bytes, at most {_size(limit)}",
                errno.EFBIG,
            )
    except BaseException:
        os.close(fd)
        raise
    # The descriptor stays non-blocking, which a regular file ignores.
    return os.fdopen(fd, "rb")


def grew(path: str | os.PathLike[str], limit: int) -> InputFileError:
    """The error for a file that grew past ``limit`` bytes while it was read."""
    return InputFileError(path, f"too big: grew past {_size(limit)} while read", errno.EFBIG)


def read_regular(path: str | os.PathLike[str], limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; an
    [`InputFileError`][] for anything else (see the module docstring). ``what`` names the
    kind of file in the too-big message ("price table", "transcript")."""
    with open_regular(path, limit, what) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise grew(path, limit)
    return data


class TomlError(ValueError):
    """Text that is not TOML this program can read (the message says why, without a path)."""


def parse_toml(data: bytes) -> dict[str, object]:
    """The table in the TOML document ``data``; a [`TomlError`][] for text that is not UTF-8,
    not TOML, or nested too deeply to parse (the parser recurses once per level)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TomlError("not UTF-8 text") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(f"not valid TOML: {exc}") from None
    except RecursionError:
        raise TomlError("not a usable TOML file: nested too deeply to read") from None
