"""The failing-test reader reads each character a bounded number of times.

:func:`compaction.memory.facts.failing_tests` runs on every tool output a layer clears or drops,
and tool output is hostile input: one long line (a JSON log line, a base64 payload) holding
``ERROR``, or a text of blank lines after an ExUnit header, made the plain regexes try every
position and read the rest of the run from each (a 60,000-character line took 15 s per
compaction). The scan that replaced them is held here to the regex it stands for, match for
match, on texts built from the pieces that matter, long runs included; and its growth is
checked as a ratio, not a time: four times the hostile text costs about four times as much
CPU, where the regexes cost sixteen times as much.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.memory.facts import _EXUNIT, _NODE_ID, _node_ids, failing_tests

_PIECES = [
    ".py::",
    ".py",
    "::",
    ".",
    "/",
    "-",
    "a",
    "_",
    "é",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "=",
    "+",
    " ",
    "\n",
    "tests/test_a.py::test_b[1-2]",
    "x.py::",
    "p",
    "y",
]


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=30).map("".join),
    st.integers(0, 8),
    st.integers(0, 8),
)
def test_the_node_id_scan_finds_what_the_regex_finds(text: str, lo: int, cut: int) -> None:
    start = min(lo, len(text))
    end = max(start, len(text) - cut)
    assert _node_ids(text, start, end) == _NODE_ID.findall(text, start, end)


@pytest.mark.parametrize(
    "text",
    [
        "FAILED " + "a" * 3000 + ".py::" + "(" * 3000 + "t",
        "ERROR " + "a/b." * 800 + "py::x" + "." * 500,
        "FAILED " + ("q" * 50 + ".py::" + ":" * 20 + " ") * 40,
        ".py::" * 600 + "a",
        "ERROR " + "x.py::y" * 400,
    ],
)
def test_the_node_id_scan_agrees_on_long_runs(text: str) -> None:
    assert _node_ids(text, 0, len(text)) == _NODE_ID.findall(text)


_EXUNIT_PIECES = [" ", "\t", "\n", "1) test x (M)", "test/a_test.exs:9", "  ", "2", ") test "]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_EXUNIT_PIECES), max_size=24).map("".join))
def test_exunit_ids_are_read_from_indented_numbered_lines(text: str) -> None:
    # The regex as it was, but with the indent read within its line: the old ``^\s+`` took
    # a run of blank lines from each of them. Both find the same on what ExUnit prints
    # (a numbered line is always indented).
    plain = re.compile(r"^[ \t]+\d+\) test .*\n\s+([\w./-]+\.exs:\d+)", re.MULTILINE)
    assert _EXUNIT.findall(text) == plain.findall(text)


def _cost(scan: Callable[[], object]) -> float:
    """The least CPU time of a few runs of ``scan`` (the least is what the work costs: any
    more is the machine's)."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        scan()
        best = min(best, time.process_time() - started)
    return best


# Each hostile text at a size and four times that size. A scan linear in the text costs about
# four times as much at the larger size; the old regexes cost sixteen times as much.
_HOSTILE: dict[str, Callable[[int], str]] = {
    "one long line holding ERROR": lambda n: '{"level": "ERROR", "payload": "' + "QUJD" * (n // 4),
    "a FAIL line of dots before .py::": lambda n: "FAILED " + "." * n + "py::",
    "a Django header on a long word": lambda n: "FAIL: test" + "a" * n,
    "blank lines after an ExUnit header": lambda n: "  1) test x (M)\n" + "\n" * n,
}


@pytest.mark.parametrize("name", sorted(_HOSTILE))
def test_failing_tests_grows_linearly_on_hostile_text(name: str) -> None:
    build = _HOSTILE[name]
    small, large = build(5_000), build(20_000)
    assert failing_tests(small) == failing_tests(large) == []
    # Enough calls a run to last some milliseconds, the least of three runs: the figures are
    # CPU time of this process alone, well above the clock's grain, and the bound sits
    # halfway (in ratio) between the linear fourfold and the quadratic sixteenfold.
    once = _cost(lambda: failing_tests(small))
    rounds = min(max(int(0.02 / max(once, 1e-6)), 1), 500)
    grows = _cost(lambda: [failing_tests(large) for _ in range(rounds)]) / max(
        _cost(lambda: [failing_tests(small) for _ in range(rounds)]), 1e-9
    )
    assert grows < 8.0, f"{name}: 4x the text cost {grows:.1f}x the time"
