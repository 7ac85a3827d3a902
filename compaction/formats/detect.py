"""Reading a file's bytes into JSON (or JSONL, or plain text), and the content tests the
readers' detection shares.

Which reader a file goes to is decided in [`compaction.formats.registry`][]; this module only
parses, and never refuses a JSONL log for one bad line (see [`parse_text`][]).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from .errors import FormatError

__all__ = [
    "Document",
    "chat_flavor",
    "is_claude_code_record",
    "is_message",
    "parse_text",
    "read_text",
    "unreadable",
]

EXPECTED: Final = (
    "expected a chat transcript or an agent log in one of the formats 'compaction formats' "
    "lists (OpenAI or Anthropic messages, Claude Code, Codex, mini-swe-agent, SWE-agent...)"
)

# Block types only Anthropic's messages use; OpenAI's parts are text/image_url/input_audio/file.
_ANTHROPIC_BLOCKS: Final = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image"}
)


@attrs.frozen(slots=True)
class Document:
    """A parsed file: one JSON ``value``, or JSONL ``records`` as ``(line number, object)``.

    ``bad`` holds the JSONL lines that were no JSON object, as ``(line number, reason)``;
    ``text`` the file's text, kept only for a text file (a parsed file's text would double
    what it holds in memory); ``json_error`` why the text is neither JSON nor JSONL (then
    ``value`` and ``records`` are both ``None``, and only a reader of text formats reads it).
    """

    value: Any = None
    records: tuple[tuple[int, Mapping[str, Any]], ...] | None = None
    bad: tuple[tuple[int, str], ...] = ()
    text: str = attrs.field(default="", repr=False)
    json_error: str | None = None

    @property
    def is_jsonl(self) -> bool:
        return self.records is not None

    @property
    def is_text(self) -> bool:
        """True when the file is not JSON at all (a markdown history, say)."""
        return self.json_error is not None


def read_text(path: str | os.PathLike[str]) -> str:
    """The file's text; [`FormatError`][] for a missing, empty or binary file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise unreadable(path, exc) from None
    return decode(data, path)


def unreadable(path: str | os.PathLike[str], exc: OSError) -> FormatError:
    """The [`FormatError`][] for a file that could not be opened or read, saying why."""
    if isinstance(exc, FileNotFoundError):
        return FormatError(path, "no such file")
    if isinstance(exc, IsADirectoryError):
        return FormatError(path, "is a directory; expected a transcript file")
    return FormatError(path, f"cannot read the file ({exc.strerror})")


def decode(data: bytes, path: str | os.PathLike[str]) -> str:
    """``data`` as text; [`FormatError`][] when it is empty or binary."""
    if not data.strip():
        raise FormatError(path, f"empty file; {EXPECTED}")
    if b"\0" in data[:65536]:
        raise FormatError(path, f"binary file (it contains NUL bytes); {EXPECTED}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(
            path, f"binary or non-UTF-8 file (undecodable byte at offset {exc.start}); {EXPECTED}"
        ) from None


#: Deeper JSON than this is refused. Real transcripts nest about 10 levels; a 500-level file
#: made the readers (and json itself) overflow Python's recursion limit.
MAX_DEPTH: Final = 100

# A JSON escape of a UTF-16 surrogate; only such an escape can put a lone surrogate in a str
# (UTF-8 decoding refuses raw ones), so most files skip the per-string check entirely.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _where(trail: tuple[Any, ...]) -> str:
    out = ""
    for step in trail:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "the top level"


def _locate(value: Any, bad: Any) -> str:
    """Where in ``value`` the first string (or key) matching ``bad`` is, for the error."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, trail = stack.pop()
        if isinstance(item, str):
            if bad(item):
                return _where(trail)
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                if bad(key):
                    return _where(trail) + f" (key {key!r})"
                stack.append((child, (*trail, key)))
        elif isinstance(item, list):
            stack.extend((child, (*trail, i)) for i, child in reversed(list(enumerate(item))))
    return _where(())


def check_tree(value: Any, path: str | Path, *, line: int | None = None, text: str = "") -> None:
    """Refuse JSON nested deeper than [`MAX_DEPTH`][] and strings holding a lone UTF-16
    surrogate (valid JSON, but no valid text: nothing can encode it as UTF-8 again), with a
    [`FormatError`][] naming where. Iterative, so the check itself never recurses."""
    strings = _SURROGATE_ESCAPE.search(text) is not None if text else True
    stack: list[tuple[Any, int]] = [(value, 1)]
    lone = False
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                raise FormatError(path, f"JSON nested deeper than {MAX_DEPTH} levels", line=line)
            stack.extend((child, depth + 1) for child in item.values())
            if strings and not lone:
                lone = any(_SURROGATE.search(k) for k in item)
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                raise FormatError(path, f"JSON nested deeper than {MAX_DEPTH} levels", line=line)
            stack.extend((child, depth + 1) for child in item)
        elif strings and not lone and isinstance(item, str) and _SURROGATE.search(item):
            lone = True
    if lone:
        where = _locate(value, _SURROGATE.search)
        raise FormatError(
            path,
            f"{where}: text holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without "
            "its pair); expected valid Unicode text",
            line=line,
        )


#: Strings up to this long are shared between the objects of one file (see [`Interning`][]).
_SHARED_LEN: Final = 64


class Interning:
    """A JSON parser for one file whose objects share their keys and short string values.

    ``json.loads`` makes a new string for every key of every object: a log of 100,000
    records holds "parentUuid", "sessionId", "timestamp"... 100,000 times each, and the same
    short values (types, roles, ids a later record names again) as often. Sharing them makes
    the parsed records of a Claude Code log about 40% smaller (and parsing no slower); the
    objects are equal to what ``json.loads`` gives, key order and duplicate keys (the last
    value wins) included. The table lives as long as the parser: one file.
    """

    __slots__ = ("_decoder", "_table")

    def __init__(self) -> None:
        self._table: dict[str, str] = {}
        self._decoder = json.JSONDecoder(object_pairs_hook=self._object)

    def _object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        share = self._table.setdefault
        return {
            share(k, k): share(v, v) if type(v) is str and len(v) <= _SHARED_LEN else v
            for k, v in pairs
        }

    def loads(self, text: str) -> Any:
        """``json.loads(text)``, its errors included."""
        if text.startswith("\ufeff"):  # json.loads refuses a BOM before the decoder runs
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        return self._decoder.decode(text)


def _loads(text: str, parser: Interning | None = None) -> Any:
    try:
        return json.loads(text) if parser is None else parser.loads(text)
    except RecursionError:
        # json's own parser gives up on very deep nesting; same answer as check_tree.
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer of more than 4300 digits, say
        raise json.JSONDecodeError(" ".join(str(exc).split()), text, 0) from None


def _json_lines(text: str) -> list[tuple[int, str]]:
    # JSONL lines end at "\n" only: str.splitlines() would also cut at U+2028, U+0085 and
    # other separators JSON allows raw inside strings (and json.dumps writes raw).
    return [(no, line) for no, line in enumerate(text.split("\n"), 1) if line.strip()]


def parse_text(text: str, path: str | Path) -> Document:
    """``text`` as one JSON document, or as JSONL when it is one object per line.

    A JSONL file is one whose lines, at least half of them, are JSON objects: a log cut off
    mid-write (a killed process) or holding one corrupt line is still that log. Each line
    that is not an object is kept in ``Document.bad`` with the reason, for the reader to
    refuse (a request) or skip and report (a log). Text that is neither is kept too, with
    ``json_error`` saying why it is not JSON, for the readers of text formats (markdown
    chat histories); every other reader refuses it with that reason.
    """
    parser = Interning()
    try:
        value = _loads(text, parser)
    except json.JSONDecodeError as whole:
        lines = _json_lines(text)
        records: list[tuple[int, Mapping[str, Any]]] = []
        bad: list[tuple[int, str]] = []
        last = lines[-1][0] if lines else 0
        for no, line in lines if len(lines) > 1 else ():
            try:
                one = _loads(line, parser)
            except json.JSONDecodeError as exc:
                hint = " (the last line looks truncated)" if no == last else ""
                bad.append((no, f"not valid JSON ({exc.msg} at column {exc.colno}){hint}"))
                continue
            if not isinstance(one, dict):
                bad.append((no, f"expected a JSON object on every line, got {type(one).__name__}"))
                continue
            try:
                check_tree(one, path, line=no, text=line)
            except FormatError as exc:
                bad.append((no, exc.reason))
                continue
            records.append((no, one))
        if not records or len(records) < len(bad):
            reason = f"not JSON ({whole.msg} at line {whole.lineno}, column {whole.colno})"
            return Document(text=text, json_error=reason)
        return Document(records=tuple(records), bad=tuple(bad))
    check_tree(value, path, text=text)
    return Document(value=value)


def chat_flavor(messages: Sequence[Any], *, has_system_key: bool = False) -> str:
    """``"anthropic"`` or ``"openai"`` for a list of chat messages (OpenAI when undecided)."""
    if has_system_key:
        return "anthropic"
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        if m.get("role") in ("system", "developer", "tool") or "tool_calls" in m:
            return "openai"
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and block.get("type") in _ANTHROPIC_BLOCKS:
                    return "anthropic"
    return "openai"


def is_claude_code_record(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("type"), str)
        and "role" not in value
        and any(k in value for k in ("uuid", "sessionId", "messageId", "message", "leafUuid"))
    )


def is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("role"), str)
