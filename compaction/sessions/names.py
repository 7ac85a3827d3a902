"""Session names: which are allowed, and why the rest are not.

A name becomes a directory under the store root, so a hostile or careless name must never
reach a path outside it (``..``, ``/etc``, ``a/b``), nor one that some platform treats
specially (Windows device names, trailing dots it silently strips, NUL). We allow a small,
portable alphabet rather than trying to enumerate every bad character.
"""

from __future__ import annotations

import re
from typing import Final

from .errors import ALLOWED, MAX_NAME_LENGTH, InvalidSessionName

__all__ = ["ALLOWED", "MAX_NAME_LENGTH", "validate_name"]

_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_RESERVED: Final = frozenset(
    {"CON", "PRN", "AUX", "NUL"}
    | {f"COM{i}" for i in range(1, 10)}
    | {f"LPT{i}" for i in range(1, 10)}
)


def validate_name(name: object) -> str:
    """Return ``name`` unchanged when it is a safe session name, else raise InvalidSessionName."""
    if not isinstance(name, str):
        raise InvalidSessionName(name, f"must be a str, not {type(name).__name__}")
    if not name:
        raise InvalidSessionName(name, "it is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidSessionName(name, f"it is {len(name)} characters long")
    if "\0" in name:
        raise InvalidSessionName(name, "it contains a NUL character")
    if "/" in name or "\\" in name:
        raise InvalidSessionName(name, "it contains a path separator")
    if name in (".", "..") or name.startswith("."):
        raise InvalidSessionName(name, "it starts with '.' (relative or hidden paths)")
    if not _PATTERN.fullmatch(name):
        raise InvalidSessionName(name, "it contains a character outside the allowed set")
    if name.endswith("."):
        raise InvalidSessionName(name, "it ends with '.', which Windows strips")
    # Windows reserves device names with any extension too ("con.txt" is the console).
    if name.split(".", 1)[0].upper() in _RESERVED:
        raise InvalidSessionName(name, "it is a reserved Windows device name")
    return name
