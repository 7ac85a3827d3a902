"""Parsing a transcript file a line at a time, so a big JSONL log is never held whole.

[`parse_text`][compaction.formats.detect.parse_text] wants the file's text: the bytes, their
decoded text (up to 4 bytes a character once one emoji is in it) and the list of its lines,
all at once, before a record is parsed. A JSONL log parsed from its stream holds only the
records. The answer is the one ``parse_text`` gives for the same bytes, by construction:

- the stream is taken as JSONL only when its first line alone is a JSON value and some other
  line holds more than JSON whitespace (then the file as a whole is no JSON document: its
  parse would stop with "Extra data" there), and the lines are classified by the same rules;
- anything else (one JSON document, a text file, a file that turns out to hold fewer good
  records than bad lines, a NUL or an undecodable byte in the first 64 KiB) is read again
  from the start and given to ``parse_text``, which decides as it always did;
- the file checks keep their order and wording: empty, binary (NUL), undecodable (with the
  byte offset in the file), then the lines.

Memory: the records, plus one line at a time. A single JSON document still costs its text
and its parsed value (a JSON parse needs the whole text), but the text is let go before the
reader runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Final

from .._reading import MIB, InputFileError, grew, read_limited
from .detect import (
    EXPECTED,
    Document,
    Interning,
    _loads,
    check_tree,
    decode,
    parse_text,
    unreadable,
)
from .errors import FormatError

__all__ = ["parse_stream"]

#: The most read from a path that is no regular file (a pipe, ``/dev/stdin``): it has no
#: size to check up front, and a device such as ``/dev/zero`` never ends, so the read stops
#: here (the command line's own bound on a transcript).
MAX_UNSIZED_BYTES: Final = 512 * MIB
_BOM: Final = b"\xef\xbb\xbf"
_HEAD: Final = 65536
_JSON_SPACE: Final = b" \t\n\r"


def _lines(stream: IO[bytes], limit: int | None, path: str | Path) -> Iterator[bytes]:
    """The stream's lines (each with its ``\\n``), at most ``limit`` bytes in all."""
    total = 0
    while True:
        line = stream.readline() if limit is None else stream.readline(limit + 1 - total)
        if not line:
            return
        total += len(line)
        if limit is not None and total > limit:
            raise grew(path, limit)
        yield line


def _whole(stream: IO[bytes], limit: int | None, path: str | Path) -> Document:
    """The old way: every byte, decoded, to ``parse_text``; the text is let go on return."""
    stream.seek(0)
    data = stream.read() if limit is None else stream.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise grew(path, limit)
    text = decode(data, path)
    del data
    return parse_text(text, path)


def _undecodable(path: str | Path, offset: int) -> FormatError:
    return FormatError(
        path, f"binary or non-UTF-8 file (undecodable byte at offset {offset}); {EXPECTED}"
    )


def parse_stream(stream: IO[bytes], path: str | Path, *, limit: int | None = None) -> Document:
    """``stream`` (a seekable binary file at its start) parsed as
    [`parse_text`][compaction.formats.detect.parse_text] would parse its decoded bytes, with
    the same errors; a JSONL log a line at a time (see the module docstring). ``limit``
    bounds the bytes read (an [`InputFileError`][compaction._reading.InputFileError] past it).
    """
    lines = _lines(stream, limit, path)
    held: list[bytes] = []
    size = 0
    more = False  # a line after the first holds more than JSON whitespace
    for line in lines:
        held.append(line)
        size += len(line)
        if not more and len(held) > 1 and line.strip(_JSON_SPACE):
            more = True
        if more and size >= _HEAD:  # the NUL check looks at the first 64 KiB, as decode()
            break
    if not more or b"\0" in _head(held):
        # One JSON document (or text, or nothing): parsed whole. The lines read go first.
        del held
        return _whole(stream, limit, path)
    start = len(_BOM) if held[0].startswith(_BOM) else 0
    try:
        _loads(str(memoryview(held[0])[start:], "utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        del held
        return _whole(stream, limit, path)
    found = _records(_chain(held, lines), path, start)
    if found is None:
        return _whole(stream, limit, path)
    records, bad = found
    return Document(records=records, bad=bad)


def _head(held: list[bytes]) -> bytes:
    """The first 64 KiB of the lines ``held``."""
    out = b""
    for line in held:
        out += line[: _HEAD - len(out)]
        if len(out) >= _HEAD:
            break
    return out


def _chain(held: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    """The lines held, each let go once given, then the rest."""
    for i, line in enumerate(held):
        held[i] = b""
        yield line
    yield from rest


def _records(
    lines: Iterator[bytes], path: str | Path, bom: int
) -> tuple[tuple[tuple[int, Mapping[str, Any]], ...], tuple[tuple[int, str], ...]] | None:
    """The JSONL records and bad lines, as ``parse_text`` finds them; None when the file is
    not read as JSONL by it (one JSON document, or text)."""
    records: list[tuple[int, Mapping[str, Any]]] = []
    parser = Interning()
    bad: list[tuple[int, str, bool]] = []  # (line, reason, a JSON error: may get the hint)
    offset = -bom  # byte offsets count from after the BOM, as decode("utf-8-sig") does
    extra = False  # a line after the first holds more than JSON whitespace
    nonblank = 0
    last = 0
    for no, raw in enumerate(lines, 1):
        try:
            line = raw[bom:].decode("utf-8") if no == 1 else raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _undecodable(path, offset + (bom if no == 1 else 0) + exc.start) from None
        offset += len(raw)
        line = line[:-1] if line.endswith("\n") else line
        if no > 1 and not extra and raw.strip(_JSON_SPACE):
            extra = True
        if not line.strip():
            continue
        nonblank += 1
        last = no
        try:
            value = _loads(line, parser)
        except json.JSONDecodeError as exc:
            bad.append((no, f"not valid JSON ({exc.msg} at column {exc.colno})", True))
            continue
        if not isinstance(value, dict):
            kind = type(value).__name__
            bad.append((no, f"expected a JSON object on every line, got {kind}", False))
            continue
        try:
            check_tree(value, path, line=no, text=line)
        except FormatError as exc:
            bad.append((no, exc.reason, False))
            continue
        records.append((no, value))
    if not extra or nonblank < 2 or not records or len(records) < len(bad):
        return None
    reasons = tuple(
        (no, reason + (" (the last line looks truncated)" if hint and no == last else ""))
        for no, reason, hint in bad
    )
    return tuple(records), reasons


def parse_path(path: str | os.PathLike[str]) -> Document:
    """The file at ``path`` parsed (the library's [`load`][compaction.formats.load]): errors
    as [`read_text`][compaction.formats.detect.read_text] gives them. A file that is not a
    regular one (a pipe) is read whole, up to ``MAX_UNSIZED_BYTES`` (an
    [`InputFileError`][compaction._reading.InputFileError] past it)."""
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise unreadable(path, exc) from None
    with stream:
        try:
            seekable = stream.seekable() and os.path.isfile(path)
            if not seekable:
                data = read_limited(stream, MAX_UNSIZED_BYTES, os.fspath(path))
                return parse_text(decode(data, path), str(path))
            return parse_stream(stream, str(path))
        except OSError as exc:
            if isinstance(exc, InputFileError):
                raise
            raise unreadable(path, exc) from None
