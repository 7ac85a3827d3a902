"""The identifiers an extractive summary copies exactly, found fast.

What counts as an identifier is defined by plain regular expressions (``_UUID``, ``_SHA``,
``_ISSUE``, ``_ERROR``, and the path tokens of ``_TOKEN``). A pattern that opens with ``\\b`` or
a look-behind is tried at every character of a tool output that may run to megabytes; the
scans here find exactly the same matches, in the same order, by first skipping to what every
match must hold (a literal "-", "#", "/", an error word). ``tests/test_extractive_scans.py``
holds them to the definitions.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from typing import Final

__all__ = ["extract_paths"]

# A path-like token is a maximal run of characters that are not separators, holding a "/".
# Deliberately generous ("and/or" counts): dropping a real path costs the agent far more than
# keeping a harmless extra token.
_TOKEN = re.compile(r"[^\s'\"`()\[\]{}<>,;|&=]+")
_LEAD = ":*#@!?$%^+"
_TRAIL = ".:*#@!?$%^+-"
_LETTER = re.compile(r"[A-Za-z]")

# What counts as an identifier (the definitions; the scans below find exactly these matches,
# in the same order, but faster: a pattern that opens with ``\b`` or a lookbehind is tried at
# every character of a tool output that may run to megabytes, one that opens with a literal is
# not).
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_SHA = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
_ISSUE = re.compile(r"(?<![\w&])#\d{1,7}\b")
_ERROR = re.compile(
    r"(\b\w*(Error|Exception)\b|\bTraceback\b|\bFAILED\b|\bFAIL:|\bfatal:|\berror:|\bpanic:)"
)
# A UUID's tail opens with a literal "-"; its first group is then checked where it must be.
# No UUID's first group lies inside another candidate's tail (those groups are 4 and 12
# characters long), so none is skipped.
_UUID_TAIL = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# A SHA is a whole word of 7 to 40 lowercase hex digits with a letter and a digit: the word
# start is checked after its first character (a character class the scan skips to), the
# letter and the digit on the few words found.
_HEX_WORD = re.compile(r"[0-9a-f](?<!\w.)[0-9a-f]{6,39}\b")
_ISSUE_AT = re.compile(r"#\d{1,7}\b")
_WORD_OR_AMP = re.compile(r"[\w&]")
# Every line ``_ERROR`` matches holds one of these: only those lines are searched.
_ERROR_WORDS: Final = ("Error", "Exception", "Traceback", "FAIL", "fatal:", "error:", "panic:")


def extract_paths(text: str) -> list[str]:
    """Every path-like token in ``text`` (URLs included), in order of first appearance, once."""
    seen: dict[str, None] = {}
    if "/" not in text:
        return []
    # Tokens never span whitespace (it is a separator, as ``str.split`` has it), so only the
    # words that hold a "/" are tokenised: the same tokens, in the same order, for a fraction
    # of the work on a long output.
    for word in text.split():
        if "/" not in word:
            continue
        for match in _TOKEN.finditer(word):
            token = match.group().lstrip(_LEAD).rstrip(_TRAIL)
            if "/" in token and _LETTER.search(token):
                seen.setdefault(token, None)
    return list(seen)


def _uuids(text: str) -> list[str]:
    """``_UUID``'s matches in ``text``, in order."""
    out = []
    for match in _UUID_TAIL.finditer(text):
        head = _UUID.match(text, match.start() - 8) if match.start() >= 8 else None
        if head is not None:
            out.append(head.group())
    return out


def _shas(text: str) -> list[str]:
    """``_SHA``'s matches in ``text``, in order."""
    out = []
    for match in _HEX_WORD.finditer(text):
        word = match.group()
        if not word.isdigit() and not word.isalpha():
            out.append(word)
    return out


def _issues(text: str) -> list[str]:
    """``_ISSUE``'s matches in ``text``, in order."""
    if "#" not in text:
        return []
    return [
        match.group()
        for match in _ISSUE_AT.finditer(text)
        if not (match.start() and _WORD_OR_AMP.match(text, match.start() - 1))
    ]


def _error_lines(text: str) -> list[str]:
    """The lines of ``text`` (as ``str.splitlines`` has them) that ``_ERROR`` matches, in
    order: only the lines holding one of ``_ERROR_WORDS`` are searched."""
    hits = [word for word in _ERROR_WORDS if word in text]
    if not hits:
        return []
    lines = text.splitlines(keepends=True)
    starts = list(accumulate(map(len, lines), initial=0))
    candidates: set[int] = set()
    for word in hits:
        at = text.find(word)
        while at >= 0:
            index = bisect_right(starts, at) - 1
            candidates.add(index)
            # the rest of this line is settled: go on from the next one
            at = text.find(word, starts[index + 1])
    return [lines[i] for i in sorted(candidates) if _ERROR.search(lines[i])]
