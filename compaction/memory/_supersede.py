"""Which of a few older sentences each of many newer ones supersedes, found from the older.

[`Subjects`][compaction.memory.words.Subjects] answers one newer sentence at a time against
an index of the older; a ledger checked against the person's later messages asks that of
every later sentence, hundreds of them, while the ledger may hold a handful of statements.
Here the newer sentences are indexed instead and each older one looks up those that share a
word of its subject: the same pairs are weighed, by the same rule and the same cheap count
first, for work that follows the pairs that share a word, not the number of newer sentences.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain

from .words import _read, _supersedes

__all__ = ["supersessions"]


def supersessions(newer: Sequence[str], older: Iterable[str]) -> dict[int, set[str]]:
    """For each position of ``newer`` whose sentence supersedes one of ``older``
    ([`supersedes`][compaction.memory.words.supersedes]), the older sentences it supersedes;
    positions that supersede none are left out."""
    olds = [(text, reading) for text in dict.fromkeys(older) if (reading := _read(text)).values]
    out: dict[int, set[str]] = {}
    if not olds:
        return out
    # only the words an older subject holds are ever looked up: the rest are not indexed
    wanted = frozenset().union(*(old.subject for _, old in olds))
    by_word: dict[str, list[int]] = {}
    sizes: dict[int, int] = {}
    for at, text in enumerate(newer):
        reading = _read(text)
        if not reading.values:
            continue  # a sentence without a value supersedes nothing
        shared = reading.subject & wanted
        if not shared:
            continue
        sizes[at] = len(reading.subject)
        for word in shared:
            by_word.setdefault(word, []).append(at)
    if not by_word:
        return out
    for text, old in olds:
        b = len(old.subject)
        held = [by_word[w] for w in old.subject if w in by_word]
        if not held:
            continue
        # as Subjects.superseded_by: only a pair whose shared words could pass is read further
        for at, n in Counter(chain.from_iterable(held)).items():
            a = sizes[at]
            if (n / (a + b - n) >= 0.4 or n / b >= 0.75) and _supersedes(_read(newer[at]), old):
                out.setdefault(at, set()).add(text)
    return out
