"""A sentence's kind (rule, fact, goal) is read with shortcuts: whether it holds a value is
asked of each alternative of the value pattern on its own, only where the text holds what
that alternative needs, and an ASCII sentence is searched lower-cased. Every shortcut must
answer exactly as the plain reading does, whatever the text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.memory import words
from compaction.memory._kinds import _FILLER, _GOAL, _RULE, _RULE_WITH_VALUE, kind_of
from compaction.memory._values import _unpasted, _values, has_value
from compaction.memory.words import statements


def _plain_kind(sentence: str) -> str | None:
    """The kind read the plain way: every pattern case-blind, the first value looked for."""
    if _FILLER.match(sentence):
        return None
    if _RULE.search(sentence):
        return "rule"
    found = next(_values(_unpasted(sentence)), None) is not None
    if found and _RULE_WITH_VALUE.search(sentence):
        return "rule"
    if found:
        return "fact"
    if _GOAL.search(sentence):
        return "goal"
    return None


#: What the value alternatives turn on (digits, slashes, dots, quotes, capitals after a
#: lower-case letter or a clause, "@", "http"), the words the kinds do, and letters that
#: case-folding treats specially (the long s, the Kelvin sign, the dotted capital I).
_PIECES = [
    *"aZ bQ/.:,;@'\"`-_$7é",
    "\u017f",
    "\u212a",
    "\u0130",
    " the ",
    " Plan ",
    " PBUDH",
    "http://x",
    "x.py",
    "db-7.internal",
    "camelCase",
    "never",
    "NEVER",
    "mu\u017ft",
    "keep",
    "goal",
    "Done",
    "ok",
    "v1.2",
    "a/b",
    "x" * 210,
]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=10).map("".join))
def test_has_value_answers_as_the_first_value_found(text: str) -> None:
    assert has_value(text) == (next(_values(text), None) is not None)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=60))
def test_has_value_on_any_text(text: str) -> None:
    assert has_value(text) == (next(_values(text), None) is not None)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=10).map("".join))
def test_kind_answers_as_the_plain_reading(sentence: str) -> None:
    assert kind_of(sentence) == _plain_kind(sentence)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=60))
def test_kind_on_any_text(sentence: str) -> None:
    assert kind_of(sentence) == _plain_kind(sentence)


def test_kinds_of_the_persons_sentences() -> None:
    said = statements(
        "Never touch the billing module. The staging host is db-7.internal. Our goal is to "
        "ship the migration. Thanks! Keep it under 200 words. Use the \u017ftaging branch."
    )
    assert [(s.kind, s.text) for s in said] == [
        ("rule", "Never touch the billing module."),
        ("fact", "The staging host is db-7.internal."),
        ("goal", "Our goal is to ship the migration."),
        ("rule", "Keep it under 200 words."),
    ]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=10).map("".join) | st.text(max_size=60))
def test_a_sentence_read_once_reads_as_its_parts_do(sentence: str) -> None:
    # What supersession compares (values, subject, names) is read from one pass over the
    # sentence's values: the same as each public reader gives on its own.
    words._read.cache_clear()
    got = words._read(sentence)
    assert got.values == frozenset(words.values_of(sentence))
    assert got.subject == words.subject_of(sentence)
    assert got.names == words.names_of(sentence)
