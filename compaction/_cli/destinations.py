"""Where ``compaction compact`` writes, and making the target hold for what it writes.

A result goes to ``-o FILE``, to ``-o DIR`` (one file per input, at its path below the
directory it was found in), or to stdout (``-``). Two inputs whose results would land on one
path are refused before anything is read; only regular files are ever written (see
:mod:`compaction._atomic`). The target is a promise about the file written, counted as
``compaction count`` would count it, so the ladder is run again a little lower when the output
shape counts more than the ladder's own view of the messages.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .errors import CliError
from .inputs import STDIO, Source, output_format, serialize, write_atomic

__all__ = [
    "check_collisions",
    "collision",
    "destination",
    "fit_written",
    "in_directory",
    "same_file",
    "write",
]


_CONVERTED = (".jsonl", ".traj")


def in_directory(args: Any, single: bool) -> bool:
    """True when ``-o`` names a directory: several inputs, a path ending in ``/``, or an
    existing directory."""
    out = args.output
    if not out or out == STDIO:
        return False
    return not single or out.endswith(("/", os.sep)) or Path(out).is_dir()


def destination(args: Any, source: Source, single: bool, loaded: Any) -> Path | None:
    if args.dry_run or not args.output or args.output == STDIO:
        return None
    out = Path(args.output)
    if not in_directory(args, single):
        return out
    relative = out / source.relative
    # JSONL stays JSONL only when written back in its own format (see formats.dumps).
    jsonl = loaded.container == "jsonl" and output_format(loaded, args.to) == loaded.format
    if relative.suffix in _CONVERTED and not jsonl:
        relative = relative.with_suffix(".json")
    return relative


def check_collisions(args: Any, sources: list[Source]) -> None:
    """Refuse, before anything is read, two inputs whose results would land on one path.

    A result's name is its input's path below the directory it was found in (its base name
    when named on the command line), with ``.jsonl``/``.traj`` becoming ``.json`` when the
    shape changes; that is only known after reading, so both spellings are assumed possible.
    """
    seen: dict[Path, Source] = {}
    out = Path(args.output)
    for source in sources:
        relative = source.relative
        keys = {relative}
        if relative.suffix in _CONVERTED:
            keys.add(relative.with_suffix(".json"))
        for key in keys:
            other = seen.get(key)
            if other is not None:
                raise CliError(
                    f"{other.path} and {source.path} would both be written to {out / key}; "
                    "rename one, compact them separately, or pass their common directory "
                    "(results mirror the paths below it)"
                )
            seen[key] = source


def same_file(dest: Path, source: Path) -> bool:
    try:
        return dest.exists() and dest.samefile(source)
    except OSError:
        return False


def write(dest: Path, data: bytes) -> bool:
    write_atomic(dest, data)
    return True


def collision(first: str, source: Source, dest: str) -> None:
    raise CliError(f"{first} and {source.path} would both be written to {dest}; not overwritten")


def _count_written(data: bytes, counter: Any) -> int:
    """Tokens of the file as written, read back as ``compaction count`` reads it: the shape
    changes what is counted (Anthropic merges turns and carries tool results in user
    messages), and the target is a promise about the file."""
    from ..formats import loads

    return int(counter.count_messages(loads(data, "<output>").messages))


#: Rounds of tightening the target when the written shape counts more than the neutral one.
_FIT_ROUNDS = 6


def fit_written(
    pipeline: Any,
    loaded: Any,
    target: int,
    counter: Any,
    to: str | None,
    *,
    limit: int | None = None,
) -> tuple[Any, bytes, int]:
    """Compact so that the file *as written* fits ``target`` (protected content only
    ``limit``, default the target); answer the result, its bytes and their token count. Each
    round aims both lower by what the shape added last time."""
    limit = target if limit is None else limit
    aim, hard = target, limit
    best: tuple[Any, bytes, int] | None = None
    for _ in range(_FIT_ROUNDS):
        result = pipeline.compact(loaded.messages, target=aim, counter=counter, limit=hard)
        data = serialize(result.messages, loaded, to)
        written = _count_written(data, counter)
        if best is None or written < best[2]:
            best = (result, data, written)
        if written <= target:
            break
        if result.fits:  # the ladder reached its aim: the shape added the rest
            shift = written - target
        elif result.within_limit and written > limit:  # within the limit until written
            shift = written - limit
        else:  # the ladder could do no better (or protected content took what it may)
            break
        aim, hard = aim - max(1, shift), hard - max(1, shift)
        if aim <= 0:
            break
    assert best is not None
    return best
