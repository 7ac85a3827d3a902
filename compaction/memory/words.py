"""What the person said, condensed: the sentences that carry weight, verbatim.

A person-written message that no longer fits the context window is not summarised in other
words: its sentences that instruct or constrain, that carry identifiers, or that state a goal
are kept *as written*, and the rest (thanks, small talk, repeated sentences) goes. Rewording is
where a value gets lost or changed; a sentence copied whole cannot misquote.

Each kept sentence is a [`Statement`][] with a kind, which is also its priority when room is
short ([`PRIORITY`][]): a rule outlives a fact, a fact outlives a goal's status.

The latest value wins ([`supersedes`][]): a later sentence about the same subject with a
different value (a budget cap, a deadline, a branch, a version) replaces the earlier one, so
the stale value is never carried as if it were current. "Same subject" is decided on the words
that are left when the values are taken out, so "The budget cap is $4,700" and "Update: the
budget cap is now $6,200" are one subject, while "the staging host is db-7" and "the prod host
is db-9" are two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Final, Literal

import attrs

__all__ = [
    "MAX_SENTENCE_CHARS",
    "PRIORITY",
    "Sentences",
    "Statement",
    "StatementKind",
    "statements",
    "subject_of",
    "supersedes",
    "values_of",
]

StatementKind = Literal["rule", "fact", "goal"]
#: Higher survives longer when the ledger has no room for everything.
PRIORITY: Final[dict[str, int]] = {"rule": 3, "fact": 2, "goal": 1}
#: A sentence longer than this is a paste, not a statement: it is kept only up to here.
MAX_SENTENCE_CHARS: Final = 400
#: Only the first this many characters of a message are read (a pasted log is not a rule).
_MAX_SCAN: Final = 20_000

_SENTENCE: Final = re.compile(r"(?:[^\n.!?]|[.!?](?=[\w/\\]))+(?:[.!?]+|\n|$)")
#: Words that instruct or constrain on their own ("never", "must", "at most", "prefer").
_RULE: Final = re.compile(
    r"\b(never|always|must|mustn't|don't|do not|dont|only|no more than|no later than|at most|"
    r"at least|not allowed|forbidden|deadline|due (?:by|on)|by (?:monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|tomorrow|tonight|noon|eod)|prefer\w*|make sure|avoid|"
    r"ensure|no exceptions|under no circumstances)\b",
    re.IGNORECASE,
)
#: Words that instruct only with a value beside them ("keep it under 200 words", "the cap is
#: $4,700"): alone, "keep going" or "the budget review" is talk, not a rule.
_RULE_WITH_VALUE: Final = re.compile(
    r"\b(keep|use|should(?:n't)?|need to|has to|have to|limit|cap|budget|required?|rule|"
    r"constraint|policy|max(?:imum)?|min(?:imum)?|under|below|within|up to)\b",
    re.IGNORECASE,
)
_GOAL: Final = re.compile(
    r"\b(goal|aim|objective|want|wants|plan|milestone|target|done|finished|completed?|"
    r"status|blocked|in progress|next step|priority|todo|ship|launch|release)\b",
    re.IGNORECASE,
)
#: A value: a number (with its unit or currency sign), a code, a version, a path, a date, a
#: quoted string, a CamelCase or dotted name, a proper name, an email or a URL.
#:
#: Every alternative costs at most the length of the run it starts in (no two unbounded
#: quantifiers over the same characters): a slug must have its first digit found by a class
#: without digits, and a code of capitals and digits is one run checked by a look-ahead for a
#: letter beside a digit (the same matches as "letters, then a digit somewhere", read once).
#: Runs are at most [`_MAX_RUN`][] long by the time this reads them ([`_unpasted`][]).
_VALUE_PARTS: Final = (
    r"[$€£¥]?\d[\d,._:/-]*\d?(?:%|[a-zA-Z]{1,3}\b)?",
    r"\b[A-Za-z]+[-_][A-Za-z_-]*\d[A-Za-z0-9_-]*\b",
    r"\b(?=[A-Z0-9]*?[A-Z]\d)[A-Z0-9]+\b|\b(?=[A-Z0-9]*?\d[A-Z])[A-Z0-9]+\b",
    r"\bv?\d+(?:\.\d+)+\w*\b",
    r"{path}(?:[\w.-]+/)+[\w.-]+",
    r"{path}[\w.-]+\.(?:py|js|ts|md|json|toml|yaml|yml|txt|cfg|sh|rs|go)\b",
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
_WORD: Final = re.compile(r"[a-z]{3,}")
#: Prohibitions add up ("never use port A for job 2", "never use port B for job 3"): one
#: replaces another only when it says it changes something.
_PROHIBITION: Final = re.compile(
    r"^\W*(?:\w+[,:]\s+)?(?:never|don'?t|do not|must not|mustn'?t|avoid|no)\b", re.IGNORECASE
)
#: Words that say a value changed; they are not part of the subject.
_CHANGE: Final = frozenset(
    [
        "now",
        "update",
        "updated",
        "change",
        "changed",
        "instead",
        "actually",
        "correction",
        "rather",
        "new",
        "newer",
        "moved",
        "raise",
        "raised",
        "lower",
        "lowered",
        "increase",
        "increased",
        "decrease",
        "decreased",
        "switch",
        "switched",
        "bump",
        "bumped",
        "longer",
        "scratch",
        "forget",
        "revised",
        "revise",
        "set",
        "reset",
        "make",
        "made",
    ]
)
_STOP: Final = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "our",
        "your",
        "you",
        "this",
        "that",
        "with",
        "from",
        "into",
        "its",
        "has",
        "have",
        "had",
        "will",
        "shall",
        "been",
        "being",
        "not",
        "but",
        "any",
        "all",
        "can",
        "per",
        "let",
        "lets",
        "please",
        "also",
        "just",
        "then",
        "than",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "when",
        "where",
        "how",
        "why",
        "about",
        "over",
        "under",
        "again",
        "should",
        "would",
        "could",
        "must",
        "never",
        "always",
        "only",
        "don",
    ]
)
_FILLER: Final = re.compile(
    r"^\W*(ok(?:ay)?|thanks?(?: you)?|thx|great|cool|nice|sure|yes|no|yep|nope|got it|sounds "
    r"good|perfect|interesting|hmm+|lol|right|alright|continue|go on|go ahead)\W*$",
    re.IGNORECASE,
)


@attrs.frozen(slots=True)
class Statement:
    """One sentence the person wrote, verbatim, with its kind (its priority)."""

    kind: StatementKind
    text: str

    @property
    def priority(self) -> int:
        return PRIORITY[self.kind]


def _unpasted(text: str) -> str:
    """``text`` with every run of more than [`_MAX_RUN`][] non-space characters (not a URL)
    read as a space: the value alternatives may scan a run from each of its positions, so
    bounding the run keeps a read linear in the text's length."""
    return _PASTE.sub(" ", text) if len(text) > _MAX_RUN else text


def _values(text: str) -> Iterator[re.Match[str]]:
    """``_VALUE.finditer(text)``, each run read a bounded number of times: at the position a
    search resumes at (where the previous value ended, maybe inside a run) every alternative
    is tried; further on, a path only from the start of a run ([`_VALUE_LATER`][])."""
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


def subject_of(text: str) -> frozenset[str]:
    """The words a sentence is about once its values and change-words are taken out."""
    text = _unpasted(text)
    pieces: list[str] = []
    pos = 0
    for m in _values(text):
        pieces += (text[pos : m.start()], " ")
        pos = m.end()
    bare = ("".join(pieces) + text[pos:]).lower()
    return frozenset(w for w in _WORD.findall(bare) if w not in _STOP and w not in _CHANGE)


def _changes(text: str) -> bool:
    return any(w in _CHANGE for w in _WORD.findall(text.lower()))


def supersedes(newer: str, older: str) -> bool:
    """Whether ``newer`` states a new value for the subject ``older`` was about.

    Both must carry a value, the values must differ, and the subjects must be the same: nearly
    the same words (Jaccard >= 0.6), or, when the newer sentence says it changes something
    ("now", "instead", "update", ...), a good share of them (>= 0.4, at least two words).
    Prohibitions accumulate: a "never ..." is replaced only by a sentence that says it
    changes something.
    """
    return Sentences().supersedes(newer, older)


class Sentences:
    """[`supersedes`][] over many pairs, each sentence read once.

    Comparing every later sentence with every earlier one reads each of them many times, and
    reading (the value regex) is what costs: this keeps each sentence's values and subject for
    as long as the object lives (one call of its owner), so the answers are the same."""

    def __init__(self) -> None:
        self._values: dict[str, set[str]] = {}
        self._subjects: dict[str, frozenset[str]] = {}

    def _values_of(self, text: str) -> set[str]:
        found = self._values.get(text)
        if found is None:
            found = self._values[text] = set(values_of(text))
        return found

    def _subject_of(self, text: str) -> frozenset[str]:
        found = self._subjects.get(text)
        if found is None:
            found = self._subjects[text] = subject_of(text)
        return found

    def supersedes(self, newer: str, older: str) -> bool:
        """As [`supersedes`][]."""
        new_values, old_values = self._values_of(newer), self._values_of(older)
        if not new_values or not old_values or new_values == old_values:
            return False
        if not (old_values - new_values):
            return False  # nothing of the older value is replaced: it adds, it does not change
        a, b = self._subject_of(newer), self._subject_of(older)
        if not a or not b:
            return False
        shared = len(a & b)
        jaccard = shared / len(a | b)
        changes = _changes(newer)
        if jaccard >= 0.6 and (changes or not _PROHIBITION.match(older)):
            return True
        return changes and shared >= 2 and (jaccard >= 0.4 or shared / len(b) >= 0.75)


def _kind(sentence: str) -> StatementKind | None:
    if _FILLER.match(sentence):
        return None
    if _RULE.search(sentence):
        return "rule"
    has_value = bool(values_of(sentence))
    if has_value and _RULE_WITH_VALUE.search(sentence):
        return "rule"
    if has_value:
        return "fact"
    if _GOAL.search(sentence):
        return "goal"
    return None


def statements(text: str, seen: set[str] | None = None) -> list[Statement]:
    """The sentences of ``text`` worth carrying, verbatim and in order; filler and sentences
    already in ``seen`` (normalised; updated here) are left out."""
    seen = set() if seen is None else seen
    out: list[Statement] = []
    for match in _SENTENCE.finditer(text[:_MAX_SCAN]):
        sentence = " ".join(match.group(0).split())
        if len(sentence) < 4:
            continue
        key = sentence.lower().rstrip(".!? ")
        if key in seen:
            continue
        kind = _kind(sentence)
        if kind is None:
            continue
        seen.add(key)
        if len(sentence) > MAX_SENTENCE_CHARS:
            sentence = sentence[: MAX_SENTENCE_CHARS - 1] + "…"
        out.append(Statement(kind, sentence))
    return out


def latest(items: Iterable[Statement]) -> tuple[list[Statement], list[tuple[Statement, str]]]:
    """``items`` (oldest first) with every statement a later one supersedes taken out; and the
    pairs ``(stale, by)`` taken out, for the record."""
    kept: list[Statement] = []
    gone: list[tuple[Statement, str]] = []
    sentences = Sentences()
    for item in items:
        still: list[Statement] = []
        for old in kept:
            if sentences.supersedes(item.text, old.text):
                gone.append((old, item.text))
            else:
                still.append(old)
        still.append(item)
        kept = still
    return kept, gone
