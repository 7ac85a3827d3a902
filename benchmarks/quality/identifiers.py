"""The benchmark's own identifier extraction: file paths, function names, error class names.

Written for the quality suite and deliberately independent of the library (the library's notes
extract identifiers too; a benchmark that reused that code would grade the library by its own
rules). The rules are plain regular expressions over text, chosen to find what an agent would
need again after a compaction: the files it read or edited, the functions it looked at, the
errors it saw. They are heuristics, the same for every ladder, so the comparison is fair even
where a rule misses or over-reaches.

- **paths**: a token of ``[\\w.~/-]`` characters that has two or more ``/`` separators, or
  starts with ``../`` or ``~/``, or has a ``/`` and ends in a known file extension; or a bare
  file name with a known extension (``forms.py``). URLs (``//host/...``) are not paths, nor is
  ``/name`` alone (as often a closing tag as a path).
- **functions**: names defined (``def name(``, ``function name(``, ``func``, ``fn``), the
  function of a Python traceback frame (``File "...", line 3, in name``), and called names
  (``name(``) that are visibly identifiers (snake_case with an underscore, or lowerCamelCase),
  at least 4 characters; a capitalised call is a class, not counted.
- **errors**: class names ending in ``Error``, ``Exception``, ``Warning``, ``Exit``,
  ``Interrupt`` or ``Fault`` with at least one character before the suffix
  (``ValueError``, ``django.core.exceptions.ValidationError`` → ``ValidationError``).

Whether an identifier is *kept* is judged by :func:`vocabulary`: the tokens of the kept text,
with each token's dotted parts and ``/``-suffixes, so a note that writes ``self._fetch_all()``
keeps ``_fetch_all`` and one that writes ``/testbed/django/forms.py`` keeps ``forms.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final, Literal

import attrs

__all__ = [
    "KINDS",
    "Identifiers",
    "call_paths",
    "errors",
    "functions",
    "identifiers",
    "paths",
    "vocabulary",
]

Kind = Literal["paths", "functions", "errors"]
KINDS: Final[tuple[Kind, ...]] = ("paths", "functions", "errors")

_EXTENSIONS: Final = frozenset(
    # A word list reads better than 73 quoted strings.
    "py pyi pyx js jsx ts tsx mjs cjs json jsonl yaml yml toml ini cfg conf txt md rst html "  # noqa: SIM905
    "htm css scss c h cc cpp hpp cxx rs go java kt rb php sh bash zsh sql csv tsv xml lock "
    "ex exs erl heex eex lua swift m mm cs fs scala clj dart vue svelte r jl pl ipynb log "
    "env gradle mk cmake dockerfile traj patch diff".split()
)
_TOKEN: Final = re.compile(r"[\w.~/-]+")
_TRAIL: Final = ".-"
_DEF: Final = re.compile(r"\b(?:def|function|func|fn)\s+([A-Za-z_]\w*)\s*\(")
_FRAME: Final = re.compile(r'File "[^"\n]*", line \d+, in ([A-Za-z_]\w*)')
_CALL: Final = re.compile(r"(?<![\w])([a-z_]\w{3,})\(")
_CAMEL: Final = re.compile(r"[a-z][A-Z]")
_ERROR: Final = re.compile(
    r"(?<![\w])([A-Za-z_][\w.]*?\.)?([A-Z]\w*?[A-Za-z0-9](?:Error|Exception|Warning|Exit|"
    r"Interrupt|Fault))(?!\w)"
)
_MAX_LEN: Final = 200


def _tokens(text: str) -> Iterable[str]:
    for raw in _TOKEN.findall(text):
        token = raw.rstrip(_TRAIL)
        if token.startswith("./"):
            token = token[2:]
        if token:
            yield token


def _is_path(token: str) -> bool:
    if len(token) < 3 or len(token) > _MAX_LEN or token.startswith("//"):
        return False
    if not any(c.isalpha() for c in token):
        return False
    last = token.rsplit("/", 1)[-1]
    ext = last.rsplit(".", 1)[-1].lower() if "." in last[1:] else ""
    known = ext in _EXTENSIONS and last[: -len(ext) - 1].strip(".") != ""
    if "/" not in token:
        return known
    if token.endswith("/") or "//" in token:
        return False
    # One leading "/" and one name is as often a closing tag (</warning>) as a path.
    return token.count("/") >= 2 or token.startswith(("~/", "../")) or known


def paths(text: str) -> set[str]:
    """File paths in ``text`` (see the module docstring for the rule)."""
    return {t for t in _tokens(text) if _is_path(t)}


def functions(text: str) -> set[str]:
    """Function names defined, called or in a traceback frame in ``text``."""
    found = set(_DEF.findall(text)) | set(_FRAME.findall(text))
    for name in _CALL.findall(text):
        if "_" in name.strip("_") or _CAMEL.search(name):
            found.add(name)
    return found


def errors(text: str) -> set[str]:
    """Error class names in ``text`` (the class name only, without its module)."""
    return {name for _, name in _ERROR.findall(text)}


@attrs.frozen
class Identifiers:
    """The identifiers of one text, by kind."""

    paths: frozenset[str] = frozenset()
    functions: frozenset[str] = frozenset()
    errors: frozenset[str] = frozenset()

    def of(self, kind: Kind) -> frozenset[str]:
        value: frozenset[str] = getattr(self, kind)
        return value

    def __or__(self, other: Identifiers) -> Identifiers:
        return Identifiers(
            self.paths | other.paths,
            self.functions | other.functions,
            self.errors | other.errors,
        )


def identifiers(text: str) -> Identifiers:
    """Paths, function names and error class names in ``text``."""
    return Identifiers(frozenset(paths(text)), frozenset(functions(text)), frozenset(errors(text)))


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def arguments_text(arguments: str) -> str:
    """The string values of a tool call's JSON arguments, one per line (the raw text when it
    is not JSON): decoding first, so an escaped ``\\n`` or ``\\"`` does not glue a path to the
    next word."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return "\n".join(_strings(value))


def call_paths(arguments: str) -> set[str]:
    """File paths in a tool call's arguments."""
    return paths(arguments_text(arguments))


def vocabulary(text: str) -> set[str]:
    """Every token of ``text``, with its dotted parts and its ``/``-suffixes: an identifier
    is kept in ``text`` when it is in this set."""
    out: set[str] = set()
    for token in _tokens(text):
        out.add(token)
        if "." in token:
            out.update(p for p in token.split(".") if p)
        if "/" in token:
            parts = token.split("/")
            for i in range(1, len(parts)):
                tail = "/".join(parts[i:])
                if tail:
                    out.add(tail)
    for _, name in _ERROR.findall(text):
        out.add(name)
    return out
