"""The trigger's view: reused only for a list that extends what it mapped; usage is a hint.

Issue 20 item 1 (one user's conversation in another's request) and issue 21 item 5 (a
reported 0, or an undercount, switched compaction off).
"""

from __future__ import annotations

import attrs
import structlog.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.messages import Message, ToolCall, assistant, system, tool, user
from compaction.tokens import ApproximateCounter
from compaction.trigger import Compactor
from compaction.validate import validate

WINDOW = 1200


def convo(who: str, secret: str, turns: int) -> list[Message]:
    """Two users of one assistant: the same system prompt, greeting and "continue"s."""
    out = [
        system("You are the support assistant of ExampleBank."),
        assistant("Hello! How can I help you today?"),
        user(f"I am {who}. {secret}"),
    ]
    for i in range(turns):
        out += [assistant(f"Noted, {who}. Details {i}: " + "lorem ipsum " * 30), user("continue")]
    return out


def compactor(window: int = WINDOW) -> Compactor:
    return Compactor(None, window, counter=ApproximateCounter(chars_per_token=4.0))


def text(messages) -> str:
    return " ".join(m.content for m in messages)


def test_a_list_sharing_first_and_nth_messages_is_another_conversation():
    c = compactor()
    alice = convo("Alice", "My PIN is 4321.", 12)
    assert c.before_call(alice) is not alice  # compacted: a view exists
    bob = [*convo("Bob", "Close my account.", 12), assistant("Sure."), user("My name?")]
    sent = c.before_call(bob)
    assert "4321" not in text(sent) and "Alice" not in text(sent)
    assert "I am Bob" in text(sent)


def test_a_list_that_extends_the_mapped_prefix_keeps_the_view():
    c = compactor()
    alice = convo("Alice", "My PIN is 4321.", 12)
    first = c.before_call(alice)
    alice += [assistant("ok"), user("and then?")]
    sent = c.before_call(alice)
    assert tuple(sent[: len(first)]) == tuple(first)  # the compacted prefix, unchanged


def test_an_edit_in_the_middle_is_a_new_conversation():
    c = compactor()
    alice = convo("Alice", "My PIN is 4321.", 12)
    c.before_call(alice)
    edited = list(alice)
    edited[5] = assistant("an edited reply")
    sent = c.before_call(edited)
    assert "an edited reply" in text(sent) or c.stats.compactions == 2


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(["continue", "ok", "yes"]), min_size=4, max_size=30),
    st.integers(min_value=0, max_value=29),
)
def test_what_is_sent_always_belongs_to_the_list_given(replies, change):
    """Whatever came before, the request holds only the given list's own content (or the
    ladder's notes about it): never a message of a list the compactor saw earlier."""
    c = compactor(window=600)
    a = [system("s"), user("I am A, secret AAAA")]
    b = [system("s"), user("I am B, secret BBBB")]
    for i, r in enumerate(replies):
        a += [assistant(f"A {i} " + "x " * 40), user(r)]
        b += [assistant(f"B {i} " + "y " * 40), user(r)]
    c.before_call(a)
    b2 = list(b)
    if change < len(b2):
        b2[change] = attrs.evolve(b2[change], content=b2[change].content + " (edited)")
    sent = c.before_call(b2)
    assert "AAAA" not in text(sent) and " A " not in f" {text(sent)} "
    validate(sent)


# -- usage is a hint ---------------------------------------------------------------------------


def tool_loop(c: Compactor, usage_of, steps: int = 30) -> list[int]:
    """A tool loop whose provider reports ``usage_of(local count of the request)``."""
    counter = c.counter
    messages: list[Message] = [system("agent"), user("Fix the build.")]
    usage = None
    sizes = []
    for n in range(steps):
        messages += [
            assistant("", [ToolCall(f"c{n}", "make")]),
            tool(f"c{n}", "error: x\n" * 120),
        ]
        sent = c.before_call(messages, usage=usage)
        size = counter.count_messages(sent)
        sizes.append(size)
        usage = {"prompt_tokens": usage_of(size), "completion_tokens": 5}
    return sizes


def test_a_reported_zero_does_not_switch_compaction_off():
    c = compactor()
    # Read through structlog, not caplog: once anything in the process has configured
    # structlog (capture_logs does, for good), our warnings go through it.
    with structlog.testing.capture_logs() as logs:
        sizes = tool_loop(c, lambda n: 0)
    assert max(sizes) <= WINDOW
    assert c.stats.compactions >= 1 and c.stats.usage_ignored >= 20
    warned = [e for e in logs if e["event"] == "trigger.usage_implausible"]
    assert len(warned) == 1  # one warning per conversation, not per call
    assert warned[0]["log_level"] == "warning" and warned[0]["reported"] == 0


def test_a_provider_that_reports_half_does_not_push_requests_over_the_window():
    c = compactor()
    sizes = tool_loop(c, lambda n: n // 2)
    assert max(sizes) <= WINDOW and c.stats.compactions >= 1


def test_a_provider_that_counts_more_still_anchors():
    c = compactor()
    tool_loop(c, lambda n: n * 3 // 2, steps=4)
    assert c.stats.anchored and c.stats.usage_ignored == 0


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=0, max_value=26), st.integers(min_value=1, max_value=3))
def test_a_grown_list_is_the_same_conversation_only_when_its_whole_prefix_is(at, grown):
    """The list the agent sends has grown since the last call: it extends what was mapped
    only when every message of that prefix is the one mapped; an edit anywhere in it makes
    it another conversation, and the compactor's own copy is left as it was either way."""
    c = compactor()
    alice = convo("Alice", "My PIN is 4321.", 12)
    c.before_call(alice)
    alice += [assistant("ok"), user("and then?")]
    c.before_call(alice)  # extends what was mapped
    mapped = list(c._src)
    edited = list(alice)
    edited[at] = attrs.evolve(edited[at], content=edited[at].content + " (edited)")
    tail = [m for i in range(grown) for m in (assistant(f"more {i}"), user("go on"))]
    with structlog.testing.capture_logs() as logs:
        assert not c._extends([*edited, *tail], c._src)
        assert c._src == mapped
        assert c._extends([*alice, *tail], c._src)
        assert c._src == mapped
        c.before_call([*edited, *tail])
    assert [e["event"] for e in logs if e["event"] == "trigger.restart"] == ["trigger.restart"]
