"""SlidingWindow: a fixed window (seed 000) and a turn-aware, budget-driven ladder layer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import events
from compaction.budget import Budget
from compaction.memory.transcript import is_note, mark, message_ref, parse, provenance
from compaction.messages import Message, ToolCall
from compaction.pipeline import CompactionPipeline
from compaction.registry import Registry, registry
from compaction.strategies.sliding_window import SlidingWindow
from compaction.strategy import Capabilities, Strategy
from compaction.tokens import ApproximateCounter
from compaction.validate import InvalidConversationError, validate
from tests.conversations import conversations

# -- a small agent conversation with known sizes ----------------------------------------------


def msg(role, content="", tokens=10, calls=(), answers=None):
    return Message(
        role,
        content,
        tool_calls=tuple(ToolCall(c, "bash") for c in calls),
        tool_call_id=answers,
        tokens=tokens,
    )


def step(n, tokens=10):
    return [
        msg("assistant", f"call {n}", tokens, calls=[f"c{n}"]),
        msg("tool", f"out {n}", tokens, answers=f"c{n}"),
    ]


def agent(past_steps=(1, 1, 2), current_steps=4, system_tokens=20):
    """A system prompt, past turns with the given numbers of steps, then the current task."""
    out = [msg("system", "be terse", system_tokens)]
    n = 0
    for t, k in enumerate(past_steps):
        out.append(msg("user", f"task {t}"))
        for _ in range(k):
            out += step(n)
            n += 1
    out.append(msg("user", "task now"))
    for _ in range(current_steps):
        out += step(n)
        n += 1
    return out


COUNTER = ApproximateCounter()
NOTE = COUNTER.count(
    Message("user", "[16 earlier messages were removed to fit the context window]")
)


def compact(messages, target, counter=COUNTER, **options):
    return (
        CompactionPipeline(counter=counter)
        .use(SlidingWindow, **options)
        .compact(messages, target=target)
    )


def contents(messages):
    return [m.content for m in messages]


# -- construction ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, -1, 1.5, True, "3"])
def test_window_size_must_be_a_positive_int(size):
    with pytest.raises(ValueError, match="window_size"):
        SlidingWindow(window_size=size)


def test_window_mode_must_be_known():
    with pytest.raises(ValueError, match="window_mode"):
        SlidingWindow(window_size=3, window_mode="turns")


@pytest.mark.parametrize("keep", [0, -2, True, 1.0])
def test_keep_steps_must_be_at_least_one(keep):
    with pytest.raises(ValueError, match="keep_steps"):
        SlidingWindow(keep_steps=keep)


def test_note_must_be_a_bool_or_none():
    with pytest.raises(ValueError, match="note"):
        SlidingWindow(note="yes")


def test_defaults_make_a_budget_driven_layer_with_a_note():
    sw = SlidingWindow()
    assert (sw.window_size, sw.window_mode, sw.keep_steps) == (None, "messages", 2)
    assert sw.writes_note
    assert not SlidingWindow(3).writes_note
    assert SlidingWindow(3, note=True).writes_note
    assert not SlidingWindow(note=False).writes_note


def test_protocol_and_explain():
    sw = SlidingWindow(7, "tokens", keep_steps=3)
    assert isinstance(sw, Strategy) and sw.name == "sliding_window"
    assert isinstance(sw.capabilities, Capabilities)
    assert not sw.capabilities.model_call and sw.capabilities.keeps_tool_pairs
    text = sw.explain()
    assert "sliding" in text and "7 tokens" in text and "3 steps" in text
    assert "budget" in SlidingWindow().explain()


def test_can_handle_is_positive_and_higher_when_something_may_go():
    sw = SlidingWindow()
    assert sw.can_handle([]) > 0
    assert sw.can_handle(agent()) == 1.0
    only_protected = [msg("system", "s"), msg("user", "task"), *step(0)]
    assert 0 < sw.can_handle(only_protected) < 1.0


def test_registered_under_its_key_and_again_under_a_custom_one():
    assert registry.get("sliding_window") is SlidingWindow
    fresh = Registry()
    fresh.register("custom_sliding_window", SlidingWindow)
    built = fresh.create("custom_sliding_window", window_size=4, window_mode="tokens")
    assert isinstance(built, SlidingWindow) and built.window_mode == "tokens"
    assert "custom_sliding_window" not in registry


# -- the fixed window (seed 000) --------------------------------------------------------------


def users(*tokens):
    return [msg("user", f"m{i}", t) for i, t in enumerate(tokens)]


def test_window_applies_even_under_budget():
    out = SlidingWindow(2).apply(users(10, 10, 10), Budget(1000))
    assert contents(out) == ["m1", "m2"]


@pytest.mark.parametrize(("size", "kept"), [(2, 2), (3, 3), (4, 3), (1, 1)])
def test_messages_window_boundaries(size, kept):
    out = SlidingWindow(size).apply(users(10, 10, 10), 1000)
    assert len(out) == kept
    assert contents(out) == ["m0", "m1", "m2"][-kept:]


@pytest.mark.parametrize(("size", "kept"), [(30, 3), (29, 2), (20, 2), (19, 1), (10, 1)])
def test_tokens_window_boundaries(size, kept):
    out = SlidingWindow(size, "tokens").apply(users(10, 10, 10), 1000)
    assert len(out) == kept


def test_tokens_window_counts_only_non_system_tokens():
    msgs = [msg("system", "s", 500), *users(10, 10)]
    assert len(SlidingWindow(20, "tokens").apply(msgs, 1000)) == 3
    assert contents(SlidingWindow(19, "tokens").apply(msgs, 1000)) == ["s", "m1"]


def test_in_a_ladder_a_window_is_a_cap_applied_only_while_over_target():
    # rule 1 for every layer (issue 15): under target, a window in a ladder is not asked
    msgs = users(10, 10, 10)
    ladder = CompactionPipeline(counter=COUNTER).use(SlidingWindow(2))
    result = ladder.compact(msgs, target=1000)
    assert result.messages == tuple(msgs) and not result.applied and not result.declined
    # over target it caps the conversation at the window, then fits the budget
    assert COUNTER.count_messages(msgs) > 25
    assert contents(ladder.compact(msgs, target=25).messages) == ["m1", "m2"]
    # the seed-000 behaviour in a ladder is an explicit option
    always = CompactionPipeline(counter=COUNTER).use(SlidingWindow(2, always_apply=True))
    assert contents(always.compact(msgs, target=1000).messages) == ["m1", "m2"]


def test_the_window_never_drops_the_newest_request():
    # a window of 1 message over [user, assistant]: the user message is the newest request
    msgs = [msg("user", "task"), msg("assistant", "answer")]
    result = SlidingWindow(1).compact(msgs, target=1000, counter=COUNTER)
    assert result.messages == tuple(msgs)
    assert [d.reason for d in result.declined] == ["declined"]


def test_budget_is_enforced_after_the_window():
    out = SlidingWindow(10).apply(users(100, 100, 100), Budget(300, 50))
    assert contents(out) == ["m1", "m2"]
    out = SlidingWindow(2).apply(users(100, 100, 100), 150)
    assert contents(out) == ["m2"]


def test_empty_input_gives_empty_output():
    assert SlidingWindow(3).apply([], 100) == ()
    assert SlidingWindow().apply([], 100) == ()


def test_only_system_messages_are_all_kept():
    msgs = [msg("system", "a", 20), msg("system", "b", 20)]
    assert SlidingWindow(1).apply(msgs, 1000) == tuple(msgs)


def test_a_window_with_note_true_keeps_the_note_outside_the_window():
    out = SlidingWindow(2, note=True).apply(users(30, 30, 30), 1000)
    assert len(out) == 3 and is_note(out[0]) and contents(out)[1:] == ["m1", "m2"]
    assert "1 earlier message removed" in out[0].content


# -- the ladder layer ----------------------------------------------------------------------


def test_already_under_target_nothing_is_asked():
    msgs = agent()
    total = COUNTER.count_messages(msgs)
    asked = []
    events.strategy_applied.connect(on_applied := lambda s, **kw: asked.append(kw))
    events.strategy_declined.connect(on_declined := lambda s, **kw: asked.append(kw))
    try:
        result = compact(msgs, total)
    finally:
        events.strategy_applied.disconnect(on_applied)
        events.strategy_declined.disconnect(on_declined)
    assert asked == [] and not result.applied and not result.declined
    assert result.messages == tuple(msgs)


def note_cost(messages: int, steps: int) -> int:
    """What the note for ``messages`` dropped messages holding ``steps`` steps costs here (the
    small messages of these tests name no files, commands or errors)."""
    text = f"[{messages} earlier message{'s' if messages != 1 else ''}"
    if steps:
        text += f" ({steps} tool step{'s' if steps != 1 else ''})"
    return COUNTER.count(Message("user", text + " removed to fit the context window.]"))


def test_one_token_over_drops_the_oldest_steps_and_notes_them_where_they_were():
    msgs = agent()
    total = COUNTER.count_messages(msgs)
    result = compact(msgs, total - 1)
    out = result.messages
    assert result.fits and result.applied[0].strategy == "sliding_window"
    # the system prompt and the original task stay; the note stands where step 0 was
    assert out[:2] == tuple(msgs[:2]) and is_note(out[2])
    # one step (20 tokens) is not enough to pay for its note: two go, task 1 stays
    assert note_cost(2, 1) > 19
    assert (
        out[2].content == "[4 earlier messages (2 tool steps) removed to fit the context window.]"
    )
    assert contents(out[3:5]) == ["task 1", "task 2"]
    record = provenance(out[2])
    assert record["strategy"] == "sliding_window" and record["kind"] == "note"
    dropped = [*msgs[2:4], *msgs[5:7]]
    assert record["replaces"] == tuple(message_ref(m) for m in dropped)
    assert record["facts"]["steps"] == 2 and record["facts"]["messages"] == 4


def test_drops_just_enough_counting_the_note():
    msgs = agent()  # 20 + task 0 + 1 step, task 1 + 1 step, task 2 + 2 steps, task now + 4
    total = COUNTER.count_messages(msgs)
    assert total == 220
    # dropping two steps (40) and writing their note leaves exactly this much:
    exact = total - 40 + note_cost(4, 2)
    assert compact(msgs, exact).after == exact
    assert len(compact(msgs, exact).messages) == len(msgs) - 4 + 1
    # one token less and the third step goes too
    assert len(compact(msgs, exact - 1).messages) == len(msgs) - 6 + 1


def test_older_requests_the_person_wrote_go_last():
    msgs = agent(past_steps=(1, 3))  # task 0 + step 0, task 1 + steps 1, 2, 3, task now
    total = COUNTER.count_messages(msgs)
    out = compact(msgs, total - 80 + note_cost(8, 4)).messages
    # every past step went before the older request "task 1" would
    assert contents(out)[:4] == ["be terse", "task 0", out[2].content, "task 1"]
    assert not any(
        c.startswith("out") and c in ("out 0", "out 1", "out 2", "out 3") for c in contents(out)
    )
    assert contents(out)[4:7] == ["task now", "call 4", "out 4"]


def test_the_current_request_loses_its_oldest_steps_before_older_requests_go():
    msgs = agent(past_steps=(1, 1))
    out = compact(msgs, 1).messages  # as much as may go
    # left: the system prompt, the original task, the note, the newest request, its
    # newest two steps; "task 1" went last of all
    assert contents(out)[:2] == ["be terse", "task 0"] and is_note(out[2])
    assert contents(out)[3:] == ["task now", "call 4", "out 4", "call 5", "out 5"]


@pytest.mark.parametrize("keep", [1, 2, 3])
def test_keep_steps_newest_steps_of_the_current_task_survive(keep):
    msgs = agent(current_steps=4)
    out = compact(msgs, 1, keep_steps=keep).messages
    kept_steps = [c for c in contents(out) if c.startswith("call")]
    assert kept_steps == [f"call {n}" for n in range(8 - keep, 8)]
    assert contents(out)[:2] == ["be terse", "task 0"] and is_note(out[2])
    assert contents(out)[3] == "task now"
    validate(out)


def test_a_pinned_message_is_never_dropped():
    msgs = agent()
    pinned = msgs[3].replace(meta={"pinned": True})  # the output of step 0
    msgs[3] = pinned
    out = compact(msgs, 1).messages
    assert pinned in out and msgs[2] in out  # the step stays whole with its pinned result
    validate(out)


def test_without_an_anchor_the_newest_steps_are_still_kept():
    msgs = [msg("system", "s"), *step(0, 40), *step(1), *step(2)]
    out = compact(msgs, 1, keep_steps=2).messages
    assert contents(out)[2:] == ["call 1", "out 1", "call 2", "out 2"]


def test_nothing_left_to_give_declines():
    msgs = [msg("system", "s"), msg("user", "task"), *step(0), *step(1)]
    result = compact(msgs, 10)
    assert result.messages == tuple(msgs)
    assert [(d.strategy, d.reason) for d in result.declined] == [("sliding_window", "declined")]


def test_a_note_bigger_than_what_it_replaces_is_no_rewrite():
    msgs = [msg("user", "old", 2), msg("user", "task", 100), *step(0, 100), *step(1, 100)]
    result = compact(msgs, 300)
    assert result.messages == tuple(msgs) and not result.applied


def test_swapping_a_note_for_a_note_is_never_a_rewrite():
    old = mark(
        Message("user", "[5 earlier messages were removed to fit the context window]"),
        strategy="sliding_window",
        kind="note",
        replaces=[Message("user", f"x{i}") for i in range(5)],
    )
    msgs = [msg("system", "s"), old, msg("user", "task"), *step(0), *step(1)]
    result = compact(msgs, 20)
    assert result.messages == tuple(msgs) and not result.applied


def test_a_new_note_absorbs_the_older_one():
    msgs = agent()
    first = compact(msgs, 219).messages
    second = compact(first, 150).messages
    notes = [m for m in second if is_note(m)]
    assert len(notes) == 1 and notes[0] is second[2]
    direct = compact(msgs, 150).messages
    assert provenance(second[2])["replaces"] == provenance(direct[2])["replaces"]
    assert second[2].content == direct[2].content
    assert second[3:] == direct[3:]


def test_each_original_is_counted_once_and_equal_messages_twice():
    # a transcript that keeps the raw history next to a summary of it (Claude Code does)
    early = [
        msg("user", "same", meta_synthetic := 10),
        msg("user", "same"),
        msg("assistant", "reply"),
    ]
    del meta_synthetic
    early = [m.replace(meta={"synthetic": True}) if m.role == "user" else m for m in early]
    summary = mark(
        Message("user", "summary of the above", tokens=10),
        strategy="claude-code",
        kind="summary",
        replaces=early,
    )
    msgs = [msg("system", "s"), *early, summary, msg("user", "task"), *step(0), *step(1)]
    out = compact(msgs, 60).messages
    assert contents(out)[2:] == ["task", "call 0", "out 0", "call 1", "out 1"]
    # the two equal "same" messages are two; the summary adds nothing new
    assert out[1].content.startswith("[3 earlier messages")
    assert len(provenance(out[1])["replaces"]) == 3


def test_parallel_tool_calls_go_together():
    msgs = [
        msg("user", "task"),
        msg("assistant", "", calls=["a", "b"]),
        msg("tool", "ra", answers="a"),
        msg("tool", "rb", answers="b"),
        *step(0),
    ]
    out = compact(msgs, 40, keep_steps=1).messages
    validate(out)
    assert "ra" not in contents(out) and "rb" not in contents(out)


def test_note_false_drops_without_a_note():
    msgs = agent()
    out = compact(msgs, 190, note=False).messages
    assert not any(is_note(m) for m in out)
    assert contents(out)[:3] == ["be terse", "task 0", "task 1"]


def test_invalid_input_is_refused_naming_the_message():
    bad = (msg("user", "task"), msg("tool", "orphan", answers="nope"))
    with pytest.raises(InvalidConversationError) as info:
        SlidingWindow().rewrite(bad, target=1, counter=COUNTER)
    assert info.value.index == 1
    with pytest.raises(InvalidConversationError):
        compact(list(bad), 1)


@pytest.mark.parametrize("turns", [300, 1200])
def test_each_message_is_counted_once(turns):
    counter = ApproximateCounter()
    msgs = [Message("system", "sys")] + [
        m
        for n in range(turns)
        for m in (
            Message("user", f"task {n} " * 20),
            Message("assistant", "", tool_calls=(ToolCall(f"c{n}", "bash"),)),
            Message("tool", f"output {n} " * 50, tool_call_id=f"c{n}"),
        )
    ]
    result = compact(msgs, counter.count_messages(msgs) // 3, counter=counter)
    assert result.fits
    # every input message once, plus a few short notes: never a recount per candidate cut
    assert counter.encoded - len(msgs) <= 5


def test_budget_and_int_targets_agree():
    msgs = agent()
    assert SlidingWindow().apply(msgs, Budget(300, 100), counter=COUNTER) == SlidingWindow().apply(
        msgs, 200, counter=COUNTER
    )


# -- properties ------------------------------------------------------------------------------


def protected_start(transcript, keep):
    """Index of the first message of the newest ``keep`` non-note groups of the current task
    (of everything without an anchor)."""
    first = 0 if transcript.anchor is None else transcript.anchor + 1
    seen = 0
    for g in reversed(transcript.groups[first:]):
        if g.kind != "note":
            seen += 1
            if seen == keep:
                return g.start
    # fewer steps than keep: all of them stay
    rest = transcript.groups[first:]
    return rest[0].start if rest else len(transcript.messages)


@settings(max_examples=200, deadline=None)
@given(conversations(), st.floats(0.0, 1.1), st.integers(1, 3))
def test_output_is_valid_and_keeps_what_must_be_kept(messages, fraction, keep):
    counter = ApproximateCounter()
    total = counter.count_messages(messages)
    target = max(1, int(total * fraction))
    result = compact(messages, target, counter=counter, keep_steps=keep)
    out = result.messages
    validate(out)
    t = parse(messages)
    assert out[: t.system_end] == tuple(messages[: t.system_end])
    if t.anchor is not None:
        anchor = messages[t.groups[t.anchor].start]
        after = parse(out)
        assert after.anchor is not None and out[after.groups[after.anchor].start] == anchor
    start = protected_start(t, keep)
    if start < len(messages):
        assert out[len(out) - (len(messages) - start) :] == tuple(messages[start:])
    if not result.changed:
        return
    assert result.after < result.before
    # the original task, the newest request and pinned messages are all kept
    for index in t.protected:
        assert messages[t.groups[index].start] in out
    # at most one note, where the first dropped message was, and at most one message kept in
    # part (the last to go, when dropping it whole would overshoot): never nothing
    notes = [i for i, m in enumerate(out) if is_note(m)]
    parts = [m for m in out if (provenance(m) or {}).get("strategy") == "sliding_window"]
    assert len(notes) <= 1 and len(parts) - len(notes) <= 1 and parts
    if not notes:
        return
    (where,) = notes
    for before, now in zip(messages[:where], out[:where], strict=True):
        # as it was, or that one message kept in part (it stands for itself)
        assert now == before or provenance(now)["replaces"] == (message_ref(before),)
    note = out[where]
    dropped = len(messages) - (len(out) - 1)
    assert len(provenance(note)["replaces"]) == dropped
    assert note.content.startswith(f"[{dropped} earlier message")


@settings(max_examples=100, deadline=None)
@given(
    conversations(),
    st.floats(0.0, 1.0),
    st.one_of(st.none(), st.integers(1, 30)),
    st.sampled_from(["messages", "tokens"]),
)
def test_standalone_equals_single_layer_ladder(messages, fraction, window, mode):
    counter = ApproximateCounter()
    target = max(1, int(counter.count_messages(messages) * fraction))
    options = {"window_size": window, "window_mode": mode}
    alone = SlidingWindow(**options).apply(messages, target, counter=counter)
    # on its own a window is the seed's; in a ladder that is the explicit always_apply
    ladder = (
        CompactionPipeline(counter=counter)
        .use(SlidingWindow, **options, always_apply=True)
        .compact(messages, target=target)
    )
    assert alone == ladder.messages
    validate(alone)


@settings(max_examples=100, deadline=None)
@given(conversations(), st.integers(1, 12))
def test_messages_window_holds_unless_protected(messages, window):
    counter = ApproximateCounter()
    out = SlidingWindow(window, keep_steps=1).apply(messages, 10**9, counter=counter)
    validate(out)
    t = parse(out)
    inner = len(out) - t.system_end
    if inner > window:
        # only what may not go is left: the anchor (if any) and the newest step
        assert len(t.groups) <= 2


def test_a_note_over_a_note_counts_equal_messages_dropped_in_both_rounds():
    # "continue" / "ok" come back again and again in real chats: equal messages share a
    # fingerprint, yet each one dropped is one more message the note stands for.
    # (the harness's "continue", marked synthetic, so "task" is the original task)
    chat = [msg("user", "continue").replace(meta={"synthetic": True}), msg("assistant", "ok")] * 3
    msgs = [msg("system", "s"), *chat, msg("user", "task"), *step(0), *step(1)]
    first = compact(msgs, 100).messages
    assert first[1].content.startswith("[4 earlier messages")
    assert len(provenance(first[1])["replaces"]) == 4
    second = compact(first, 60).messages
    # the older note's 4 plus the 2 equal messages dropped now
    assert second[1].content.startswith("[6 earlier messages")
    assert len(provenance(second[1])["replaces"]) == 6
    direct = compact(msgs, 60).messages
    assert provenance(second[1])["replaces"] == provenance(direct[1])["replaces"]
