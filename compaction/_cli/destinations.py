"""Where ``compaction compact`` writes, and making the target hold for what it writes.

A result goes to ``-o FILE``, to ``-o DIR`` (one file per input, at its path below the
directory it was found in), or to stdout (``-``). Two inputs whose results would land on one
path are refused before anything is read; only regular files are ever written (see
``compaction._atomic``). The target is a promise about the file written, counted as
``compaction count`` would count it, so the ladder is run again a little lower when the output
shape counts more than the ladder's own view of the messages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import CliError
from .inputs import STDIO, Source, output_format, serialize, write_atomic

__all__ = [
    "check_collisions",
    "check_name",
    "collision",
    "destination",
    "fit_written",
    "in_directory",
    "same_file",
    "write",
    "written_jsonl",
    "Written",
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
    if relative.name.endswith(".traj.json"):
        # A trajectory is written back as plain messages: a name that still says
        # trajectory would be refused by check_name, so the result drops ".traj".
        return relative.with_name(relative.name[: -len(".traj.json")] + ".json")
    if relative.suffix in _CONVERTED and not written_jsonl(loaded, args.to):
        relative = relative.with_suffix(".json")
    return relative


def written_jsonl(loaded: Any, to: str | None) -> bool:
    """Whether the result is written as JSONL: only when written back in the input's own
    format from a JSONL file (see formats.dumps); otherwise it is one JSON document."""
    return bool(loaded.container == "jsonl" and output_format(loaded, to) == loaded.format)


def check_name(dest: Path, loaded: Any, to: str | None) -> None:
    """Refuse a destination whose name says another format than the one written.

    ``compact`` writes OpenAI or Anthropic messages (as JSON, or as JSONL when the input was
    JSONL in that same format); it never writes an agent trajectory or a Claude Code log back.
    A name that claims one (``.traj.json``, ``.traj``, a ``.jsonl`` holding one JSON object)
    would fool the next reader, ``compaction`` itself included, so it is refused.
    """
    name = dest.name.lower()
    jsonl = written_jsonl(loaded, to)
    shape = output_format(loaded, to)
    provider = {"openai": "OpenAI", "anthropic": "Anthropic"}.get(shape, shape)
    what = f"{provider} messages, {'as JSONL' if jsonl else 'in one JSON document'}"
    if name.endswith(".traj.json"):
        claims, better = "an agent trajectory", dest.name[: -len(".traj.json")] + ".json"
    elif name.endswith(".traj"):
        claims, better = "an agent trajectory", dest.name[: -len(".traj")] + ".json"
    elif name.endswith(".jsonl") and not jsonl:
        claims, better = "JSONL", dest.name[: -len(".jsonl")] + ".json"
    elif name.endswith(".json") and jsonl:
        claims, better = "one JSON document", dest.name[: -len(".json")] + ".jsonl"
    else:
        return
    raise CliError(
        f"-o {dest}: the name says {claims}, but this {loaded.format} input is written as {what}; "
        f"name it {dest.with_name(better)} (compact writes OpenAI or Anthropic messages, "
        "never a trajectory or a Claude Code log)"
    )


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
        if relative.name.endswith(".traj.json"):
            keys = {relative.with_name(relative.name[: -len(".traj.json")] + ".json")}
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


@dataclass(frozen=True)
class Written:
    """A compacted conversation as it will be written: the ladder's result, the file's bytes,
    and the tokens and messages counted on those bytes read back (the shape can merge
    messages: Anthropic joins consecutive same-role turns), which is what the report states."""

    result: Any
    data: bytes
    tokens: int
    messages: int


def _read_back(data: bytes, counter: Any) -> tuple[int, int]:
    """Tokens and messages of the file as written, read back as ``compaction count`` reads
    it: the shape changes what is counted (Anthropic merges turns and carries tool results in
    user messages), and the target is a promise about the file."""
    from ..formats import loads

    messages = loads(data, "<output>").messages
    return int(counter.count_messages(messages)), len(messages)


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
) -> Written:
    """Compact so that the file *as written* fits ``target`` (protected content only
    ``limit``, default the target). Each round aims both lower by what the shape added last
    time."""
    limit = target if limit is None else limit
    aim, hard = target, limit
    best: Written | None = None
    for _ in range(_FIT_ROUNDS):
        result = pipeline.compact(loaded.messages, target=aim, counter=counter, limit=hard)
        data = serialize(result.messages, loaded, to)
        tokens, messages = _read_back(data, counter)
        if best is None or tokens < best.tokens:
            best = Written(result, data, tokens, messages)
        if tokens <= target:
            break
        if result.fits:  # the ladder reached its aim: the shape added the rest
            shift = tokens - target
        elif result.within_limit and tokens > limit:  # within the limit until written
            shift = tokens - limit
        else:  # the ladder could do no better (or protected content took what it may)
            break
        aim, hard = aim - max(1, shift), hard - max(1, shift)
        if aim <= 0:
            break
    assert best is not None
    return best
