"""Reading real transcript files and agent logs, and writing conversations back in a
provider's shape.

[`load`][] takes a path and needs no options: every reader registered in
``compaction.formats.registry`` claims the shapes it knows by content (``compaction
formats`` lists them, in the order they are tried), and ``load(path, format=NAME)`` (``--format
NAME`` on the command line) forces one. What it returns always passes
[`compaction.validate.validate`][]; a file it cannot read raises [`FormatError`][] naming the
file, the line (for JSONL), the format it was taken for and what was expected. A file that
yields no messages, or only empty ones, is such an error too, never an empty conversation.

Requests and logs are read by different rules. OpenAI/Anthropic files are requests: a result
whose call is missing, a call left unanswered or a bad JSONL line is an error. Agent logs are
records of what happened, read as logs (``compaction.formats.logs``): split parallel calls
merged, a mid-run system message or the agent's own compaction kept as a marked boundary,
unanswered calls answered with a visible "no result recorded", a truncated or undecodable line
skipped; every change listed in ``Loaded.repairs``.

Adding a reader (one module, a few lines):

1. Write ``compaction/formats/<name>.py`` with ``read_x(doc: Document, path: str) -> Loaded``.
   ``doc.value`` is the JSON document, or ``doc.records`` the JSONL ``(line, object)`` pairs
   (bad lines already left out and reported), or, for a reader with ``text=True``, only
   ``doc.text``. Build [`Message`][compaction.messages.Message]s (the adapters in
   ``compaction.adapters`` do most shapes), pass them through ``logs.as_log`` (or
   ``repair.repair``), keep the provider's usage, model and time of each call in the
   assistant message's ``meta["recorded"]`` (``logs.recorded(...)``) and the format's own
   fields under ``meta["<name>"]``, mark text the harness wrote into the user role
   ``meta["synthetic"] = True``, and return ``validate_loaded.finish(Loaded(...))``. Raise
   ``FormatError(path, "what field, what was expected", line=N)`` for what it cannot read.
2. End the module with ``READERS = (Reader(name=..., title=..., shape=..., sniff=...,
   read=read_x, output="openai", priority=30),)``: ``sniff(doc, path)`` says yes only to its
   own shape (specific shapes 10-40, before the generic chats at 90).
3. Add the module's name to ``_MODULES`` in ``registry.py`` (the newer formats are listed
   there already), a section to ``docs/formats.md`` (what is read, what is repaired and why,
   an example), and tests: a small hand-made fixture under ``tests/fixtures/formats/``, and
   the real logs counted by an independent parser in ``tests/test_formats_logs.py``.

[`dump`][] writes messages as OpenAI or Anthropic JSON (``Loaded.output_format`` says which
one an input format goes back as: trajectories as OpenAI, Claude Code logs as Anthropic).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from .._atomic import write_atomic
from ..adapters.anthropic import to_anthropic
from ..adapters.openai import to_openai
from ..messages import Message
from ._stream import parse_path, parse_stream
from .detect import parse_text
from .errors import FormatError
from .loaded import FORMATS, OUTPUT_FORMAT, Loaded, Repair
from .registry import Reader, detect, read_document, readers

__all__ = [
    "FORMATS",
    "OUTPUT_FORMAT",
    "FormatError",
    "Loaded",
    "Reader",
    "Repair",
    "detect_format",
    "dump",
    "dumps",
    "load",
    "load_stream",
    "loads",
    "readers",
]


def load(path: str | os.PathLike[str], format: str | None = None) -> Loaded:
    """Read the transcript at ``path``, whatever its format (see the module docstring);
    ``format`` (a reader's name) reads it as that format instead of detecting one.

    A JSONL log is parsed a line at a time: what stays in memory is its records, never the
    file's bytes or text as well."""
    return read_document(parse_path(path), str(path), format)


def load_stream(
    stream: IO[bytes], name: str, format: str | None = None, *, limit: int | None = None
) -> Loaded:
    """Like [`load`][], from an open, seekable binary file (``name`` is used in errors),
    reading at most ``limit`` bytes of it."""
    return read_document(parse_stream(stream, name, limit=limit), name, format)


def loads(data: str | bytes, name: str = "<string>", format: str | None = None) -> Loaded:
    """Like [`load`][], for text already in memory (``name`` is used in errors)."""
    if isinstance(data, bytes):
        return load_stream(io.BytesIO(data), name, format)
    if not data.strip():
        raise FormatError(name, "empty input")
    return read_document(parse_text(data, name), name, format)


def detect_format(path: str | os.PathLike[str]) -> str:
    """The name of the format [`load`][] would read ``path`` as (see [`readers`][])."""
    return detect(parse_path(path), str(path)).name


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
