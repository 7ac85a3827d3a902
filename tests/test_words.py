"""The person's words: values read in linear time with the same answers, and "latest value
wins" only for one subject."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import ApproximateCounter, assistant, default_pipeline, system, user
from compaction.memory._values import _MAX_RUN, _VALUE, _values
from compaction.memory.ledger import MAX_FACTS, MAX_STATEMENTS, Ledger
from compaction.memory.words import (
    Statement,
    latest,
    statements,
    subject_of,
    superseded,
    supersedes,
    values_of,
)

# The value pattern as first written (each alternative the plain statement of what it
# matches): the linear one must read the same values wherever no run is a paste.
_REFERENCE = re.compile(
    r"[$€£¥]?\d[\d,._:/-]*\d?(?:%|[a-zA-Z]{1,3}\b)?"
    r"|\b[A-Za-z]+[-_][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*\b"
    r"|\b[A-Z0-9]*[A-Z][A-Z0-9]*\d[A-Z0-9]*\b|\b[A-Z0-9]*\d[A-Z0-9]*[A-Z][A-Z0-9]*\b"
    + _VALUE.pattern.split(r"[A-Z0-9]+\b", 2)[2]
)

# Characters that reach every alternative's edges: letters of both cases, digits, the
# separators slugs, paths and versions use, a non-ASCII letter (a word character that is not
# in any class), quotes, an at sign, spaces.
_ALPHABET = "aZbY09-_./@é :,'\"`$%"


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=60))
def test_the_linear_value_pattern_reads_what_the_plain_one_reads(text):
    assert [m.span() for m in _values(text)] == [m.span() for m in _REFERENCE.finditer(text)]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["ab", "C", "7", "-", "_", "/", ".", "é", " "]), max_size=40))
def test_the_linear_value_pattern_agrees_on_slugs_codes_and_paths(parts):
    text = "".join(parts)
    assert [m.group(0) for m in _values(text)] == [m.group(0) for m in _REFERENCE.finditer(text)]


def test_a_pasted_run_is_no_value_and_no_subject_but_a_long_url_is_a_value():
    blob = "-".join(["alpha", "beta", "gamma"] * 400)
    assert values_of(f"Batch 3 holds {blob}") == ("3",)
    assert "alpha" not in subject_of(f"Here is batch 3: {blob}")
    url = "https://example.org/" + "x" * (_MAX_RUN * 2)
    assert values_of(f"Fetch {url} now") == (url,)
    # a run just at the bound is still read
    slug = ("ab-" * 70)[: _MAX_RUN - 2] + "-9"
    assert len(slug) == _MAX_RUN and values_of(slug) == (slug,)


def test_a_pasted_blob_leaves_the_rule_beside_it():
    blob = "-".join(["alpha", "beta"] * 2_000)
    said = statements(f"Never delete ids starting with ab. Batch: {blob}")
    assert [s.text for s in said][:1] == ["Never delete ids starting with ab."]


# Sentences over a few subjects and values, so that pairs share words, values and change-words
# in every combination the rule distinguishes.
_SENTENCES = st.builds(
    lambda lead, words, value: " ".join([lead, *words, value]).strip() + ".",
    st.sampled_from(["", "Now", "Update:", "Never", "Never now", "Instead"]),
    st.lists(
        st.sampled_from(["budget", "cap", "staging", "prod", "host", "port", "job", "report"]),
        min_size=0,
        max_size=4,
    ),
    st.sampled_from(["", "$4,700", "$6,200", "db-7731", "db-9912", "8001", "ann@corp.example"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SENTENCES, max_size=12), st.lists(_SENTENCES, max_size=12))
def test_the_index_finds_what_every_pair_finds(newer, older):
    assert superseded(newer, older) == {o for o in older if any(supersedes(n, o) for n in newer)}


@settings(max_examples=300, deadline=None)
@given(st.lists(_SENTENCES, max_size=16))
def test_latest_by_index_is_latest_pair_by_pair(texts):
    items = [Statement("fact", t) for t in texts]
    kept: list[Statement] = []
    gone: list[tuple[Statement, str]] = []
    for item in items:
        gone += [(old, item.text) for old in kept if supersedes(item.text, old.text)]
        kept = [old for old in kept if not supersedes(item.text, old.text)] + [item]
    assert latest(items) == (kept, gone)
    ledger = Ledger()
    for item in items:
        ledger._state(item)
    assert ledger.said == kept[-MAX_STATEMENTS:]
    assert ledger.stale == [(old.text, by) for old, by in gone][-MAX_FACTS:]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Job 1 must use port 8001.", "Job 2 must use port 8002."),
        ("Job 1 must use port 8001.", "Job 2 must now use port 8001."),
        ("Send the EU report to ann@corp.example.", "Send the US report to bob@corp.example."),
        ("Send the EU report to ann@corp.example.", "Now send the US report to bob@corp.example."),
        ("Plan A costs $300.", "Plan B costs $900."),
        ("Room 4 is booked for Monday.", "Room 7 is booked for Tuesday."),
        ("Ship v1.2 to Acme.", "Ship v1.3 to Globex."),
        ("Rule 3: never use port 1003.", "Rule 4: never use port 1004."),
        (
            "FACT: The alpha database host is db-QWXZK.internal.",
            "FACT: The delta database host is db-ZKRTP.internal.",
        ),
        (
            "GOAL: Ship the DUUWG migration by 2027-02-12.",
            "GOAL: Ship the YCUBV migration by 2027-08-18.",
        ),
        ("Never deploy on Friday.", "Never deploy on Monday."),
        (
            "RULE: Never run the deploy script without the phrase XQKYN.",
            "RULE: Never run the deploy script without the phrase NNNND.",
        ),
    ],
)
def test_two_things_that_differ_in_a_short_name_or_number_are_two_subjects(older, newer):
    assert not supersedes(newer, older)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Job 1 must use port 8001.", "Update: job 1 must use port 8011 now."),
        ("Send the EU report to ann@corp.example.", "Now send the EU report to bob@corp.example."),
        ("Plan A costs $300.", "Correction: plan A costs $350."),
        ("A cap of $300 applies to the budget.", "Update: the budget cap is now $400."),
        (
            "FACT: The staging database host is db-UNBHB.internal.",
            "FACT: The staging database host is db-MVRUQ.internal.",
        ),
        (
            "PREFERENCE: End every answer with the ticket id EPTJY.",
            "PREFERENCE: End every answer with the ticket id CFEHX.",
        ),
        ("LIMIT: The budget for this work is $415.", "LIMIT: The budget for this work is $605."),
    ],
)
def test_the_same_named_thing_with_a_new_value_is_still_superseded(older, newer):
    assert supersedes(newer, older)


def test_both_rules_about_two_jobs_reach_the_model():
    said = {2: "Job 1 must use port 8001.", 6: "Job 2 must use port 8002."}
    messages = [system("You are an ops assistant."), user("Help me run the nightly jobs.")]
    for turn in range(30):
        messages += [user(said.get(turn, "Interesting, go on.")), assistant("A long answer. " * 30)]
    result = default_pipeline(counter=ApproximateCounter()).compact(messages, target=900)
    sent = "\n".join(m.content for m in result.messages)
    assert "port 8001" in sent and "port 8002" in sent


@settings(max_examples=200, deadline=None)
@given(st.lists(_SENTENCES, max_size=16), st.lists(_SENTENCES, max_size=4))
def test_a_note_merged_into_a_new_ledger_reads_as_its_statements_one_by_one(texts, more):
    record = {"facts": {"said": [("fact", t) for t in texts]}, "replaces": []}
    merged = Ledger()
    merged.merge(record)
    one_by_one = Ledger()
    for t in texts:  # what absorbing a ledger was: each new sentence stated in turn
        key = t.lower().rstrip(".!? ")
        if key not in one_by_one.seen:
            one_by_one.seen.add(key)
            one_by_one._state(Statement("fact", t))
    assert (merged.said, merged.stale) == (one_by_one.said, one_by_one.stale)
    for t in more:  # and it goes on as the other would
        merged._state(Statement("rule", t))
        one_by_one._state(Statement("rule", t))
    assert (merged.said, merged.stale) == (one_by_one.said, one_by_one.stale)


@pytest.mark.parametrize(
    "marker",
    [
        "[…145 cut…]",
        "[…1,145 cut…]",
        "\n[… 1,145 characters cut to fit the context window; recall id sha1:f42cf6b1 …]\n",
        "\n[… 612 characters cut to fit the context window; recall id sha1:ab12; it reported "
        "ValueError …]\n",
    ],
)
def test_a_cut_marker_is_never_a_statement_of_the_persons(marker: str) -> None:
    """A message cut to fit carries our marker where its text went: the number in it is not
    a value the person gave, and the sentences around it are read as they were."""
    said = "We're aiming for test coverage of 77.1% by the end."
    assert statements(said + " " + marker) == statements(said)
    assert statements(marker) == []
    assert statements(marker + "The budget cap is $5,000.") == [
        Statement("rule", "The budget cap is $5,000.")
    ]
