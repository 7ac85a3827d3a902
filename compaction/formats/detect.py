"""Reading a file's bytes into JSON, and telling the transcript formats apart by content.

Detection looks at what the file holds, not at its name; the name only sharpens the error
message when the content is none of the shapes we know.
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

__all__ = ["Document", "detect", "parse_text", "read_text"]

EXPECTED: Final = (
    "expected an OpenAI chat (a JSON list of messages, one message per JSONL line, or "
    '{"messages": [...]}), an Anthropic request ({"system": ..., "messages": [...]}), a '
    "mini-swe-agent trajectory (*.traj.json), a SWE-agent trajectory (*.traj) or a Claude Code "
    "session log (*.jsonl)"
)

# Block types only Anthropic's messages use; OpenAI's parts are text/image_url/input_audio/file.
_ANTHROPIC_BLOCKS: Final = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image"}
)


@attrs.frozen(slots=True)
class Document:
    """A parsed file: one JSON ``value``, or JSONL ``records`` as ``(line number, object)``."""

    value: Any = None
    records: tuple[tuple[int, Mapping[str, Any]], ...] | None = None

    @property
    def is_jsonl(self) -> bool:
        return self.records is not None


def read_text(path: str | os.PathLike[str]) -> str:
    """The file's text; [`FormatError`][] for a missing, empty or binary file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except IsADirectoryError:
        raise FormatError(path, "is a directory; expected a transcript file") from None
    except OSError as exc:
        raise FormatError(path, f"cannot read the file ({exc.strerror})") from None
    return decode(data, path)


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


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        # json's own parser gives up on very deep nesting; same answer as check_tree.
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer of more than 4300 digits, say
        raise json.JSONDecodeError(" ".join(str(exc).split()), text, 0) from None


def parse_text(text: str, path: str | Path) -> Document:
    """``text`` as one JSON document, or as JSONL when it is one object per line."""
    try:
        value = _loads(text)
    except json.JSONDecodeError as whole:
        # JSONL lines end at "\n" only: str.splitlines() would also cut at U+2028, U+0085 and
        # other separators JSON allows raw inside strings (and json.dumps writes raw).
        lines = [(no, line) for no, line in enumerate(text.split("\n"), 1) if line.strip()]
        first: Any = None
        if len(lines) > 1:
            try:
                first = _loads(lines[0][1])
            except json.JSONDecodeError:
                first = None
        if not isinstance(first, dict):
            raise FormatError(
                path,
                f"not JSON ({whole.msg} at line {whole.lineno}, column {whole.colno}); {EXPECTED}",
            ) from None
    else:
        check_tree(value, path, text=text)
        return Document(value=value)
    records = []
    last = lines[-1][0]
    for no, line in lines:
        try:
            value = _loads(line)
        except json.JSONDecodeError as exc:
            hint = " (the last line looks truncated)" if no == last else ""
            raise FormatError(
                path,
                f"not valid JSON ({exc.msg} at column {exc.colno}){hint}; expected one JSON "
                "object per line",
                line=no,
            ) from None
        if not isinstance(value, dict):
            raise FormatError(
                path, f"expected a JSON object on every line, got {type(value).__name__}", line=no
            )
        check_tree(value, path, line=no, text=line)
        records.append((no, value))
    return Document(records=tuple(records))


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


def _is_claude_code_record(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("type"), str)
        and "role" not in value
        and any(k in value for k in ("uuid", "sessionId", "messageId", "message", "leafUuid"))
    )


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("role"), str)


def _hint(path: str | Path) -> str:
    name = Path(path).name
    if name.endswith(".traj.json"):
        return (
            "; a *.traj.json file should be a mini-swe-agent trajectory: an object with a "
            "'messages' list"
        )
    if name.endswith(".traj"):
        return "; a *.traj file should be a SWE-agent trajectory: an object with a 'history' list"
    if name.endswith(".jsonl"):
        return (
            "; a *.jsonl file should hold one Claude Code record (with 'type') or one chat "
            "message (with 'role') per line"
        )
    return ""


def detect(doc: Document, path: str | Path) -> str:
    """The format of ``doc``: one of
    [`compaction.formats.FORMATS`][compaction.formats.loaded.FORMATS]."""
    if doc.records is not None:
        no, first = doc.records[0]
        if _is_message(first):
            return chat_flavor([r for _, r in doc.records])
        if _is_claude_code_record(first):
            return "claude-code"
        raise FormatError(
            path,
            "unknown record shape: neither a chat message (with 'role') nor a Claude Code "
            f"record (with 'type' and 'uuid'); {EXPECTED}{_hint(path)}",
            line=no,
        )
    value = doc.value
    if isinstance(value, Mapping):
        if isinstance(value.get("history"), list):
            return "swe-agent"
        if isinstance(value.get("messages"), list):
            info = value.get("info")
            fmt = value.get("trajectory_format")
            if (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
                isinstance(info, Mapping) and "mini_version" in info
            ):
                return "mini-swe-agent"
            return chat_flavor(value["messages"], has_system_key="system" in value)
        if _is_claude_code_record(value):
            return "claude-code"
        if _is_message(value):
            return "openai"
        keys = ", ".join(sorted(map(str, value))[:8]) or "none"
        raise FormatError(
            path, f"unknown shape: a JSON object with keys {keys}; {EXPECTED}{_hint(path)}"
        )
    if isinstance(value, list):
        if all(_is_message(m) for m in value):
            return chat_flavor(value)
        if all(_is_claude_code_record(m) for m in value):
            return "claude-code"
        bad = next(i for i, m in enumerate(value) if not _is_message(m))
        raise FormatError(
            path,
            f"unknown shape: item {bad} of the list is not a chat message (no 'role'); "
            f"{EXPECTED}{_hint(path)}",
        )
    raise FormatError(
        path, f"unknown shape: a JSON {type(value).__name__}; {EXPECTED}{_hint(path)}"
    )
