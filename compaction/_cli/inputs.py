"""Finding conversation files, reading them, and writing results safely.

A file named on the command line must be readable: if it is not, that is the user's mistake
and the run stops with exit 2. A directory is searched recursively for the file names the
readers know (``*.json``, ``*.jsonl``, ``*.traj``); a file found that way which turns out to be
something else is skipped with a note, since a folder of logs usually holds a README too.

Results are written atomically (a temporary file in the same directory, then ``os.replace``),
so ``-o`` never holds half a conversation and is never created when the run fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import CliError

__all__ = ["Source", "expand", "load", "serialize", "write_atomic"]

SUFFIXES = (".json", ".jsonl", ".traj")


@dataclass(frozen=True)
class Source:
    """One input file: ``explicit`` when named on the command line, ``relative`` its path
    below the directory it was found in (its name when explicit)."""

    path: Path
    explicit: bool
    relative: Path


def expand(paths: Iterable[str]) -> list[Source]:
    """Every input file, in a stable order; a missing path is an error naming it."""
    found: list[Source] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and p.name.endswith(SUFFIXES) and not p.name.startswith(".")
            )
            found.extend(Source(p, False, p.relative_to(path)) for p in files)
        elif path.exists():
            found.append(Source(path, True, Path(path.name)))
        else:
            raise CliError(f"{raw}: no such file or directory")
    if not found:
        raise CliError(
            f"no conversation files found in {', '.join(paths)} "
            f"(looked for {', '.join('*' + s for s in SUFFIXES)})"
        )
    return found


def load(path: Path) -> Any:
    """The :class:`~compaction.formats.Loaded` transcript in ``path`` (any known format)."""
    from ..formats import load as load_transcript

    return load_transcript(path)


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


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` all at once: a reader sees the old file or the new one."""
    from .._atomic import write_atomic as write

    write(path, data)
