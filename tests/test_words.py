"""The person's words: values read in linear time with the same answers, and "latest value
wins" only for one subject."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.memory.words import (
    _MAX_RUN,
    _VALUE,
    _values,
    statements,
    subject_of,
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
