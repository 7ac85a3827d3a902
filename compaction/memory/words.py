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
is db-9" are two. What names which thing a sentence is about counts as subject too, however
short ([`names_of`][]): "Job 1 must use port 8001" and "Job 2 must use port 8002", "the EU
report" and "the US report", "Plan A" and "Plan B" are two subjects. When unsure, both are
kept: a sentence that replaces more than one of the older one's values could be naming
another thing as well as changing its value.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Final

import attrs

from ._kinds import StatementKind
from ._kinds import kind_of as _kind
from ._values import _unpasted, _values, values_of

__all__ = [
    "MAX_SENTENCE_CHARS",
    "PRIORITY",
    "Sentences",
    "Statement",
    "StatementKind",
    "Subjects",
    "closed",
    "latest",
    "names_of",
    "statements",
    "subject_of",
    "superseded",
    "supersedes",
    "value_set",
    "values_of",
]

#: Higher survives longer when the ledger has no room for everything.
PRIORITY: Final[dict[str, int]] = {"rule": 3, "fact": 2, "goal": 1}
#: A sentence longer than this is a paste, not a statement: it is kept only up to here.
MAX_SENTENCE_CHARS: Final = 400
#: Only the first this many characters of a message are read (a pasted log is not a rule).
_MAX_SCAN: Final = 20_000
#: Sentences whose reading is kept (``_read``), and messages whose statements are: bounded
#: (sentences are at most ``MAX_SENTENCE_CHARS``, messages are read up to ``_MAX_SCAN``).
_READINGS: Final = 16_384
_MESSAGES: Final = 1_024

_SENTENCE: Final = re.compile(r"(?:[^\n.!?]|[.!?](?=[\w/\\]))+(?:[.!?]+|\n|$)")
_WORD: Final = re.compile(r"[a-z]{3,}")
#: Prohibitions add up ("never use port A for job 2", "never use port B for job 3"): one
#: replaces another only when it says it changes something.
_PROHIBITION: Final = re.compile(
    r"^\W*(?:\w+[,:]\s+)?(?:never|don'?t|do not|must not|mustn'?t|avoid|no)\b", re.IGNORECASE
)


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words that say a value changed; they are not part of the subject.
_CHANGE: Final = _word_set(
    "now update updated change changed instead actually correction rather new newer moved "
    "raise raised lower lowered increase increased decrease decreased switch switched bump "
    "bumped longer scratch forget revised revise set reset make made"
)
_STOP: Final = _word_set(
    "the and for are was were our your you this that with from into its has have had will "
    "shall been being not but any all can per let lets please also just then than there here "
    "what which who whom when where how why about over under again should would could must "
    "never always only don"
)
#: Short capitals that name a thing ("EU", "Plan B", "QA"), and those that do not.
#: A word in capitals names a thing ("EU", "Plan A", a code such as "PBUDH"): two sentences
#: with different ones are about two things, however alike the rest reads.
_SHORT_CAPS: Final = re.compile(r"\b[A-Z][A-Z0-9]{0,15}\b")
_NOT_NAMES: Final = frozenset({"I", "OK", "AM", "PM"})
#: A noun and its number in front of a verb: "Job 1 must", "Room 4 is", "Plan 2 costs".
_NUMBERED: Final = re.compile(
    r"\b([A-Za-z]{2,}) (\d{1,3}|[A-Z])\b(?= (?:must|is|are|was|were|should|shall|will|can|"
    r"cannot|may|costs?|has|have|needs?|uses?|runs?|gets?|goes|only|never|always)\b)"
)
#: Our own cut markers (a message cut to fit keeps one where its text went, long or short):
#: never a sentence of the person's, whatever number they name.
_CUT_MARK: Final = re.compile(r"\[… ?[\d,]+ (?:characters )?cut\b[^\]\n]*…\]")


@attrs.frozen(slots=True)
class Statement:
    """One sentence the person wrote, verbatim, with its kind (its priority)."""

    kind: StatementKind
    text: str

    @property
    def priority(self) -> int:
        return PRIORITY[self.kind]


def _bare(text: str, found: Sequence[re.Match[str]] | None = None) -> str:
    """``text`` with its values read as spaces (``found``: its values, when already read from
    ``_unpasted(text)``)."""
    text = _unpasted(text)
    pieces: list[str] = []
    pos = 0
    for m in _values(text) if found is None else found:
        pieces += (text[pos : m.start()], " ")
        pos = m.end()
    return "".join(pieces) + text[pos:]


def subject_of(text: str, bare: str | None = None) -> frozenset[str]:
    """The words a sentence is about once its values and change-words are taken out."""
    bare = (_bare(text) if bare is None else bare).lower()
    return frozenset(w for w in _WORD.findall(bare) if w not in _STOP and w not in _CHANGE)


def names_of(text: str, bare: str | None = None) -> frozenset[str]:
    """What names *which* thing a sentence is about, beyond its words: words in capitals
    ("EU", "US", "Plan A", a code such as "PBUDH") and a number right after the noun a verb
    follows ("Job 1 must ...", "Room 4 is ..."). Two sentences that differ here are about two
    things, whatever their other words share."""
    bare = _bare(text) if bare is None else bare
    out = {f"={m.group(1).lower()} {m.group(2)}" for m in _NUMBERED.finditer(text)}
    for m in _SHORT_CAPS.finditer(bare):
        name = m.group(0)
        if name in _NOT_NAMES or (name == "A" and not bare[: m.start()].strip(" \t\"'([")):
            continue  # a pronoun, "OK", or the article opening the sentence
        out.add(name)
    return frozenset(out)


def _changes(text: str) -> bool:
    return any(w in _CHANGE for w in _WORD.findall(text.lower()))


@attrs.frozen(slots=True)
class _Reading:
    """What [`supersedes`][] reads of one sentence."""

    values: frozenset[str]
    subject: frozenset[str]
    names: frozenset[str]
    changes: bool
    prohibition: bool


@functools.lru_cache(maxsize=_READINGS)
def _read(text: str) -> _Reading:
    """One sentence read, kept by its text for as long as it is among the last
    ``_READINGS`` read: a run in a loop meets the same sentences again (the person's
    messages still in view, the ledger it carries), so reading them is paid once. Its values
    are found once: they are the values, and what the subject and the names are read from
    once they are taken out."""
    found = list(_values(_unpasted(text)))
    bare = _bare(text, found)
    return _Reading(
        frozenset(m.group(0).strip(".,") for m in found),  # as ``values_of`` reads them
        subject_of(text, bare),
        names_of(text, bare),
        _changes(text),
        _PROHIBITION.match(text) is not None,
    )


def value_set(text: str) -> frozenset[str]:
    """The values of ``text`` ([`values_of`][]) as a set, from its kept reading."""
    return _read(text).values


def _supersedes(new: _Reading, old: _Reading) -> bool:
    a, b = new.subject, old.subject
    if not a or not b or a.isdisjoint(b):
        return False  # the cheapest answer first: most pairs share no word of their subject
    if new.names != old.names:
        return False  # "Job 1" and "Job 2", "the EU report" and "the US report": two things
    new_values, old_values = new.values, old.values
    if not new_values or not old_values or new_values == old_values:
        return False
    replaced = len(old_values - new_values)
    if not replaced:
        return False  # nothing of the older value is replaced: it adds, it does not change
    if replaced > 1:
        return False  # which of them names the thing and which is its value? Keep both.
    if not new.changes:
        # Nothing says it changes: only the same whole subject is the same thing ("the alpha
        # database host" and "the delta database host" are two hosts), and a prohibition
        # adds to the earlier ones ("never deploy on Friday", "never deploy on Monday").
        return a == b and not old.prohibition
    shared = len(a & b)
    jaccard = shared / len(a | b)
    return jaccard >= 0.6 or (shared >= 2 and (jaccard >= 0.4 or shared / len(b) >= 0.75))


def supersedes(newer: str, older: str) -> bool:
    """Whether ``newer`` states a new value for the subject ``older`` was about.

    Both must carry a value, the newer must replace exactly one of the older's values (two or
    more: it may be about another thing, so both are kept), they must name the same things
    ([`names_of`][]), and the subjects must be the same: the same words, or, when the newer
    sentence says it changes something ("now", "instead", "update", ...), nearly the same
    (Jaccard >= 0.6) or a good share of them (>= 0.4, at least two words). Prohibitions
    accumulate: a "never ..." is replaced only by a sentence that says it changes something.
    """
    return _supersedes(_read(newer), _read(older))


class Sentences:
    """[`supersedes`][] over many pairs, each sentence read once (the readings are kept
    across calls by their text, see [`superseded`][])."""

    def supersedes(self, newer: str, older: str) -> bool:
        """As [`supersedes`][]."""
        return _supersedes(_read(newer), _read(older))


class Subjects:
    """Sentences indexed by the words of their subjects: which of them a newer sentence
    supersedes, comparing it only with those that share a word of its subject (a
    supersession needs one), so a list of hundreds is not read whole for every newcomer.
    A sentence may be added more than once; it stays until removed as often."""

    __slots__ = ("_by_word", "_count", "_size")

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self._by_word: dict[str, dict[str, _Reading]] = {}
        self._count: dict[str, int] = {}
        self._size = 0
        for text in texts:
            self.add(text)

    def __len__(self) -> int:
        return self._size

    def add(self, text: str) -> None:
        self._size += 1
        count = self._count.get(text, 0)
        self._count[text] = count + 1
        if count:
            return
        reading = _read(text)
        if reading.values:  # a sentence without a value is never superseded: no need to find it
            for word in reading.subject:
                self._by_word.setdefault(word, {})[text] = reading

    def remove(self, text: str) -> None:
        count = self._count.pop(text, 0)
        self._size -= min(count, 1)
        if count > 1:
            self._count[text] = count - 1
            return
        for word in _read(text).subject:
            held = self._by_word.get(word)
            if held is not None:
                held.pop(text, None)
                if not held:
                    del self._by_word[word]

    def superseded_by(self, newer: str, into: set[str] | None = None) -> set[str]:
        """The sentences held that ``newer`` supersedes (added to ``into``).

        Walking the index counts the words each held sentence shares with ``newer``; only a
        pair whose count could pass (Jaccard >= 0.4, or three quarters of the older subject)
        is read further, so a common word costs a count, not a comparison."""
        out = set() if into is None else into
        new = _read(newer)
        a = len(new.subject)
        if not new.values or not a:
            return out
        by_word = self._by_word
        held = [by_word[w] for w in new.subject if w in by_word]
        if not held:  # most sentences share no word with those held: nothing to count
            return out
        shared = Counter(chain.from_iterable(held))
        for text, n in shared.items():
            if text in out:
                continue
            old = _read(text)
            b = len(old.subject)
            if (n / (a + b - n) >= 0.4 or n / b >= 0.75) and _supersedes(new, old):
                out.add(text)
        return out


def superseded(newer: Iterable[str], older: Iterable[str]) -> set[str]:
    """The sentences of ``older`` that some sentence of ``newer`` supersedes: the same answer
    as asking [`supersedes`][] of every pair, in time linear in the two lists ([`Subjects`][]).
    Every sentence is read once, and the readings are kept between calls (``_read``)."""
    index = Subjects(older)
    out: set[str] = set()
    if index._by_word:
        for text in newer:
            index.superseded_by(text, out)
    return out


def statements(text: str, seen: set[str] | None = None) -> list[Statement]:
    """The sentences of ``text`` worth carrying, verbatim and in order; filler and sentences
    already in ``seen`` (normalised; updated here) are left out."""
    seen = set() if seen is None else seen
    out: list[Statement] = []
    for key, statement in _read_message(text[:_MAX_SCAN]):
        if key not in seen:
            seen.add(key)
            out.append(statement)
    return out


@functools.lru_cache(maxsize=_MESSAGES)
def _read_message(text: str) -> tuple[tuple[str, Statement], ...]:
    """Every sentence of ``text`` worth carrying, with its normalised key (repeats included:
    what is new depends on what the caller has seen). Kept by the text for as long as it is
    among the last ``_MESSAGES`` read: a run in a loop reads the same messages again, and
    a changed message is a new text, read again."""
    out: list[tuple[str, Statement]] = []
    if "[…" in text:
        text = _CUT_MARK.sub("\n", text)
    for match in _SENTENCE.finditer(text):
        sentence = " ".join(match.group(0).split())
        if len(sentence) < 4:
            continue
        kind = _kind(sentence)
        if kind is None:
            continue
        key = sentence.lower().rstrip(".!? ")
        if len(sentence) > MAX_SENTENCE_CHARS:
            sentence = sentence[: MAX_SENTENCE_CHARS - 1] + "…"
        out.append((key, Statement(kind, sentence)))
    return tuple(out)


def latest(items: Iterable[Statement]) -> tuple[list[Statement], list[tuple[Statement, str]]]:
    """``items`` (oldest first) with every statement a later one supersedes taken out; and the
    pairs ``(stale, by)`` taken out, for the record.

    The answer is kept for the last few lists asked about or said to be closed
    ([`closed`][]): a loop carries the same ledger from one run to the next, and a ledger
    read back from a note is checked again before it is trusted."""
    key = tuple(items)
    found = _LATEST.get(key)
    if found is None:
        found = _latest(key)
        _keep(key, found)
    return list(found[0]), list(found[1])


def closed(items: Sequence[Statement]) -> None:
    """Say that no statement of ``items`` supersedes an earlier one (a ledger's own list, as
    [`latest`][] left it): [`latest`][] then answers for it without reading it again."""
    key = tuple(items)
    _keep(key, (key, ()))


_Latest = tuple[tuple[Statement, ...], tuple[tuple[Statement, str], ...]]
_LATEST: dict[tuple[Statement, ...], _Latest] = {}


def _keep(key: tuple[Statement, ...], answer: _Latest) -> None:
    _LATEST.pop(key, None)
    _LATEST[key] = answer
    while len(_LATEST) > 64:
        try:
            del _LATEST[next(iter(_LATEST))]
        except (KeyError, RuntimeError, StopIteration):  # another thread took it first
            break


def _latest(items: tuple[Statement, ...]) -> _Latest:
    kept: list[Statement] = []
    gone: list[tuple[Statement, str]] = []
    index = Subjects()
    for item in items:
        hit = index.superseded_by(item.text)
        if hit:
            still: list[Statement] = []
            for old in kept:
                if old.text in hit:
                    gone.append((old, item.text))
                    index.remove(old.text)
                else:
                    still.append(old)
            kept = still
        kept.append(item)
        index.add(item.text)
    return tuple(kept), tuple(gone)
