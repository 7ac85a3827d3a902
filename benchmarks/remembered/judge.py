"""What counts as remembered: the benchmark's own rules, independent of the library.

A value *survives* when it appears literally in the model-visible text of the compacted
messages: their content, and their tool calls' arguments (the JSON text as sent, and every
string inside it decoded, so an escaped character does not hide a value). ``meta`` is never
read: the model does not see it.

A superseded value is *presented as current* (stale) when, in that text read in order:

1. the old value appears and the newer value does not appear at all; or
2. some occurrence of the old value is *unmarked*: no occurrence of the newer value comes
   after it (a reader who meets the old value first and the new one later has seen the
   change, as in the original conversation), and no supersession marker (:data:`MARKERS`:
   "was", "previously", "superseded", "instead of", "changed from", an arrow to the new
   value...) stands within :data:`NEAR` characters of it on the same line.

An old value that does not appear is never stale: forgetting it is the other metric's loss.
"""

from __future__ import annotations

import re
from typing import Final

from compaction.check import visible_text

__all__ = ["MARKERS", "NEAR", "stale", "visible_text"]

NEAR: Final = 40
MARKERS: Final = re.compile(
    r"\b(?:was|were|previously|formerly|earlier|old|superseded|replaced|replaces|replacing|"
    r"no longer|instead of|changed from|updated from|outdated|stale|obsolete)\b|->|→",
    re.IGNORECASE,
)


def _marked(text: str, at: int, length: int) -> bool:
    start = max(text.rfind("\n", 0, at) + 1, at - NEAR)
    end = text.find("\n", at + length)
    end = min(len(text) if end < 0 else end, at + length + NEAR)
    return MARKERS.search(text[start:at] + " " + text[at + length : end]) is not None


def stale(text: str, old: str, new: str) -> bool:
    """Whether ``text`` presents ``old`` as current although ``new`` superseded it."""
    if old not in text:
        return False
    last_new = text.rfind(new)
    if last_new < 0:
        return True
    at = text.find(old)
    while at >= 0:
        if at > last_new and not _marked(text, at, len(old)):
            return True
        at = text.find(old, at + 1)
    return False
