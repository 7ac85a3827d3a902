"""The extractive summariser's fast scans find exactly what its patterns define.

The identifiers a summary keeps are defined by plain regular expressions (``_UUID``, ``_SHA``,
``_ISSUE``, ``_ERROR`` and the path tokens of ``_TOKEN``); the summariser finds them with
scans that skip most of a long text. These tests hold the scans to the definitions, match
for match and in order, on texts built to sit on every edge (word boundaries, hex runs of
every length, line separators of every kind) and on every real transcript.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.summarizers import extractive as E
from compaction.summarizers.base import render_transcript

from .conftest import transcript_files


def _defined(text: str) -> tuple[list[str], ...]:
    """What the patterns themselves find, scanned the plain way."""
    seen: dict[str, None] = {}
    for match in E._TOKEN.finditer(text):
        token = match.group().lstrip(E._LEAD).rstrip(E._TRAIL)
        if "/" in token and E._LETTER.search(token):
            seen.setdefault(token, None)
    return (
        list(seen),
        [m.group() for m in E._UUID.finditer(text)],
        [m.group() for m in E._SHA.finditer(text)],
        [m.group() for m in E._ISSUE.finditer(text)],
        [E._cut(line, 200) for line in text.splitlines() if E._ERROR.search(line)],
    )


def _scanned(text: str) -> tuple[list[str], ...]:
    return (
        E.extract_paths(text),
        E._uuids(text),
        E._shas(text),
        E._issues(text),
        [E._cut(line, 200) for line in E._error_lines(text)],
    )


# Pieces that meet every rule at its edge: hex groups of UUID and SHA lengths (upper and lower
# case), words glued to them, issue marks, error words, separators, every line ending
# ``str.splitlines`` knows, and a letter \w knows that ASCII does not.
_PIECES = st.one_of(
    st.sampled_from(
        [
            *"-#&/_ \t:.xGé٣()'`",
            *("\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"),
            *("Error", "ValueError", "Exception", "Traceback", "FAILED", "FAIL:", "fatal:"),
            *("error:", "panic:", "http://", "src/app.py", "a/b", "./"),
        ]
    ),
    st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=42),
    st.sampled_from(["12345678", "abcd", "1a2b", "0f0f0f0f0f0f", "deadbeef1"]),
    st.integers(0, 10**9).map(str),
)
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(_TEXTS)
def test_the_scans_find_what_the_patterns_define(text):
    assert _scanned(text) == _defined(text)


@given(st.text(max_size=200))
def test_the_scans_agree_on_any_text(text):
    assert _scanned(text) == _defined(text)


def test_a_uuid_next_to_an_invalid_candidate_is_found():
    # the tail of one candidate ("-1234-...") must not hide the UUID right after it
    text = "zz-1234-5678-9abc-def012345678 0123abcd-1234-5678-9abc-def012345678."
    assert E._uuids(text) == ["0123abcd-1234-5678-9abc-def012345678"] == _defined(text)[1]


FILES = transcript_files()


@pytest.mark.transcripts
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_the_scans_agree_on_real_transcripts(path):
    formats = pytest.importorskip("compaction.formats")
    messages = formats.load(path).messages
    for text in [render_transcript(messages), *(m.content for m in messages)]:
        assert _scanned(text) == _defined(text)
