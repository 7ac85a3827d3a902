"""The identifiers a person wrote: what a model cannot guess once it is gone.

A person's message carries values the agent must use exactly: a ticket code, a port, a
budget, a date, a path, a URL, an address, a function name. Prose can be paraphrased; these
cannot. [`identifiers`][compaction.check.identifiers.identifiers] finds them with rules of its
own, apart from the ledger's parsers (``compaction.memory.words``), so a check of what the
ledger kept is not graded by the code that kept it.

Kinds, tried in this order (a span taken by one kind is not read again by the next):

- ``url``: ``http://`` or ``https://`` up to whitespace, quotes or brackets;
- ``email``: a local part, ``@``, a dotted domain;
- ``path``: a run of path characters holding a ``/`` and either two separators, a leading
  ``./``, ``../`` or ``~/``, or a known file extension; or a bare name with a known extension;
- ``date``: ``2026-12-05``, ``12/05/2026``, ``Dec 5`` and ``December 5, 2026``;
- ``code``: capitals and digits joined by ``-`` or ``_`` with a digit in it (``INV-7``,
  ``JIRA_123``), or a hex hash of 7 to 40 characters with letters and digits;
- ``number``: three digits or more, or any number with a currency sign or a percent sign
  (``8001``, ``$500``, ``15%``); a lone small number (``2``) is too common to tell anything;
- ``name``: a backticked span of at most 60 characters, or an identifier in snake_case or
  CamelCase of four characters or more.

Every pattern starts only where a run of its characters starts, so a scan is linear in the
text (a 1 MB run of letters is read once, not once per position).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Final

__all__ = ["KINDS", "identifiers"]

KINDS: Final = ("url", "email", "path", "date", "code", "number", "name")

_EXTENSIONS: Final = frozenset(
    "py pyi js jsx ts tsx mjs cjs json jsonl yaml yml toml ini cfg conf txt md rst html css "  # noqa: SIM905
    "c h cc cpp hpp rs go java kt rb php sh bash sql csv tsv xml lock ex exs lua swift cs "
    "scala dart vue svelte r jl pl ipynb log env gradle mk cmake pdf png jpg jpeg svg zip "
    "docx xlsx pptx".split()
)
_MONTHS: Final = (
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"  # Dec, December
)
_PATTERNS: Final = {
    "url": re.compile(r"(?<![\w/])https?://[^\s<>\"'`()\[\]{}]+"),
    "date": re.compile(
        rf"(?<![\w/-])(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}|"
        rf"{_MONTHS} \d{{1,2}}(?:, \d{{4}})?)(?![\w/])"
    ),
    "code": re.compile(r"(?<![\w-])(?:[A-Z][A-Z0-9]*(?:[-_][A-Z0-9]+)+|[0-9a-f]{7,40})(?![\w-])"),
    "number": re.compile(r"(?<![\w.,$€£])[$€£]?\d[\d,]*(?:\.\d+)?%?"),
    "name": re.compile(r"`[^`\n]{1,60}`|(?<![\w.])[A-Za-z_][A-Za-z0-9_]{3,}"),
}
_PATH_RUN: Final = re.compile(r"[\w.~/-]+")
_LOCAL_CHAR: Final = re.compile(r"[\w.+-]")
_EMAIL_DOMAIN: Final = re.compile(r"[\w-]{1,63}(?:\.[\w-]{1,63})+")
_TRAIL: Final = ".,;:!?-"


def _is_path(token: str) -> bool:
    if len(token) < 3 or token.startswith("//"):
        return False
    ext = token.rsplit(".", 1)[-1].lower() if "." in token.rsplit("/", 1)[-1] else ""
    if "/" in token:
        return token.count("/") >= 2 or token.startswith(("./", "../", "~/")) or ext in _EXTENSIONS
    return ext in _EXTENSIONS and not token.startswith(".")


def _paths(text: str) -> Iterator[tuple[int, int]]:
    for m in _PATH_RUN.finditer(text):
        token = m.group().rstrip(_TRAIL)
        if _is_path(token):
            yield m.start(), m.start() + len(token)


def _emails(text: str) -> Iterator[tuple[int, int]]:
    at = text.find("@")
    while at >= 0:
        start = at
        while start > 0 and at - start < 64 and _LOCAL_CHAR.match(text, start - 1):
            start -= 1
        domain = _EMAIL_DOMAIN.match(text, at + 1)
        if start < at and domain is not None and text[start:at].strip(".+-"):
            yield start, domain.end()
            at = text.find("@", domain.end())
        else:
            at = text.find("@", at + 1)


def _is_code(token: str) -> bool:
    if token[0].isupper() or "-" in token or "_" in token:
        return any(c.isdigit() for c in token)
    # A hex hash: letters and digits both (a plain word or a plain number is not one).
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _is_number(token: str) -> bool:
    return token[0] in "$€£" or token.endswith("%") or sum(c.isdigit() for c in token) >= 3


def _is_name(token: str) -> bool:
    if token.startswith("`"):
        return bool(token.strip("` "))
    inner = token.lstrip("_")
    return "_" in inner.rstrip("_") or any(
        a.islower() and b.isupper() for a, b in itertools.pairwise(inner)
    )


_CHECKS: Final = {"code": _is_code, "number": _is_number, "name": _is_name}


def identifiers(text: str) -> dict[str, list[str]]:
    """The identifiers in ``text`` by kind (each kind in ``KINDS``, in order of first
    appearance, without repeats)."""
    taken = bytearray(len(text))  # spans an earlier kind took
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    seen: set[tuple[str, str]] = set()

    def add(kind: str, start: int, end: int) -> None:
        if end <= start or any(taken[start:end]):
            return
        taken[start:end] = b"\x01" * (end - start)
        value = text[start:end]
        if (kind, value) not in seen:
            seen.add((kind, value))
            found[kind].append(value)

    for m in _PATTERNS["url"].finditer(text):
        add("url", m.start(), m.start() + len(m.group().rstrip(_TRAIL)))
    for start, end in _emails(text):
        add("email", start, end)
    for start, end in _paths(text):
        add("path", start, end)
    for m in _PATTERNS["date"].finditer(text):
        add("date", m.start(), m.end())
    for kind in ("code", "number", "name"):
        check = _CHECKS[kind]
        for m in _PATTERNS[kind].finditer(text):
            token = m.group()
            if kind == "number":
                token = token.rstrip(",.")
            if check(token):
                add(kind, m.start(), m.start() + len(token))
    return found
