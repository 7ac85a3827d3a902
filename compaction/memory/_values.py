"""Values in the person's words: numbers, codes, versions, paths, quoted text, names.

Read in time linear in the text's length, whatever it holds (a pasted dump, a run of ids
without a space): see ``_VALUE`` and ``_unpasted``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = ["has_value", "values_of"]

#: A value: a number (with its unit or currency sign), a code, a version, a path, a date, a
#: quoted string, a CamelCase or dotted name, a proper name, an email or a URL.
#:
#: Every alternative costs at most the length of the run it starts in (no two unbounded
#: quantifiers over the same characters): a slug must have its first digit found by a class
#: without digits, and a code of capitals and digits is one run checked by a look-ahead for a
#: letter beside a digit (the same matches as "letters, then a digit somewhere", read once).
#: Runs are at most ``_MAX_RUN`` long by the time this reads them (``_unpasted``).
_VALUE_PARTS: Final = (
    r"[$€£¥]?\d[\d,._:/-]*\d?(?:%|[a-zA-Z]{1,3}\b)?",
    r"\b[A-Za-z]+[-_][A-Za-z_-]*\d[A-Za-z0-9_-]*\b",
    r"\b(?=[A-Z0-9]*?[A-Z]\d)[A-Z0-9]+\b|\b(?=[A-Z0-9]*?\d[A-Z])[A-Z0-9]+\b",
    r"\bv?\d+(?:\.\d+)+\w*\b",
    r"{path}(?:[\w.-]+/)+[\w.-]+",
    r"{path}[\w.-]+\.(?:py|js|ts|md|json|toml|yaml|yml|txt|cfg|sh|rs|go)\b",
    # a host or dotted name ("db-UNBHB.internal", "example.com"), read from the start of its
    # run only (each run once): its labels are one value, not a name in capitals
    r"(?<![\w.-])[A-Za-z0-9][\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b",
    # a code in capitals ending a clause ("the phrase XQKYN.", "ticket id EPTJY"): the value
    # the sentence gives, not the name of what it is about ("the DUUWG migration", "Plan A")
    r"(?<=[a-z] )[A-Z][A-Z0-9]{3,15}(?=[.,;!?)]*(?:\s|$))(?![.,;!?)]*\s+[a-z])",
    r"\"[^\"\n]{1,80}\"|'[^'\n]{2,80}'|`[^`\n]{1,80}`",
    r"\b[\w.+-]+@[\w-]+\.[\w.]+\b|https?://\S+",
    r"\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b",
    # a proper name: capitalised words after a lower-case word (not a sentence's first word)
    r"(?<=[a-z,;:] )[A-Z][a-z]{2,}(?: [A-Z][a-z]+)*",
)
_VALUE: Final = re.compile("|".join(_VALUE_PARTS).replace("{path}", ""))
#: ``_VALUE`` with a path or file name read only from the start of its run, for every
#: position but the one a search resumes at. If a path fails at a position, it fails at every
#: later one in the same run (a match from inside the run is one from its start, shortened),
#: so these are the same matches, without reading a run again from each of its characters.
_VALUE_LATER: Final = re.compile("|".join(_VALUE_PARTS).replace("{path}", r"(?<![\w.-])"))
#: A run of non-space characters longer than this is a paste (a dump, a blob of ids), not a
#: value nor a subject: it reads as a space. A run that opens a URL is kept whole (the URL
#: alternative takes it at its first character, so nothing inside it is read again).
_MAX_RUN: Final = 200
_PASTE: Final = re.compile(r"(?<!\S)(?![(<\[\"'`]?https?://)\S{" + str(_MAX_RUN + 1) + ",}")


def _unpasted(text: str) -> str:
    """``text`` with every run of more than ``_MAX_RUN`` non-space characters (not a URL)
    read as a space: the value alternatives may scan a run from each of its positions, so
    bounding the run keeps a read linear in the text's length."""
    return _PASTE.sub(" ", text) if len(text) > _MAX_RUN else text


def _values(text: str) -> Iterator[re.Match[str]]:
    """``_VALUE.finditer(text)``, each run read a bounded number of times: at the position a
    search resumes at (where the previous value ended, maybe inside a run) every alternative
    is tried; further on, a path only from the start of a run (``_VALUE_LATER``)."""
    pos, end = 0, len(text)
    while pos < end:
        found = _VALUE.match(text, pos) or _VALUE_LATER.search(text, pos + 1)
        if found is None:
            return
        yield found
        pos = found.end()


def values_of(text: str) -> tuple[str, ...]:
    """The values a sentence carries (numbers, codes, versions, paths, quoted text, names)."""
    found = _values(_unpasted(text))
    return tuple(dict.fromkeys(m.group(0).strip(".,") for m in found))


#: Each alternative of ``_VALUE`` on its own, as read at a text's start and further on, with
#: what a text must hold for it to match anywhere (a substring search is far cheaper than the
#: alternation tried at every position): ``(test, at the start, further on)``. The three that
#: need a digit are left out, the first alternative matching wherever a digit is.
_DIGIT: Final = re.compile(r"\d")
_LOWER_UPPER: Final = re.compile(r"[a-z][A-Z]")
_CLAUSE_UPPER: Final = re.compile(r"[a-z,;:] [A-Z]")
_ALONE: Final = tuple(
    (
        needs,
        re.compile(_VALUE_PARTS[i].replace("{path}", "")),
        re.compile(_VALUE_PARTS[i].replace("{path}", r"(?<![\w.-])")),
    )
    for i, needs in (
        (4, lambda text: "/" in text),
        (5, lambda text: "." in text),
        (6, lambda text: "." in text),
        (7, lambda text: _CLAUSE_UPPER.search(text) is not None),
        (8, lambda text: '"' in text or "'" in text or "`" in text),
        (9, lambda text: "@" in text or "http" in text),
        (10, lambda text: _LOWER_UPPER.search(text) is not None),
        (11, lambda text: _CLAUSE_UPPER.search(text) is not None),
    )
)


def has_value(text: str) -> bool:
    """Whether [`_values`][] finds any value in ``text`` (as ``next(_values(text), None) is
    not None``), without trying the whole alternation at every position of a text that has
    none: each alternative is asked on its own, only where the text holds what it needs.

    The same answer: the first value is found at the start (``_VALUE.match``) or further on
    (``_VALUE_LATER.search``), and an alternation matches at a position exactly when one of
    its alternatives does."""
    if not text:
        return False
    if _DIGIT.search(text) is not None:
        return True  # a number: the first alternative matches at its first digit
    for needs, at_start, later in _ALONE:
        if needs(text) and (at_start.match(text) is not None or later.search(text, 1) is not None):
            return True
    return False
