"""What a live run reads once is read again when what it read changed: a ledger's current
statements follow its statements, its stale pairs and the later messages (a ledger changed
in place between two writings is read again), and the summary planner's reading of a message
follows the message's value (its text and its meta) and the counter that sizes it."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import ApproximateCounter, TiktokenCounter
from compaction.memory.ledger import Ledger, ledger_of
from compaction.memory.note import ledger_text, replaced_values
from compaction.memory.transcript import PROVENANCE_KEY
from compaction.memory.words import Statement
from compaction.messages import Message, user
from compaction.strategies._summary_said import said, said_sized


def _fresh(ledger: Ledger) -> Ledger:
    """A ledger with the same statements and pairs, never asked anything."""
    return pickle.loads(pickle.dumps(ledger))


def test_a_ledger_changed_in_place_between_two_writings_is_read_again() -> None:
    ledger = ledger_of([user("The port is 8080."), user("Deploy to staging.")])
    later = ["The port is 9090."]
    assert "8080" not in ledger_text(ledger, 10_000, later=later)
    # the statement the later message superseded is replaced in place by another subject
    ledger.said[0] = Statement("fact", "The region is eu-west-1.")
    text = ledger_text(ledger, 10_000, later=later)
    assert "eu-west-1" in text
    assert text == ledger_text(_fresh(ledger), 10_000, later=later)


def test_a_ledger_grown_between_two_writings_is_read_again() -> None:
    ledger = ledger_of([user("The port is 8080.")])
    later = ["The host is db-9."]
    assert "8080" in ledger_text(ledger, 10_000, later=later)
    ledger.add_message(user("The host is db-7."))
    text = ledger_text(ledger, 10_000, later=later)
    assert "db-7" not in text.split("(later")[0].replace("replaced earlier: db-7", "")
    assert "db-7" in replaced_values(ledger, later)
    assert text == ledger_text(_fresh(ledger), 10_000, later=later)


def test_other_stale_pairs_are_read_again() -> None:
    ledger = ledger_of(
        [user("The cap is $400."), user("Now the cap is $500."), user("Never edit setup.py.")]
    )
    later = ["Update: the cap is now $600."]
    first = ledger_text(ledger, 10_000, later=later)
    assert "$400" in first and "$500" in first  # both shown as replaced
    ledger.stale.clear()
    text = ledger_text(ledger, 10_000, later=later)
    assert "$400" not in text
    assert text == ledger_text(_fresh(ledger), 10_000, later=later)


_SAID = st.sampled_from(
    [
        "The port is 8080.",
        "The port is now 9090.",
        "Never edit setup.py.",
        "The budget cap is $4,700.",
        "Update: the budget cap is now $6,200.",
        "Use Python 3.11.",
        "Use Python 3.12 instead.",
        "Deploy to staging.",
        "ok",
    ]
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(_SAID, min_size=1, max_size=6),
    st.lists(st.tuples(st.lists(_SAID, max_size=3), st.lists(_SAID, max_size=3)), max_size=5),
    st.integers(min_value=40, max_value=2_000),
)
def test_a_ledger_asked_again_answers_as_a_fresh_one(
    first: list[str], steps: list[tuple[list[str], list[str]]], room: int
) -> None:
    """Whatever was asked before, and however the ledger grew since, every writing is the
    one a ledger never asked anything gives."""
    ledger = ledger_of([user(text) for text in first])
    for added, later in steps:
        for text in added:
            ledger.add_message(user(text))
        for max_chars in (room, room // 2, room):
            got = ledger_text(ledger, 10_000, later=later, max_chars=max_chars, bare=True)
            assert got == ledger_text(
                _fresh(ledger), 10_000, later=later, max_chars=max_chars, bare=True
            )
        assert replaced_values(ledger, later) == replaced_values(_fresh(ledger), later)


def _note(text: str) -> Message:
    record = {"kind": "note", "replaces": ["m1"], "facts": {"said": [["rule", text]]}}
    return Message("user", "[note]", meta={PROVENANCE_KEY: record})


def test_the_planner_reads_a_note_with_other_meta_again() -> None:
    one, two = _note("Never touch the database."), _note("Always run the tests first.")
    assert one.content == two.content and one != two
    assert [s.text for s in said(one)] == ["Never touch the database."]
    assert [s.text for s in said(two)] == ["Always run the tests first."]
    assert [s.text for s in said(one)] == ["Never touch the database."]


def test_the_planner_reads_a_changed_message_again() -> None:
    first = user("Never push to main.")
    assert [s.text for s in said(first)] == ["Never push to main."]
    assert said(first.replace(content="ok")) == ()
    # the same words, no longer the person's (a harness reminder): none of theirs
    assert said(Message("user", "Never push to main.", meta={"synthetic": True})) == ()


def test_statements_are_sized_by_the_counter_asked() -> None:
    message = user("Never push to main. The port is 8080.")
    approximate, tiktoken = ApproximateCounter(), TiktokenCounter()
    for counter in (approximate, tiktoken, approximate):
        assert said_sized(message, counter) == tuple(
            (s.kind, counter.count_text(s.text) + 1) for s in said(message)
        )


def test_the_ladder_s_comparison_reads_a_changed_message_again() -> None:
    from compaction._persons import shown

    before = [user("Never push to main."), user("Use port 8080.")]
    assert shown(before, before) == 2
    edited = [before[0], before[1].replace(content="ok")]
    assert shown(before, edited) == 1
    # a note that shows the statement as a ledger line, and one with other text
    shows = Message("user", "[note]\n- Use port 8080.", meta={PROVENANCE_KEY: {"kind": "note"}})
    assert shown(before, [before[0], shows]) == 2
    assert shown(before, [before[0], shows.replace(content="[note]")]) == 1
    assert shown([_note("Never touch the database.")], before) == 0
    assert shown([_note("Use port 8080.")], before) == 1


def test_a_ledger_reads_a_note_with_other_meta_again() -> None:
    one, two = _note("Never touch the database."), _note("Always run the tests first.")
    for _ in range(2):
        assert [s.text for s in ledger_of([one]).said] == ["Never touch the database."]
        assert [s.text for s in ledger_of([two]).said] == ["Always run the tests first."]


def test_a_layer_s_cached_read_follows_a_changed_call() -> None:
    from compaction import ToolCall
    from compaction.messages import assistant, tool

    def call(command: str) -> Message:
        return assistant("", tool_calls=[ToolCall("c1", "bash", f'{{"command": "{command}"}}')])

    first = [call("cat a.py"), tool("c1", "x")]
    assert list(ledger_of(first, {}).files) == ["a.py"]
    assert list(ledger_of([call("cat b.py"), tool("c1", "x")], {}).files) == ["b.py"]
    assert list(ledger_of(first, {}).files) == ["a.py"]
    # what a cached ledger holds is never changed by the ledgers that absorb it
    grown = ledger_of(first, {})
    grown.add_message(call("cat c.py"), {})
    assert list(ledger_of(first, {}).files) == ["a.py"]


def test_the_trigger_sees_a_message_changed_in_the_middle_of_a_list_it_copied_in_steps() -> None:
    from compaction.messages import assistant
    from compaction.trigger import Compactor

    counter = ApproximateCounter()
    compactor = Compactor(None, 10_000_000, counter=counter)
    history: list[Message] = [user("Fix the parser.")]
    for i in range(6):
        history.append(assistant(f"step {i}"))
        assert compactor.before_call(history) is history
        assert compactor.stats.last_tokens == counter.count_messages(history)
    history[3] = assistant("x" * 4_000)  # an earlier message replaced in place
    compactor.before_call(history)
    assert compactor.stats.last_tokens == counter.count_messages(history)
    history.append(assistant("done"))
    compactor.before_call(history)
    assert compactor.stats.last_tokens == counter.count_messages(history)


_SENTENCES = st.sampled_from(
    [
        "The port is 8080.",
        "The port is now 9090.",
        "Now the port is 7070 for staging.",
        "Never deploy on Friday.",
        "Never deploy on Monday.",
        "Actually, never deploy on Monday 3.",
        "The budget cap is $4,700.",
        "Update: the budget cap is now $6,200.",
        "Job 1 must use port 8001.",
        "Job 2 must use port 8002.",
        "Job 1 must now use port 8003.",
        "Use Python 3.11.",
        "Use Python 3.12 instead.",
        "Deploy to staging.",
        "ok",
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_SENTENCES, max_size=12), st.lists(_SENTENCES, max_size=8))
def test_supersessions_found_from_the_older_are_every_pair_that_supersedes(
    newer: list[str], older: list[str]
) -> None:
    from compaction.memory._supersede import supersessions
    from compaction.memory.words import Subjects, supersedes

    found = supersessions(newer, older)
    index = Subjects(older)
    for at, text in enumerate(newer):
        expected = {old for old in older if supersedes(text, old)}
        assert found.get(at, set()) == expected
        assert index.superseded_by(text) == expected


def test_a_note_names_its_originals_once_whether_or_not_they_are_there_before_it() -> None:
    from compaction.memory.trace import refs_of
    from compaction.memory.transcript import message_ref

    raw = [user(f"Message {i}.") for i in range(4)]
    ids = [message_ref(m) for m in raw]
    note = Message("user", "[note]", meta={PROVENANCE_KEY: {"kind": "note", "replaces": ids[:3]}})
    # the note first: all it stands for, then what follows it
    assert refs_of([note, raw[3]]) == (*ids[:3], ids[3])
    # an original still there before the note is counted once
    assert refs_of([raw[1], note, raw[3]]) == (ids[1], ids[0], ids[2], ids[3])
