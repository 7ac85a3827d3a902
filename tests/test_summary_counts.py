"""A summary's header and its body count the same messages; "1 message", never "1 messages"."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import CompactionPipeline, SlidingWindow, ToolCall
from compaction.memory.transcript import is_note, provenance
from compaction.messages import assistant, system, tool, user
from compaction.strategies.summary import Summary
from compaction.summarizers import render_transcript
from compaction.tokens import ApproximateCounter

from .conversations import conversations

COUNTER = ApproximateCounter()
#: The original task: the first person-written user message, which the protection policy never
#: lets a summary take. Each conversation opens with it so the messages after it are what the
#: summary may replace, and the counts below are of those.
TASK = "the original task: keep the tests green"
HEADER = re.compile(r"^\[Summary of (\d+) earlier (message|messages)\]\n")
BODY = re.compile(r"^- Messages summarised: (\d+)$", re.MULTILINE)


def summaries(messages):
    return [m for m in messages if is_note(m) and provenance(m)["kind"] == "summary"]


def counts(message):
    header, body = HEADER.match(message.content), BODY.search(message.content)
    assert header is not None, message.content[:80]
    assert body is not None, message.content
    n = int(header.group(1))
    assert header.group(2) == ("message" if n == 1 else "messages")
    return n, int(body.group(1))


def test_a_step_whose_assistant_message_has_no_text_is_counted_once():
    # user, assistant (a tool call and no text), tool result: three messages, not two.
    msgs = [
        system("s"),
        user(TASK),
        user("old task " + "u" * 800),
        assistant("", [ToolCall("c1", "bash", {"command": "ls"})]),
        tool("c1", "o" * 800, name="bash"),
        user("new task"),
        assistant("on it"),
    ]
    result = (
        CompactionPipeline().run(Summary(min_tokens=0)).compact(msgs, target=80, counter=COUNTER)
    )
    [summary] = summaries(result.messages)
    assert counts(summary) == (3, 3)


def test_one_message_is_one_message():
    msgs = [
        system("s"),
        user(TASK),
        user("old task " + "u" * 900),
        user("new task"),
        assistant("ok"),
    ]
    result = (
        CompactionPipeline().run(Summary(min_tokens=0)).compact(msgs, target=60, counter=COUNTER)
    )
    [summary] = summaries(result.messages)
    assert summary.content.startswith("[Summary of 1 earlier message]\n")
    assert counts(summary) == (1, 1)


def test_notes_and_earlier_summaries_count_what_they_stand_for():
    msgs = [system("s"), user(TASK)]
    for t in range(6):
        msgs += [user(f"task {t} " + "u" * 1200), assistant(f"done {t} " + "a" * 1200)]
    msgs += [user("now this"), assistant("ok")]
    # The window drops the oldest turns behind a note; the summary then takes note and turns.
    # The protected task splits the history, so the first summary is of one turn's request
    # alone: the turns are long enough that even that summary is smaller than what it replaces.
    pipeline = CompactionPipeline().use(SlidingWindow, keep_steps=1).run(Summary(min_tokens=0))
    first = pipeline.compact(msgs, target=2000, counter=COUNTER).messages
    assert any(is_note(m) and provenance(m)["kind"] == "note" for m in first)
    second = (
        CompactionPipeline().run(Summary(min_tokens=0)).compact(first, target=120, counter=COUNTER)
    )
    stood = [counts(s) for s in summaries(second.messages)]
    assert stood and all(h == b for h, b in stood)
    # A summary absorbs the note only when that is smaller (rule 2): here the summary carries the
    # person's long requests verbatim, so the note may stay beside it. Either way every message
    # but the system prompt, the original task and the newest turn is accounted for, once.
    notes = [
        provenance(m) for m in second.messages if is_note(m) and provenance(m)["kind"] == "note"
    ]
    assert sum(h for h, _ in stood) + sum(p["dropped"] for p in notes) == len(msgs) - 4
    assert second.messages[:2] == tuple(msgs[:2])


def test_the_rendered_label_of_a_summary_says_how_many_messages_it_stands_for():
    msgs = [
        system("s"),
        user(TASK),
        user("a " * 400),
        assistant("b " * 400),
        user("new"),
        assistant("ok"),
    ]
    result = (
        CompactionPipeline().run(Summary(min_tokens=0)).compact(msgs, target=60, counter=COUNTER)
    )
    [summary] = summaries(result.messages)
    assert render_transcript([summary]).startswith("--- summary of 2 earlier messages ---\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(max_turns=6), st.sampled_from([0.2, 0.5, 0.8]))
def test_header_and_body_always_agree(msgs, fraction):
    pipeline = CompactionPipeline().run(Summary(min_tokens=0))
    total = COUNTER.count_messages(msgs)
    out = pipeline.compact(msgs, target=max(1, int(total * fraction)), counter=COUNTER).messages
    out = pipeline.compact(out, target=max(1, int(total * fraction / 2)), counter=COUNTER).messages
    for summary in summaries(out):
        if BODY.search(summary.content) is None and "The person said" in summary.content:
            # at a tight budget the prose gives way to the person's words (the ledger comes
            # first); the header still counts what it stands for
            assert HEADER.match(summary.content) is not None
            continue
        header, body = counts(summary)
        assert header == body
