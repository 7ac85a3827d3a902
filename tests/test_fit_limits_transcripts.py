"""Two limits on every real transcript (issue 19.4): protected content is cut only when the
request could not fit the window with it whole, and no request is ever over the window.

Replay (window = half the transcript, compact at 70% down to 40%, the default ladder through
the trigger) and direct runs of the default ladder at 25/40/60% of the size with a limit of
twice the target: the original task and the system prompt are cut only in requests that would
be over the limit with them whole. Whether a message is a cut of the task is judged here from
the text (its head is the task's head), not from the library's own records alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from compaction import Message, TiktokenCounter, validate
from compaction.memory.transcript import message_ref, parse, provenance
from compaction.replay import replay
from compaction.trigger import Compactor, default_pipeline

from .conftest import TRANSCRIPTS, transcript_files

pytestmark = pytest.mark.transcripts

FILES = transcript_files()


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter()


@pytest.fixture(scope="module")
def transcripts() -> dict[str, tuple[Message, ...]]:
    if not FILES:
        pytest.skip(f"real transcripts not present at {TRANSCRIPTS}")
    formats = pytest.importorskip("compaction.formats")
    return {str(p.relative_to(TRANSCRIPTS)): tuple(formats.load(p).messages) for p in FILES}


def _protected(messages: Sequence[Message]) -> dict[str, Message]:
    """The system prompt and the task, by recall id."""
    t = parse(messages)
    found = {message_ref(m): m for m in messages[: t.system_end]}
    if t.task is not None:
        task = messages[t.groups[t.task].start]
        found[message_ref(task)] = task
    return found


def _cut_while_fitting(
    request: Sequence[Message], sent: int, limit: int, protected: dict[str, Message], counter
) -> list[str]:
    """The roles of protected messages cut in ``request`` although it would fit ``limit`` with
    them whole."""
    found = []
    for m in request:
        record = provenance(m) or {}
        if record.get("kind") != "truncated":
            continue
        for ref in record.get("replaces", ()):
            original = protected.get(ref)
            head = m.content.partition("\n[…")[0]
            if original is None or original.role != m.role or not original.content.startswith(head):
                continue  # another message with the same id (Claude Code shares them)
            if sent - counter.count(m) + counter.count(original) <= limit:
                found.append(m.role)
    return found


def test_replay_cuts_protected_content_only_when_the_window_demands_it(transcripts, counter):
    problems, calls = [], 0
    for name, messages in transcripts.items():
        total = counter.count_messages(messages)
        window = max(1, total // 2)
        compactor = Compactor(None, window, counter=counter)
        protected = _protected(messages)
        for record in replay(messages, compactor, keep_requests=True):
            calls += 1
            assert record.request is not None
            if record.tokens_sent > window:
                problems.append((name, record.call, "over the window", record.tokens_sent))
            cut = _cut_while_fitting(record.request, record.tokens_sent, window, protected, counter)
            if cut:
                problems.append((name, record.call, "cut while it fit", cut))
    assert problems == []
    assert calls > 1000  # the shared set replays about 1,600 calls


@pytest.mark.parametrize("fraction", [0.25, 0.4, 0.6])
def test_the_ladder_with_a_limit_keeps_protected_content_that_fits(fraction, transcripts, counter):
    problems = []
    for name, messages in transcripts.items():
        total = counter.count_messages(messages)
        target = max(int(total * fraction), 1)
        limit = max(target, min(2 * target, total - 1))
        result = default_pipeline(counter=counter).compact(messages, target=target, limit=limit)
        validate(result.messages)
        protected = _protected(messages)
        cut = _cut_while_fitting(result.messages, result.after, limit, protected, counter)
        if cut:
            problems.append((name, "cut while it fit", cut))
        system = counter.count_messages(messages[: parse(messages).system_end])
        if system <= limit // 2 and not result.within_limit:
            problems.append((name, "over the limit", result.after, limit))
    assert problems == []
