"""How sessions are written down: JSON documents with a format and version, messages as dicts.

Every file a session writes says what it is (``"format"``) and which layout it uses
(``"version"``). A reader that meets an unknown version refuses with an error naming the file
instead of guessing, so an older compaction never silently drops fields a newer one wrote.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from ..messages import Message, ToolCall
from .errors import SessionFormatError
from .files import read_bytes

__all__ = [
    "FORMAT_VERSION",
    "check_json",
    "check_view",
    "decode_message",
    "dump_document",
    "encode_json",
    "encode_message",
    "format_ts",
    "now",
    "parse_ts",
    "read_document",
]

FORMAT_VERSION: Final = 1
PREFIX: Final = "compaction.session"

_MESSAGE_FIELDS: Final = frozenset(
    {"role", "content", "tool_calls", "tool_call_id", "name", "meta", "tokens", "id"}
)
_CALL_FIELDS: Final = frozenset({"id", "name", "arguments"})


def now() -> datetime:
    """The current time, timezone-aware UTC (every stored timestamp is UTC)."""
    return datetime.now(timezone.utc)


def format_ts(moment: datetime) -> str:
    """ISO 8601 text in UTC with microseconds; naive datetimes are taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def parse_ts(text: object, fail: Callable[[str], SessionFormatError]) -> datetime:
    """The datetime written by [`format_ts`][], or the error ``fail`` builds."""
    if not isinstance(text, str):
        raise fail(f"timestamp must be ISO 8601 text, got {type(text).__name__}")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise fail(f"timestamp {text!r} is not ISO 8601") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _reject_nan(value: Any) -> Any:
    # Python's json accepts NaN/Infinity, which are not JSON: other readers would choke.
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a JSON number")
    return value


def check_json(value: Any, what: str) -> Any:
    """``value`` as it will read back from disk (tuples become lists), or TypeError naming ``what``.

    Normalising at write time means a value read in this process equals the value a fresh
    process reads from disk.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise TypeError(f"{what} is nested too deeply to store") from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON-serialisable: {exc}") from None
    return _loads_text(text)


def encode_message(message: Message) -> dict[str, Any]:
    """A JSON-ready dict holding every field of ``message`` (defaults left out)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    if message.meta:
        out["meta"] = check_json(dict(message.meta), f"meta of message {message.id or ''}".strip())
    if message.tokens is not None:
        out["tokens"] = message.tokens
    if message.id is not None:
        out["id"] = message.id
    return out


def decode_message(data: object, fail: Callable[[str], SessionFormatError]) -> Message:
    """The Message ``data`` encodes, or the error ``fail`` builds naming what is wrong."""
    if not isinstance(data, dict):
        raise fail(f"a message must be a JSON object, got {type(data).__name__}")
    unknown = set(data) - _MESSAGE_FIELDS
    if unknown:
        raise fail(f"message has unknown fields {sorted(unknown)}")
    if "role" not in data:
        raise fail("message has no 'role'")
    calls_data = data.get("tool_calls", [])
    if not isinstance(calls_data, list):
        raise fail("message 'tool_calls' must be a list")
    calls: list[ToolCall] = []
    for i, call in enumerate(calls_data):
        if (
            not isinstance(call, dict)
            or set(call) - _CALL_FIELDS
            or not {"id", "name"} <= set(call)
        ):
            raise fail(f"tool_calls[{i}] must be an object with id, name and arguments")
        try:
            calls.append(ToolCall(call["id"], call["name"], call.get("arguments", "{}")))
        except (TypeError, ValueError) as exc:
            raise fail(f"tool_calls[{i}]: {exc}") from None
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise fail("message 'meta' must be an object")
    try:
        return Message(
            data["role"],
            data.get("content", ""),
            tool_calls=tuple(calls),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            meta=meta,
            tokens=data.get("tokens"),
            id=data.get("id"),
        )
    except (TypeError, ValueError) as exc:
        raise fail(str(exc)) from None


_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# A \u escape of a high surrogate followed by one of a low surrogate, where the backslash
# really starts an escape (preceded by an even number of backslashes).
_ESCAPED_PAIR: Final = re.compile(
    r"(?<!\\)((?:\\\\)*)(\\u[dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def encode_json(value: Any, *, indent: int | None = None) -> bytes:
    """UTF-8 JSON text ending in a newline.

    Text is written as itself, readable, characters beyond the BMP included. A surrogate code
    point (Python allows one in a str; UTF-8 cannot encode it) is written as a ``\\u`` escape,
    so any str a Message accepts can be stored: escapes in our files are always surrogates
    taken one by one, which is how [`loads`][] reads them back (exactly: two code points
    that happen to form a pair stay two code points, never one character).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    except RecursionError:
        raise TypeError("a value is nested too deeply to store") from None
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return (text + "\n").encode("utf-8")


def dump_document(kind: str, body: Mapping[str, Any]) -> bytes:
    """The bytes of a versioned JSON document of ``kind`` (e.g. ``"state"``)."""
    doc = {"format": f"{PREFIX}.{kind}", "version": FORMAT_VERSION, **body}
    return encode_json(doc, indent=1)


def check_header(
    doc: object, expected: str, fail: Callable[[str], SessionFormatError]
) -> dict[str, Any]:
    """``doc`` when it is a JSON object of format ``expected`` and a version we read."""
    if not isinstance(doc, dict):
        raise fail(f"expected a JSON object, got {type(doc).__name__}")
    if doc.get("format") != expected:
        raise fail(f"not a {expected} file (format is {doc.get('format')!r})")
    version = doc.get("version")
    if version != FORMAT_VERSION:
        raise fail(
            f"unsupported format version {version!r} (this compaction reads version "
            f"{FORMAT_VERSION}); it may have been written by a newer compaction: upgrade "
            "rather than overwrite it"
        )
    return doc


def loads(text: bytes | str, fail: Callable[[str], SessionFormatError]) -> Any:
    """Parse JSON text strictly (no NaN), or the error ``fail`` builds."""
    if isinstance(text, bytes):
        # Decoded here, strictly: json.loads would guess UTF-16/32 from the first bytes.
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise fail(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return _loads_text(text)
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise fail("JSON nested too deeply to read") from None
    except ValueError as exc:
        raise fail(str(exc)) from None


def _loads_text(text: str) -> Any:
    """json.loads, except that an escaped surrogate pair stays two code points.

    JSON readers join ``\\ud83d\\ude00`` into one character; our writer escapes only
    surrogates taken one by one (see [`encode_json`][]), so here a pair is split by a
    sentinel character that occurs nowhere in the text, then the sentinel is removed.
    """
    if not _ESCAPED_PAIR.search(text):
        return json.loads(text, parse_constant=_no_constant)
    sentinel = next(
        chr(c)
        for c in range(0xE000, 0xF900)
        if chr(c) not in text and f"\\u{c:04x}" not in text.lower()
    )
    split = _ESCAPED_PAIR.sub(lambda m: m.group(1) + m.group(2) + sentinel + m.group(3), text)
    return _without(json.loads(split, parse_constant=_no_constant), sentinel)


def _without(value: Any, sentinel: str) -> Any:
    # Iterative: the value may be as deep as json.loads allows.
    root = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        holder, slot = stack.pop()
        item = holder[slot]
        if isinstance(item, str):
            holder[slot] = item.replace(sentinel, "")
        elif isinstance(item, list):
            stack.extend((item, i) for i in range(len(item)))
        elif isinstance(item, dict):
            fixed = {k.replace(sentinel, ""): v for k, v in item.items()}
            item.clear()
            item.update(fixed)
            stack.extend((item, k) for k in item)
    return root[0]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def read_document(path: Path, kind: str) -> dict[str, Any]:
    """Read the versioned JSON document of ``kind`` at ``path`` (FileNotFoundError if absent)."""

    def fail(reason: str) -> SessionFormatError:
        return SessionFormatError(path, reason)

    data = read_bytes(path)  # never through a symlink
    return check_header(loads(data, fail), f"{PREFIX}.{kind}", fail)


def check_view(doc: dict[str, Any], fail: Callable[[str], SessionFormatError]) -> list[Message]:
    """Check a view document's fields (``based_on`` defaults to ``through_seq`` for views
    stored before it existed); return its messages, decoded."""
    through = doc.get("through_seq")
    if not isinstance(through, int) or isinstance(through, bool) or through < 0:
        raise fail("'through_seq' must be a non-negative integer")
    based_on = doc.setdefault("based_on", through)
    if not isinstance(based_on, int) or isinstance(based_on, bool) or based_on < through:
        raise fail("'based_on' must be an integer, at least 'through_seq'")
    items = doc.get("messages")
    if not isinstance(items, list):
        raise fail("'messages' must be a list")
    out = []
    for i, item in enumerate(items):

        def where(reason: str, i: int = i) -> SessionFormatError:
            return fail(f"messages[{i}]: {reason}")

        out.append(decode_message(item, where))
    return out
