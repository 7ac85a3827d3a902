"""SlidingWindow's notes share their work within a rewrite and still say what a note written
on its own says.

The window writes a note for each cut it tries (growing cuts while the note does not fit,
then one chunk less when the last group is kept in part); the notes of one rewrite fold each
message in once. Each note must be exactly the note written from nothing for the same cut,
whatever cuts were written before it: reading a ledger for a note must not change it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import Message
from compaction.memory.transcript import parse
from compaction.strategies._window_notes import WindowNotes
from compaction.strategies.sliding_window import SlidingWindow
from compaction.tokens import ApproximateCounter, TiktokenCounter

from .conftest import transcript_files
from .conversations import conversations

COUNTER = ApproximateCounter()


def _cuts(n: int) -> list[int]:
    """Cuts in the order a rewrite asks them: growing, then one less, then every one again."""
    growing = list(range(1, n + 1))
    return growing + ([n - 1] if n > 1 else []) + growing


def _check(strategy: SlidingWindow, messages: list[Message], target: int, counter) -> int:
    transcript = (
        parse(messages, counter=counter, target=target)
        if strategy.window_size is None
        else parse(messages)
    )
    counts = [counter.count(m) for m in transcript.messages]
    chunks = strategy._chunks(transcript, counts)
    shared = WindowNotes(strategy.name, transcript, chunks, target)
    for p in _cuts(len(chunks)):
        alone = WindowNotes(strategy.name, transcript, chunks, target).note(p)
        assert shared.note(p) == alone, p
    # Cuts that jump, as a rewrite's do: most chunks at once, more, then shorter ones (each
    # folded on from the nearest cut written before it).
    n = len(chunks)
    jumping = WindowNotes(strategy.name, transcript, chunks, target)
    for p in (n // 2, n, max(n - 1, 0), min(n // 2 + 1, n), min(1, n)):
        alone = WindowNotes(strategy.name, transcript, chunks, target).note(p)
        assert jumping.note(p) == alone, p
    return n


def _said() -> list[Message]:
    """A chat where the person states rules and facts, one superseded later: the notes then
    carry statements, stale values and the person's later messages."""
    msgs = [Message("system", "You are helpful.")]
    lines = [
        "Please fix the login bug in src/auth.py.",
        "Never push to main. The budget is 300 EUR.",
        "Some filler about the weather today.",
        "The deadline is 2026-03-01 and we use Python 3.12.",
        "Actually, the budget is 500 EUR.",
        "Always run the tests before committing.",
        "More filler, nothing to keep here.",
        "What is the status?",
    ]
    for k, line in enumerate(lines):
        msgs.append(Message("user", line))
        msgs.append(Message("assistant", f"Noted ({k}). " + "details " * 40))
    return msgs


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.6])
def test_the_notes_of_a_chat_with_statements(fraction):
    msgs = _said()
    target = int(COUNTER.count_messages(msgs) * fraction)
    assert _check(SlidingWindow(), msgs, target, COUNTER) >= 3


def test_the_notes_of_a_fixed_window_whose_drop_order_is_not_the_conversations():
    # a fixed window gives the person's messages up last: not in the conversation's order
    msgs = _said()
    assert _check(SlidingWindow(3, note=True), msgs, 100, COUNTER) >= 3


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(max_turns=4, max_steps=4), st.floats(0.05, 0.9))
def test_the_notes_of_any_conversation(messages, fraction):
    target = max(1, int(COUNTER.count_messages(messages) * fraction))
    _check(SlidingWindow(), messages, target, COUNTER)


FILES = transcript_files()


@pytest.mark.transcripts
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_the_notes_of_real_transcripts(path):
    formats = pytest.importorskip("compaction.formats")
    messages = list(formats.load(path).messages)[:120]  # the quadratic check stays quick
    counter = TiktokenCounter()
    target = int(counter.count_messages(messages) * 0.4)
    _check(SlidingWindow(), messages, target, counter)
