"""The ``remembered`` benchmark measures what it says: its sessions plant what they claim,
its judge tells kept from lost and stale from current, and the suite runs end to end.

Small and fast (two seeds, one budget): the figures themselves are the benchmark's business.
"""

from __future__ import annotations

import argparse
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.remembered import suite as remembered
from benchmarks.remembered.judge import stale, visible_text
from benchmarks.remembered.sessions import KINDS, agent_session, chat_session
from compaction import Message, TiktokenCounter, ToolCall, is_valid


@pytest.mark.parametrize("make", [chat_session, agent_session])
@pytest.mark.parametrize("seed", [1, 2])
def test_sessions_plant_each_value_once_where_they_say(make, seed) -> None:  # type: ignore[no-untyped-def]
    session = make(seed)
    assert session == make(seed)  # deterministic per seed
    assert is_valid(session.messages)
    assert {s.kind for s in session.statements} == set(KINDS)
    values = [s.value for s in session.statements]
    assert len(set(values)) == len(values)
    for statement in session.statements:
        holder = session.messages[statement.index]
        assert holder.role == "user" and statement.value in holder.content
        # Nowhere else: a value can survive only through the person's own words.
        others = [m for i, m in enumerate(session.messages) if i != statement.index]
        assert statement.value not in visible_text(others)
    updates = [s for s in session.statements if s.supersedes is not None]
    assert len(updates) == 2
    for update in updates:
        first = next(s for s in session.statements if s.value == update.supersedes)
        assert first.subject == update.subject and first.index < update.index


def test_chat_and_agent_have_the_stated_shape() -> None:
    chat = chat_session(3)
    assert chat.messages[0].role == "system"
    assert sum(m.role == "user" for m in chat.messages) == 65
    assert len(chat.statements) == 20
    agent = agent_session(3)
    assert sum(m.role == "tool" for m in agent.messages) >= 40
    # Interjections sit between tool steps, after the task.
    assert all(s.index > 2 for s in agent.statements)
    assert chat_session(4) != chat


def test_parts_cut_at_turn_boundaries_and_lose_nothing() -> None:
    for session in (chat_session(5), agent_session(5)):
        pieces = remembered.parts(session.messages)
        assert len(pieces) == remembered.ROUNDS
        assert tuple(m for p in pieces for m in p) == session.messages
        assert all(p and p[0].role in ("system", "user", "assistant") for p in pieces)
        assert all(is_valid(p) for p in (pieces[0], pieces[0] + pieces[1]))
    short = (Message("system", "s"), Message("user", "u"))
    assert remembered.parts(short) == [short, (), (), (), ()]


def test_visible_text_reads_content_and_arguments_never_meta() -> None:
    call = ToolCall("c1", "bash", '{"command": "cat /srv/caf\\u00e9/x.toml"}')
    messages = [
        Message("user", "hello", meta={"secret": "VALUE-IN-META"}),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "ok", tool_call_id="c1"),
    ]
    text = visible_text(messages)
    assert "/srv/café/x.toml" in text  # decoded from the JSON escape
    assert "VALUE-IN-META" not in text


@pytest.mark.parametrize(
    ("text", "is_stale"),
    [
        ("nothing about the cap here", False),  # forgotten, not stale
        ("The budget cap is $4,730.", True),  # only the old value
        ("The cap is $4,730. Later: the cap is now $5,120.", False),  # old, then new
        ("The cap is now $5,120. Reminder: the cap is $4,730.", True),  # old last, unmarked
        ("budget cap: $5,120, previously $4,730", False),
        ("budget cap: $5,120 (was $4,730)", False),  # marked as superseded
        ("budget cap: $4,730 -> $5,120", False),
        ("budget cap: $5,120\nsomething else entirely: $4,730", True),  # marker on another line
    ],
)
def test_stale_rule(text: str, is_stale: bool) -> None:
    assert stale(text, "$4,730", "$5,120") is is_stale


def test_uncompacted_rounds_keep_every_statement() -> None:
    """At a budget over the session's size nothing is compacted: the judge must find every
    current value and call no superseded one stale, round by round."""
    session = chat_session(6)
    rounds = remembered.run_session(session, 1.5, TiktokenCounter())
    last = rounds[-1]
    kept, total = remembered.kept_share(last)
    assert kept == total == len({s.subject for s in session.statements})
    assert last["stale"] == [0, 2]
    assert [remembered.kept_share(r)[1] for r in rounds] == sorted(
        remembered.kept_share(r)[1] for r in rounds
    )


def test_a_ladder_that_drops_the_person_is_seen_losing() -> None:
    """A tiny budget must cost statements (the judge is not blind to loss)."""
    rounds = remembered.run_session(chat_session(7), 0.02, TiktokenCounter())
    kept, total = remembered.kept_share(rounds[-1])
    assert total > 0 and kept < total


def test_quick_suite_runs_and_judges_its_goals() -> None:
    args = argparse.Namespace()
    ctx = type("Ctx", (), {"quick": True, "args": args})()
    results = remembered.run(ctx)
    assert results["seeds"] == list(remembered.QUICK_SEEDS) and not results["errors"]
    cells = len(remembered.COUNTERS) * len(remembered.LADDERS) * len(remembered.SHAPES)
    assert len(results["growing"]) == cells * len(remembered.BUDGETS) * remembered.ROUNDS
    assert [g["met"] in (True, False) for g in results["goals"]] == [True] * 5
    # every round that started over target reports the budget it used
    uses = [u for tally in results["growing"].values() for u in tally["use"]]
    assert uses and all(u > 0 for u in uses)
    lines = remembered.markdown(results)
    assert lines[0].startswith("## ") and any("stale" in line for line in lines)
    assert any("counted in chars" in line for line in lines)


def test_a_character_budget_counts_characters_and_small_sessions_are_small() -> None:
    session = remembered.small_session(3)
    chars = remembered.Chars().count_messages(session.messages)
    assert 2_000 <= chars <= 10_000
    assert chars == sum(len(m.content) + 12 for m in session.messages)  # a chat: no calls
    # at a tenth of it, the whole ledger does not fit: the free ladder keeps fewer statements
    # than were made (the judge sees the loss), and a round reports its budget use
    rounds = remembered.run_session(session, 0.10, remembered.Chars(), ladder_name="free")
    kept, total = remembered.kept_share(rounds[-1])
    assert kept < total and any(r["use"] for r in rounds)


# -- the stale rule, for any surrounding text ----------------------------------------------------

_plain = st.text(alphabet="xyzq .,\n", max_size=80)  # no marker word, no arrow, no value


@settings(max_examples=150, deadline=None)
@given(_plain, _plain, _plain)
def test_stale_rule_holds_in_any_text(a: str, b: str, c: str) -> None:
    old, new = "$4,730", "$5,120"
    assert not stale(a + b, old, new)  # forgotten is not stale
    assert not stale(a + new + b, old, new)
    assert stale(a + old + b, old, new)  # the old value alone
    assert not stale(a + old + b + new + c, old, new)  # read in order: the change is seen
    assert stale(a + new + b + "\n" + old + c, old, new)  # the old one last, unmarked
    assert not stale(a + new + " (was " + old + ")" + c, old, new)


def test_all_that_fit_is_every_statement_with_room_and_fewer_without() -> None:
    """The bound the goals are counted against where not every statement can fit: all of
    them at a budget that holds the whole session, fewer at a budget the protected messages
    nearly fill, never more than the statements made."""
    session = remembered.small_session(3)
    counter = remembered.Chars()
    size = counter.count_messages(session.messages)
    made = len({s.subject for s in session.statements})
    upto = len(session.messages)
    roomy = remembered.capacity(session, session.messages, upto, size, counter)
    tight = remembered.capacity(session, session.messages, upto, size // 10, counter)
    assert roomy == made
    assert 0 <= tight < made
    rounds = remembered.run_session(session, 0.1, counter)
    fit_kept, fit = rounds[-1]["fit"]
    assert fit_kept <= fit <= made and (fit < made) == bool(rounds[-1]["limited"])


@pytest.mark.parametrize("counter_name", ["tokens", "chars"])
@pytest.mark.parametrize("seed", [1, 2, 6])
def test_a_longer_newest_step_never_leaves_more_room_for_the_statements(
    counter_name: str, seed: int
) -> None:
    """All-that-fit is the product's bound: the person's newest request is paid whether the
    newest step is empty or too long for the target (a last resort cuts the step's text
    first, then the person's filler, and their request only after every note gave its
    lines), so a longer step can only leave less room for older statements, never more."""
    session = remembered.small_session(seed)
    counter = remembered.counter_for(counter_name)
    target = counter.count_messages(session.messages) // 10
    upto = len(session.messages)
    lengths = [0, 40, 400, 4000]
    bounds = [
        remembered.capacity(
            session,
            (*session.messages, Message("assistant", "Sure. " * n)),
            upto,
            target,
            counter,
        )
        for n in lengths
    ]
    assert all(a >= b for a, b in itertools.pairwise(bounds)), bounds


@pytest.mark.parametrize("counter_name", ["tokens", "chars"])
def test_what_an_answer_shows_within_its_target_counts_as_fitting(counter_name: str) -> None:
    """All-that-fit is a bound on what any answer could show: an answer within the target
    that shows more than the bound proves that many fit, so none of it is ever capped away."""
    for seed in (2, 7):
        session = remembered.small_session(seed)
        for tally in remembered.run_session(session, 0.1, remembered.counter_for(counter_name)):
            kept, _ = remembered.kept_share(tally)
            if tally["tokens"][0] <= tally["tokens"][1]:
                assert tally["fit"][0] == kept <= tally["fit"][1]
