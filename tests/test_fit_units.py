"""Fit cuts our notes by whole lines and the person's messages by whole sentences."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import ApproximateCounter, Message
from compaction.memory.transcript import mark
from compaction.strategies.fit import Fit

_LINES = [
    "- Never push to main without a review.",
    "- The memory limit is 7,466 MiB for the service.",
    "- We are pinned to version 9.39.91 of the ingest library.",
    "- The latency goal is 316 ms at the p99.",
]


def _note(lines: list[str]) -> Message:
    text = (
        "[17 earlier messages removed to fit the context window.\n"
        "The person said (verbatim, latest values):\n" + "\n".join(lines) + "\n"
        "Files read: src/a.py, src/b.py. Recall ids: sha1:aa … sha1:bb (17, all listed in meta).]"
    )
    return mark(Message("user", text), strategy="sliding_window", kind="note")


def _conversation(person: str) -> tuple[Message, ...]:
    return (
        Message("system", "You help."),
        Message("user", "Hi! Please help me with the project."),
        _note(_LINES),
        Message("assistant", "Sure, noted. " * 20),
        Message("user", person),
    )


@settings(max_examples=40, deadline=None)
@given(target=st.integers(min_value=40, max_value=260))
def test_notes_lose_whole_lines_and_the_person_whole_sentences(target: int) -> None:
    counter = ApproximateCounter()
    person = "Ok great. Thanks a lot for that. The budget cap is $4,700 for the launch."
    before = _conversation(person)
    out = Fit().rewrite(before, target=target, counter=counter)
    if out is None:
        return
    note = next(m for m in out if "earlier messages" in m.content or m is out[2])
    # every line of the note is the head of a line of the original, ending where a section of
    # the record ends (the closing bracket aside)
    original = before[2].content.rstrip("]").split("\n")
    for line in note.content.rstrip("]").split("\n"):
        if line:
            assert any(o == line or o.startswith(line + " ") for o in original)
    # the header stays, and the bracket that closes the note closes what is kept of it
    if note.content:
        assert note.content.startswith("[17 earlier messages removed")
        assert note.content.endswith("]")
    # a statement line is never cut in its value
    for line in note.content.split("\n"):
        if line.startswith("- "):
            assert line.rstrip("]") in _LINES
    # the person's newest message keeps whole sentences only: any value it shows is whole
    last = out[-1].content
    assert "$4,7" not in last or "$4,700" in last
    if sum(counter.count(m) for m in before[:2]) + 40 <= target:
        assert sum(counter.count(m) for m in out) <= target


def test_filler_and_the_assistant_go_before_the_persons_statements() -> None:
    counter = ApproximateCounter()
    person = "Ok great. Thanks a lot for that. The budget cap is $4,700 for the launch."
    before = _conversation(person)
    whole = sum(counter.count(m) for m in before)
    out = Fit().rewrite(before, target=whole - 60, counter=counter)
    assert out is not None
    assert "The budget cap is $4,700 for the launch." in out[-1].content
    assert all(line in out[2].content for line in _LINES)


def test_a_short_message_of_filler_gives_it_before_a_note_gives_a_rule() -> None:
    """The person's newest message, two filler sentences and a question, too short to keep
    the long cut marker within the pass's floor: its filler still goes (under the short
    marker) before the note gives a line of the person's rules and facts."""
    counter = ApproximateCounter()
    person = (
        "Approach layer option value team case issue explains process step. Approach design "
        "code report system report approach process way reads time answer. What are the "
        "trade-offs there?"
    )
    before = _conversation(person)
    question_only = Message("user", "What are the trade-offs there? […150 cut…]")
    target = (
        sum(counter.count(m) for m in before[:3])
        + counter.count(Message("assistant", ""))
        + counter.count(question_only)
        + 2
    )
    out = Fit().rewrite(before, target=target, counter=counter)
    assert out is not None
    assert sum(counter.count(m) for m in out) <= target
    assert all(line in out[2].content for line in _LINES)
    assert out[-1].content.startswith("What are the trade-offs there?")
