"""The fact readers' shortcuts find exactly what their regexes find.

:func:`compaction.memory.facts.failing_tests` finds failing lines from their keywords by substring
search and :func:`compaction.memory.facts.exit_code` skips output whose head cannot hold an exit
status: both run on every tool output a layer clears or drops, so they must be cheap, and a
shortcut that misses a failing test id or an exit code would silently thin the ledger. Each is
checked here against the plain regex reading it stands for, on generated text built from the
pieces that matter (keywords as words and inside words, line breaks, the case forms the
case-blind regex accepts).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.memory.facts import _EXIT, _FAILED_WORD, _NODE_ID, exit_code, failing_tests

_PIECES = [
    "FAIL",
    "FAILED",
    "ERROR",
    "FAILURE",
    "xFAIL",
    "ERROR_",
    " ",
    "\n",
    "_",
    "\u00e9",
    "tests/test_a.py::test_b",
    "a.py::t[1]",
    "FAIL: test_y (a.b)",
    "<returncode>1</returncode>",
    "Exit code 2",
    "EXIT STATUS: 3",
    "exited with code -1",
    "ex\u0131t code 5",  # the dotless i the case-blind regex takes for "i"
    "EX\u0130T code 4",  # and the dotted capital I
    "x",
    "<",
    "e",
    "9",
]


def _keyword_reference(text: str) -> list[str]:
    """Node ids on every line holding a keyword as a word, by the regex alone."""
    found: dict[str, None] = {}
    end = -1
    for keyword in _FAILED_WORD.finditer(text):
        if keyword.start() < end:
            continue
        start = text.rfind("\n", 0, keyword.start()) + 1
        end = text.find("\n", keyword.end())
        if end < 0:
            end = len(text)
        for node in _NODE_ID.findall(text, start, end):
            found[node] = None
    return list(found)


#: Lines of pieces: several failing lines in one output is the case that matters.
_LINE = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)
_TEXT = st.lists(_LINE, max_size=6).map("\n".join)


@settings(max_examples=1500, deadline=None)
@given(_TEXT)
def test_failing_lines_are_the_ones_the_keyword_regex_finds(text: str) -> None:
    expected = _keyword_reference(text)
    got = failing_tests(text)
    # The ids on keyword lines (pytest node ids, the only ones with "::"), in the same order;
    # the other runners' ids are found by patterns of their own.
    assert [t for t in got if "::" in t] == expected


@settings(max_examples=1500, deadline=None)
@given(_TEXT)
def test_exit_code_is_what_the_regex_reads_in_the_head(text: str) -> None:
    match = _EXIT.search(text[:300])
    expected = None if match is None else int(match.group(1) or match.group(2))
    assert exit_code(text) == expected
