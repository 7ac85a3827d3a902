"""Reading real transcript files, and writing conversations back in a provider's shape.

[`load`][] takes a path and needs no options: it reads OpenAI chats (JSON list, JSONL,
``{"messages": [...]}``), Anthropic requests (``{"system": ..., "messages": [...]}``),
mini-swe-agent trajectories (``*.traj.json``), SWE-agent trajectories (``*.traj``) and
Claude Code session logs (``*.jsonl``), telling them apart by content. What it returns always
passes [`compaction.validate.validate`][]; a file it cannot read raises
[`FormatError`][] naming the file (and line, for JSONL) and what was expected.

Rule for broken tool pairs: OpenAI/Anthropic files are requests, so a result whose call is
missing (or a call left unanswered) is an error; agent logs are records of what happened, so
they are repaired visibly (explicit "no result recorded" results, orphan results kept as user
messages saying so) and the repairs listed in ``Loaded.repairs``.

[`dump`][] writes messages as OpenAI or Anthropic JSON (``Loaded.output_format`` says which
one an input format goes back as: trajectories as OpenAI, Claude Code logs as Anthropic).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any, Final

from .._atomic import write_atomic
from ..adapters import AdapterError
from ..adapters.anthropic import to_anthropic
from ..adapters.openai import to_openai
from ..messages import Message
from .chat_json import read_anthropic, read_openai
from .claude_code import read_claude_code
from .detect import Document, decode, detect, parse_text, read_text
from .errors import FormatError
from .loaded import FORMATS, OUTPUT_FORMAT, Loaded, Repair
from .mini_swe_agent import read_mini_swe_agent
from .swe_agent import read_swe_agent

__all__ = [
    "FORMATS",
    "OUTPUT_FORMAT",
    "FormatError",
    "Loaded",
    "Repair",
    "detect_format",
    "dump",
    "dumps",
    "load",
    "loads",
]

_READERS: Final[Mapping[str, Callable[[Document, str | Path], Loaded]]] = {
    "openai": read_openai,
    "anthropic": read_anthropic,
    "mini-swe-agent": read_mini_swe_agent,
    "swe-agent": read_swe_agent,
    "claude-code": read_claude_code,
}


def load(path: str | os.PathLike[str]) -> Loaded:
    """Read the transcript at ``path``, whatever its format (see the module docstring)."""
    return _read(read_text(path), str(path))


def loads(data: str | bytes, name: str = "<string>") -> Loaded:
    """Like [`load`][], for text already in memory (``name`` is used in errors)."""
    text = decode(data, name) if isinstance(data, bytes) else data
    if not text.strip():
        raise FormatError(name, "empty input")
    return _read(text, name)


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format [`load`][] would read ``path`` as (one of ``FORMATS``)."""
    return detect(parse_text(read_text(path), str(path)), str(path))


def _read(text: str, name: str) -> Loaded:
    doc = parse_text(text, name)
    fmt = detect(doc, name)
    try:
        return _READERS[fmt](doc, name)
    except FormatError:
        raise
    except (AdapterError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        # A reader met a shape it did not expect deep inside: say so plainly, not with a
        # traceback from the middle of it.
        raise FormatError(name, f"read as {fmt}, but could not make sense of it: {exc}") from exc


def _payload(messages: Iterable[Message], format: str, like: Loaded | None) -> Any:
    msgs = tuple(messages)
    same = like is not None and like.format == format
    if format == "openai":
        out: list[dict[str, Any]] = to_openai(msgs)
        if same and like is not None and like.container == "object":
            return {**like.extra, "messages": out}
        if same and like is not None and like.container == "jsonl":
            return _Lines(out)
        return out
    if format == "anthropic":
        system, out = to_anthropic(msgs)
        request: dict[str, Any] = dict(like.extra) if same and like is not None else {}
        request.pop("system", None)
        if system is not None:
            request["system"] = system
        request["messages"] = out
        return request
    raise ValueError(f"cannot write format {format!r}; expected 'openai' or 'anthropic'")


class _Lines(list):  # type: ignore[type-arg]
    """Messages written one per line (JSONL), as they were read."""


def dumps(messages: Iterable[Message], format: str, *, like: Loaded | None = None) -> str:
    """``messages`` as OpenAI (``format="openai"``) or Anthropic (``"anthropic"``) JSON text.

    OpenAI: a JSON list of messages. Anthropic: ``{"system": ..., "messages": [...]}``
    (``system`` only when there is one). With ``like`` (the [`Loaded`][] the messages came
    from, same format), its shape is kept: JSONL stays JSONL, an ``{"messages": ...}`` object
    keeps its other fields (``model``, ``tools``...).
    """
    payload = _payload(messages, format, like)
    if isinstance(payload, _Lines):
        return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in payload)
    return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"


def dump(
    messages: Iterable[Message],
    format: str,
    dest: str | os.PathLike[str] | IO[str],
    *,
    like: Loaded | None = None,
) -> None:
    """Write [`dumps`][] output to a path (atomically: all of it or nothing) or a stream."""
    text = dumps(messages, format, like=like)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # A lone surrogate (Python allows it in a str) has no UTF-8 form; the readers refuse
        # one too, so writing it escaped would make a file we could not read back.
        name = getattr(dest, "name", None) if hasattr(dest, "write") else dest
        raise FormatError(
            os.fspath(name) if isinstance(name, (str, os.PathLike)) else "<stream>",
            f"cannot write a lone surrogate ({text[exc.start]!r}, character {exc.start} of "
            "the output): UTF-8 JSON cannot hold it. Replace it (e.g. "
            "s.encode('utf-8', 'replace').decode()) before writing.",
        ) from None
    if hasattr(dest, "write"):
        dest.write(text)  # type: ignore[union-attr]
        return
    write_atomic(Path(dest), text.encode("utf-8"))  # type: ignore[arg-type]
