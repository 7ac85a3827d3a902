"""Cuts by whole units, for [`Fit`][compaction.strategies.fit.Fit]: our own notes by whole
lines, the person's messages by whole sentences.

A cut in the middle of a text keeps its head and tail, which is right for a log or a file and
wrong for what the person said: a ledger line cut mid-line leaves a label without its value
("- The memory limit is 7,4[… cut …]"), or a replaced value without the label that says it was
replaced, and a person's message cut in its middle loses the very value it states. So:

- A note or summary of ours is written in priority order (its header, the person's rules and
  limits, then their facts and goals, then the record of the run, then the summariser's prose).
  It is cut from its lowest-priority end, whole pieces at a time: first the prose and the
  record (sentence by sentence, from the end), then the labels of replaced values, then the
  person's statements, from the last (lowest priority) up. The header stays; only when even
  the header alone is too many may the text be emptied (the record stays in ``meta``).
- A person's message loses whole sentences: filler and goals first (before a note gives any
  of the person's rules and facts), then their questions, facts and rules (the lowest priority
  first, the earliest first within a kind: the end of a message is what was said last); a
  marker says how much went. A message holding a paste (a "sentence" longer than
  [`MAX_SENTENCE_CHARS`][compaction.memory.words.MAX_SENTENCE_CHARS]) is not a list of
  statements, and is cut in its middle as any text.

Each candidate is counted once; which is the fewest pieces to drop is found by bisection (a
text with more pieces dropped never counts more), so a cut costs a few encodings of the text.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Final

from ..memory.words import MAX_SENTENCE_CHARS, PRIORITY, statements

__all__ = ["cut_lines", "cut_sentences", "is_paste"]

#: A sentence, as the person's words are read ([`compaction.memory.words`][]): up to a stop, a
#: newline or the end; a stop inside a word (a version, a path) does not end it.
_SENTENCE: Final = re.compile(r"(?:[^\n.!?]|[.!?](?=[\w/\\]))+(?:[.!?]+|\n|$)")
#: Where a line of the record splits into its sections ("Files read: a.py. Recall ids: ...").
_SECTION: Final = re.compile(r"(?<=[.\]]) (?=[A-Z#(])")
_LABEL: Final = re.compile(r" \(replaced earlier: [^\n]*\)$")
_SAID: Final = "The person said"

#: Drop ranks of a note's pieces: the lowest go first, from the end.
_RECORD, _LABELS, _STATEMENT = 0, 1, 2


def _note_pieces(text: str) -> tuple[list[str], list[int | None]]:
    """``text`` as pieces (joined, they give it back) with each piece's drop rank (None: the
    header, kept)."""
    pieces: list[str] = []
    ranks: list[int | None] = []
    for n, line in enumerate(text.split("\n")):
        lead = "\n" if n else ""
        if n and (line.startswith("- ") or line.startswith(_SAID)):
            label = _LABEL.search(line) if line.startswith("- ") else None
            body = line[: label.start()] if label else line
            pieces.append(lead + body)
            ranks.append(_STATEMENT)
            if label:
                pieces.append(label.group(0))
                ranks.append(_LABELS)
            continue
        parts = _SECTION.split(line)
        for k, part in enumerate(parts):
            pieces.append((lead if k == 0 else " ") + part)
            ranks.append(None if n == 0 and k == 0 else _RECORD)
    return pieces, ranks


def _counted(build: Callable[[int], str], count_text: Callable[[str], int]) -> Callable[[int], int]:
    """``count_text(build(k))``, each ``k`` built and counted once (a bisection asks again)."""
    memo: dict[int, int] = {}

    def size(k: int) -> int:
        if k not in memo:
            memo[k] = count_text(build(k))
        return memo[k]

    return size


def _bisect(size: Callable[[int], int], most: int, want: int) -> int:
    """The fewest drops ``k`` in ``0..most`` with ``size(k) <= want`` (``most`` when none)."""
    low, high = 0, most
    while low < high:
        mid = (low + high) // 2
        if size(mid) <= want:
            high = mid
        else:
            low = mid + 1
    return low


def cut_lines(
    text: str, want: int, count_text: Callable[[str], int], *, may_empty: bool
) -> str | None:
    """``text`` (a note or summary of ours) with whole pieces dropped from its lowest-priority
    end until it counts at most ``want``; the header always stays, unless ``may_empty`` and
    the header alone is over ``want`` (then ``""``). None when nothing can be dropped."""
    close = ""
    first = text.split("\n", 1)[0]
    if text.startswith("[") and text.endswith("]") and (text == first or not first.endswith("]")):
        # the bracket that closes the note closes what is kept of it
        close, text = "]", text[:-1]
    pieces, ranks = _note_pieces(text)
    order = sorted((i for i, r in enumerate(ranks) if r is not None), key=lambda i: (ranks[i], -i))

    def build(k: int) -> str:
        gone = set(order[:k])
        kept = [p for i, p in enumerate(pieces) if i not in gone]
        if not any(p.startswith("\n- ") for p in kept):
            # the heading of the person's words goes with the last of them
            kept = [p for p in kept if not p.startswith("\n" + _SAID)]
        return "".join(kept).rstrip() + close

    size = _counted(build, count_text)
    k = _bisect(size, len(order), want)
    if size(k) > want and may_empty:
        return ""
    if k == 0:
        return None
    out = build(k)
    return out if len(out) < len(text) + len(close) else None


def is_paste(text: str) -> bool:
    """Whether ``text`` holds a "sentence" too long to be a statement (a pasted log, a file):
    such a message is cut in its middle, as any text."""
    return any(len(m.group(0)) > MAX_SENTENCE_CHARS for m in _SENTENCE.finditer(text))


#: Drop ranks of a person's sentence: filler, a question (what they ask is the request), then
#: their statements by priority (goals, facts, rules).
_FILLER, _QUESTION = 0, 1
_GOAL: Final = _QUESTION + PRIORITY["goal"]


def _rank(sentence: str) -> int:
    found = statements(sentence)
    if found:
        return _QUESTION + PRIORITY[found[0].kind]
    return _QUESTION if sentence.rstrip().endswith("?") else _FILLER


def cut_sentences(
    text: str,
    want: int,
    count_text: Callable[[str], int],
    marker: Callable[[int], str],
    *,
    filler_only: bool = False,
) -> tuple[str, int] | None:
    """``text`` (a person's message) with whole sentences dropped, filler first, then the
    lowest-priority statements (the earliest first within a kind), until it counts at most
    ``want`` with ``marker(characters cut)`` after it; every sentence dropped when none
    fits; and how many sentences it keeps. ``filler_only``: only filler and goals go (what
    ranks below every line a note keeps of the person's rules and facts; a question is the
    request, and stays). None when nothing can be dropped."""
    starts = [m.start() for m in _SENTENCE.finditer(text)]
    if not starts:
        return None
    starts[0] = 0
    bounds = [*starts, len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    ranks = [_rank(p) for p in pieces]
    order = sorted(range(len(pieces)), key=lambda i: (ranks[i], i))
    if filler_only:
        order = [i for i in order if ranks[i] in (_FILLER, _GOAL)]

    def build(k: int) -> str:
        gone = set(order[:k])
        kept = "".join(p for i, p in enumerate(pieces) if i not in gone).strip()
        if not k:
            return text
        mark = marker(len(text) - len(kept))
        return kept + mark if kept else mark.strip("\n")

    size = _counted(build, count_text)
    k = _bisect(size, len(order), want)
    if k == 0:
        return None
    out = build(k)
    return (out, len(pieces) - k) if len(out) < len(text) else None
