"""Finding conversation files, reading them, and writing results safely.

A file named on the command line must be readable: if it is not, that is the user's mistake
and the run stops with exit 2. A directory is searched recursively for the file names the
readers know (``*.json``, ``*.jsonl``, ``*.traj``); a file found that way which turns out to be
something else is skipped with a note, since a folder of logs usually holds a README too.

Results are written atomically (a temporary file in the same directory, then ``os.replace``),
so ``-o`` never holds half a conversation and is never created when the run fails.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .._reading import MIB, open_regular, read_limited, read_regular
from .errors import CliError

__all__ = [
    "STDIO",
    "Source",
    "expand",
    "load",
    "serialize",
    "write_atomic",
    "write_output",
    "write_stdout",
]

SUFFIXES = (".json", ".jsonl", ".traj")

#: The largest transcript read (its parsed form takes several times this in memory).
MAX_TRANSCRIPT_BYTES: Final = 512 * MIB


#: The name ``-`` stands for: read stdin, write stdout.
STDIO = "-"
STDIN_NAME = "<stdin>"


@dataclass(frozen=True)
class Source:
    """One input file: ``explicit`` when named on the command line, ``relative`` its path
    below the directory it was found in (its name when explicit). ``stdin`` for ``-``."""

    path: Path
    explicit: bool
    relative: Path
    stdin: bool = False


def expand(paths: Iterable[str]) -> list[Source]:
    """Every input file, in a stable order; a missing path is an error naming it."""
    paths = list(paths)
    found: list[Source] = []
    for raw in paths:
        if raw == STDIO:
            if len(paths) > 1:
                raise CliError("- (stdin) is a single input: it cannot be combined with others")
            return [Source(Path(STDIN_NAME), True, Path("stdin.json"), stdin=True)]
        path = Path(raw)
        if path.is_dir() and not path.is_symlink():  # a link is refused when read
            files = sorted(
                p
                for p in path.rglob("*")
                if p.name.endswith(SUFFIXES) and not p.name.startswith(".") and _regular(p)
            )
            found.extend(Source(p, False, p.relative_to(path)) for p in files)
        elif os.path.lexists(path):  # a symlink, even a dangling one, is refused when read
            found.append(Source(path, True, Path(path.name)))
        else:
            raise CliError(f"{raw}: no such file or directory")
    if not found:
        raise CliError(
            f"no conversation files found in {', '.join(paths)} "
            f"(looked for {', '.join('*' + s for s in SUFFIXES)})"
        )
    return found


def _regular(path: Path) -> bool:
    # Found by searching: only regular files, never a symlink (it points outside the folder).
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def read_input(source: Source | Path) -> bytes:
    """The bytes of an input file, or of stdin: a regular file only, never through a
    symlink, at most ``MAX_TRANSCRIPT_BYTES`` (see ``compaction._reading``)."""
    if isinstance(source, Source) and source.stdin:
        return read_limited(sys.stdin.buffer, MAX_TRANSCRIPT_BYTES, STDIN_NAME)
    path = source.path if isinstance(source, Source) else source
    return read_regular(path, MAX_TRANSCRIPT_BYTES, "transcript")


def load(source: Source | Path, format: str | None = None) -> Any:
    """The [`Loaded`][compaction.formats.loaded.Loaded] transcript of ``source`` (any known
    format, or the one ``format`` names), read as [`read_input`][] reads it: a file is
    opened with the same checks and parsed from its stream (a JSONL log a line at a time, so
    its bytes and text are never held along with its records)."""
    from ..formats import loads
    from ..formats.registry import read_document

    if isinstance(source, Source) and source.stdin:
        return loads(read_input(source), STDIN_NAME, format)
    path = source.path if isinstance(source, Source) else source
    return read_document(parse(path), str(path), format)


def parse(path: Path) -> Any:
    """The parsed [`Document`][compaction.formats.detect.Document] of the file at ``path``,
    opened as [`read_input`][] opens it (a regular file, never through a symlink, bounded)
    and parsed from its stream."""
    from ..formats._stream import parse_stream

    with open_regular(path, MAX_TRANSCRIPT_BYTES, "transcript") as stream:
        return parse_stream(stream, str(path), limit=MAX_TRANSCRIPT_BYTES)


def output_format(loaded: Any, to: str | None) -> str:
    """The provider shape to write: ``--to`` if given, else the input's own shape."""
    if to:
        return to
    shape = getattr(loaded, "output_format", None)
    if shape:
        return str(shape)
    return "anthropic" if loaded.format in {"anthropic", "claude-code"} else "openai"


def serialize(messages: Sequence[Any], loaded: Any, to: str | None) -> bytes:
    """The conversation as the bytes of a file in the chosen shape (the input's own shape,
    JSONL or ``{"messages": ...}`` object included, unless ``--to`` asks for another)."""
    from ..formats import dumps

    return dumps(messages, output_format(loaded, to), like=loaded).encode("utf-8")


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to the regular file ``path`` all at once (a reader sees the old file or
    the new one); a device, FIFO, symlink or directory there is refused, never replaced."""
    from .._atomic import write_atomic as write

    write(path, data, mode=mode)


def write_stdout(data: bytes) -> None:
    """``data`` on stdout; a failed write (a full disk behind ``>``) names stdout."""
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), STDOUT_NAME) from None


STDOUT_NAME = "<stdout>"


def write_output(dest: str | Path, data: bytes, *, mode: int | None = None) -> str:
    """Write ``data`` to ``dest`` (``-``: stdout); answer where it went, for the report."""
    if str(dest) == STDIO:
        write_stdout(data)
        return STDIO
    write_atomic(Path(dest), data, mode=mode)
    return str(dest)


def check_format(name: str | None) -> None:
    """Refuse an unknown ``--format NAME`` before any file is read (exit 2, the names listed)."""
    if name is None:
        return
    from ..formats import FormatError
    from ..formats.registry import get

    try:
        get(name)
    except FormatError as exc:
        raise CliError(f"--format: {exc.reason} (see 'compaction formats')") from None
