"""What every raw-log reader of the check shares: the ``Log`` it returns, the refusal, and the
small text rules (a content's text, a fenced block, a patch's files) the formats have in
common. Every scan here is one pass over its input."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import attrs

__all__ = [
    "Action",
    "Log",
    "Refused",
    "UnreadableLog",
    "after_marker",
    "fenced",
    "json_object",
    "patch_files",
    "path_arg",
    "text",
]


class UnreadableLog(ValueError):
    """A file this reader does not read (another format, broken JSON, a shape it does not
    know); the message names the file, ``reason`` says why."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.reason = reason


class Refused(ValueError):
    """Raised inside a reader, which does not know the file's name."""


@attrs.frozen
class Action:
    """One thing the agent did: its command text (``None`` for a non-shell tool) and the
    files it edited, as the log names them."""

    command: str | None
    edited: tuple[str, ...] = ()


@attrs.frozen
class Log:
    """A run as its raw log tells it: ``format``, the ``task`` as the person wrote it, the
    agent's ``actions`` and the environment's ``outputs``, each in order."""

    format: str
    task: str
    actions: tuple[Action, ...]
    outputs: tuple[str, ...]


def text(content: Any) -> str:
    """Text of a message content: a string, or the text of its text/tool_result blocks
    (``text``, else ``content``, else ``output``, one level of nesting at a time)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif "content" in block:
                    parts.append(text(block["content"]))
                elif isinstance(block.get("output"), str):
                    parts.append(block["output"])
        return "\n".join(parts)
    return ""


def json_object(value: Any) -> dict[str, Any]:
    """``value`` as an object: itself, or the object its JSON text holds; else empty (a
    tool's arguments are written either way, and a log may hold anything)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            decoded = json.loads(value)
        except ValueError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    return {}


#: The argument names a file-editing tool gives its file, across the agents read here.
PATH_KEYS: Final = (
    "file_path",
    "path",
    "target_file",
    "filePath",
    "absolute_path",
    "notebook_path",
)


def path_arg(args: Mapping[str, Any]) -> tuple[str, ...]:
    """The file an editing tool's arguments name (the first of ``PATH_KEYS`` that is a
    non-empty string), as a one-element tuple, or ``()``."""
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return (value,)
    return ()


def fenced(content: str, tags: Iterable[str]) -> list[str]:
    """The bodies of the fenced blocks of ``content`` whose opening fence is ```` ```tag ````
    for one of ``tags``, in order. One pass over the lines: an unclosed fence runs to the end
    and is not a block (the agent did not finish writing it)."""
    openings = {f"```{tag}" for tag in tags}
    blocks: list[str] = []
    body: list[str] | None = None
    for line in content.split("\n"):
        stripped = line.strip()
        if body is None:
            if stripped in openings:
                body = []
        elif stripped == "```":
            blocks.append("\n".join(body))
            body = None
        else:
            body.append(line)
    return blocks


def after_marker(value: str, start: str, end: str | None = None) -> str | None:
    """The text between the first ``start`` and the next ``end`` after it (to the end
    when ``end`` is None or absent), stripped; None when ``start`` is not there."""
    at = value.find(start)
    if at < 0:
        return None
    begin = at + len(start)
    stop = value.find(end, begin) if end is not None else -1
    return (value[begin:stop] if stop >= 0 else value[begin:]).strip()


_PATCH_HEADS: Final = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


def patch_files(patch: str) -> tuple[str, ...]:
    """The files an ``apply_patch`` patch (``*** Begin Patch`` … ``*** End Patch``, Codex's
    own format) adds, updates, deletes or moves to, in order, each once."""
    found: list[str] = []
    for line in patch.split("\n"):
        if line.startswith(_PATCH_HEADS):
            name = line.split(": ", 1)[1].strip()
            if name:
                found.append(name)
    return tuple(dict.fromkeys(found))


def records(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL text's lines; a line that is not one (blank, truncated
    by a killed process, another value) is passed over, as every reader of these logs does."""
    for line in lines:
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value
