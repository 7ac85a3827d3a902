"""The trigger: thresholds, provider-usage anchoring, tool schemas, failures, hysteresis."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import events
from compaction.memory.transcript import mark, parse
from compaction.messages import Message, ToolCall, assistant, system, tool, user
from compaction.pipeline import CompactionPipeline
from compaction.strategy import Strategy
from compaction.tokens import ApproximateCounter, TokenCounter
from compaction.trigger import Compactor, usage_tokens
from compaction.validate import validate

WINDOW = 1000


class DropOldest(Strategy):
    """Drops the oldest groups (keeping the system block and the newest group) until under
    target, leaving a note. A real strategy, so the pipeline's rules all apply."""

    name = "drop_oldest"

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        t = parse(messages)
        head = messages[: t.system_end]
        groups = list(t.groups)
        note = mark(user("[older messages removed]"), strategy=self.name, kind="note")
        total = counter.count_messages(messages) + counter.count(note)
        dropped = 0
        while len(groups) > 1 and total > target:
            g = groups.pop(0)
            total -= counter.count_messages(messages[g.start : g.end])
            dropped += 1
        if not dropped:
            return None
        return (*head, note, *(m for g in groups for m in messages[g.start : g.end]))


class Boom(Strategy):
    name = "boom"

    def rewrite(self, messages, *, target, counter):
        raise RuntimeError("summariser is down")


def counter() -> ApproximateCounter:
    # One character per token plus the 4-token envelope: sizes in tests are easy to read.
    return ApproximateCounter(chars_per_token=1.0)


def sized(role_fn, n: int, i: int = 0) -> Message:
    """A message costing exactly ``n`` tokens by :func:`counter` (n >= 5)."""
    body = f"{i}:".ljust(n - 4, "x")
    return role_fn(body)


def compactor(**kwargs) -> Compactor:
    c = kwargs.pop("counter", None) or counter()
    pipeline = kwargs.pop("pipeline", None) or CompactionPipeline(counter=c).use(DropOldest())
    return Compactor(pipeline, kwargs.pop("window", WINDOW), counter=c, **kwargs)


class Recorder:
    """Collects what a blinker signal sends (kept referenced: blinker holds receivers weakly)."""

    def __init__(self, signal) -> None:
        self.calls: list[tuple[object, dict]] = []
        self.signal = signal
        signal.connect(self._receive)

    def _receive(self, sender, **kwargs) -> None:
        self.calls.append((sender, kwargs))

    def close(self) -> None:
        self.signal.disconnect(self._receive)


@pytest.fixture
def record():
    made: list[Recorder] = []

    def make(signal) -> Recorder:
        r = Recorder(signal)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "at", "to"),
    [
        (1000, 0.4, 0.7),
        (1000, 0.5, 0.5),
        (1000, 1.2, 0.4),
        (1000, 0.7, 0.0),
        (1000, 0.7, -0.1),
        (0, 0.7, 0.4),
        (-5, 0.7, 0.4),
        (1000.0, 0.7, 0.4),
        (True, 0.7, 0.4),
        (1000, "0.7", 0.4),
    ],
)
def test_bad_settings_are_refused(window, at, to):
    with pytest.raises(ValueError):
        Compactor(CompactionPipeline(), window, compact_at=at, compact_to=to, counter=counter())


def test_compact_at_one_is_allowed():
    c = Compactor(CompactionPipeline(), 1000, compact_at=1, compact_to=0.5, counter=counter())
    assert c.threshold == 1000 and c.target == 500


def test_tools_that_leave_no_room_are_refused():
    tools = [{"type": "function", "function": {"name": "x", "description": "y" * 500}}]
    with pytest.raises(ValueError, match="tool schemas"):
        compactor(tools=tools)


# -- thresholds --------------------------------------------------------------------------------


def test_under_threshold_the_same_object_is_returned(record):
    started = record(events.started)
    c = compactor()
    messages = [system("be brief"), sized(user, 300), sized(assistant, 300)]
    assert c.counter.count_messages(messages) < 700
    assert c.before_call(messages) is messages
    as_tuple = tuple(messages)
    assert c.before_call(as_tuple) is as_tuple
    assert started.calls == []
    assert c.stats.calls == 2 and c.stats.compactions == 0
    assert c.stats.last_estimate == c.counter.count_messages(messages)


def test_at_threshold_it_compacts_to_the_lower_mark(record):
    started, compacted, durations = (
        record(events.started),
        record(events.compacted),
        record(events.duration),
    )
    c = compactor()
    messages = [system("s"), *(sized(user if i % 2 == 0 else assistant, 100, i) for i in range(7))]
    total = c.counter.count_messages(messages)
    assert total >= 700
    out = c.before_call(messages)
    assert out is not messages
    assert c.counter.count_messages(out) <= 400
    validate(out)
    assert out[0] is messages[0] and out[-1] is messages[-1]
    assert c.stats.compactions == 1 and c.last_result is not None
    # the events carry the size that triggered them
    for rec in (started, compacted):
        (_, kwargs) = rec.calls[-1]
        assert kwargs["labels"]["context_size"] == total
        assert kwargs["labels"]["window"] == WINDOW
    assert any(k["labels"].get("context_size") == total for _, k in durations.calls)
    assert started.calls[-1][1]["target"] == 400


def test_just_under_threshold_does_not_compact():
    c = compactor()
    messages = [sized(user, 699)]
    assert c.before_call(messages) is messages
    messages.append(sized(assistant, 5))
    assert c.before_call(messages) is not messages  # 704 >= 700


def test_nothing_to_drop_returns_the_list_itself():
    c = compactor()
    messages = [sized(user, 900)]  # one group: DropOldest declines
    assert c.before_call(messages) is messages
    assert c.stats.attempts == 1 and c.stats.compactions == 0


# -- anchoring on provider usage ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        (650, 650),
        ({"prompt_tokens": 650, "completion_tokens": 9, "total_tokens": 659}, 650),
        (SimpleNamespace(prompt_tokens=650, completion_tokens=3), 650),
        (
            {
                "input_tokens": 50,
                "cache_read_input_tokens": 500,
                "cache_creation_input_tokens": 100,
            },
            650,
        ),
        (
            SimpleNamespace(
                input_tokens=50, cache_read_input_tokens=None, cache_creation_input_tokens=600
            ),
            650,
        ),
        ({"input_tokens": 650, "output_tokens": 1}, 650),
        (SimpleNamespace(usage=SimpleNamespace(prompt_tokens=650)), 650),
        ({"usage": {"input_tokens": 650}}, 650),
    ],
)
def test_usage_forms(usage, tokens):
    assert usage_tokens(usage) == tokens


@pytest.mark.parametrize("usage", ["650", {"tokens": 3}, True, 1.5, None])
def test_unreadable_usage_is_an_error(usage):
    with pytest.raises(TypeError, match="usage"):
        usage_tokens(usage)


def test_negative_usage_is_an_error():
    with pytest.raises(ValueError):
        usage_tokens(-1)


@pytest.mark.parametrize(
    "usage",
    [
        650,
        {"prompt_tokens": 650},
        SimpleNamespace(input_tokens=10, cache_read_input_tokens=640),
    ],
)
def test_usage_anchors_the_estimate(usage):
    """The provider counts more than our local estimate: its number wins."""
    c = compactor()
    messages = [system("s"), sized(user, 100, 1)]
    assert c.before_call(messages) is messages
    messages += [sized(assistant, 30, 2), sized(user, 30, 3)]
    # locally ~200 tokens, but the provider measured 650 for the first request: 650 + 60
    out = c.before_call(messages, usage=usage)
    assert c.stats.anchored
    assert c.stats.last_estimate == 650 + 60
    assert out is not messages and c.stats.compactions == 1


def test_usage_a_little_below_the_local_count_is_trusted():
    c = compactor()
    messages = [system("s"), *(sized(user if i % 2 == 0 else assistant, 100, i) for i in range(5))]
    c.before_call(messages)
    sent = c.stats.last_tokens
    messages.append(sized(user, 100, 9))
    # local count ~605 (under the 700 mark); the provider measured 90% of the first request
    reported = sent * 9 // 10
    assert c.before_call(messages, usage={"prompt_tokens": reported}) is messages
    assert c.stats.anchored and c.stats.last_estimate == reported + 100


def test_an_anchor_lasts_until_the_next_usage_and_counts_only_what_followed():
    c = compactor()
    messages = [sized(user, 50)]
    c.before_call(messages)
    messages.append(sized(assistant, 10))
    c.before_call(messages, usage=600)
    assert c.stats.last_estimate == 610
    messages.append(sized(user, 20))
    c.before_call(messages)  # no new usage: still anchored on 600
    assert c.stats.last_estimate == 630
    messages.append(sized(assistant, 10))
    c.observe(100)  # usage for the request just sent (610 locally 80)
    c.before_call(messages)
    assert c.stats.last_estimate == 110


def test_usage_on_the_first_call_is_ignored():
    c = compactor()
    messages = [sized(user, 50)]
    c.before_call(messages, usage=10_000)  # describes no request of ours
    assert not c.stats.anchored and c.stats.last_estimate == 50


def test_compaction_discards_the_anchor():
    c = compactor()
    messages = [system("s"), *(sized(user if i % 2 == 0 else assistant, 60, i) for i in range(6))]
    c.before_call(messages)
    messages.append(sized(assistant, 20, 7))
    out = c.before_call(messages, usage=900)
    assert c.stats.compactions == 1
    messages.append(sized(user, 20, 8))
    out2 = c.before_call(messages)
    assert not c.stats.anchored
    assert c.stats.last_estimate == c.counter.count_messages(out2)
    assert tuple(out2[: len(out)]) == tuple(out)


def test_a_list_that_does_not_extend_is_counted_afresh():
    c = compactor()
    a = [sized(user, 100, 1), sized(assistant, 100, 2)]
    c.before_call(a)
    b = [sized(user, 50, 3)]
    assert c.before_call(b, usage=999) is b  # usage described the other conversation
    assert not c.stats.anchored and c.stats.last_estimate == 50


# -- tool schemas ------------------------------------------------------------------------------


def test_tool_schemas_count_towards_the_estimate_and_are_kept_free():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "look something up " * 5,
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        }
    ]
    c = compactor(tools=tools)
    schema = c.counter.count_tools(tools)
    assert schema > 100
    messages = [system("s"), *(sized(user if i % 2 == 0 else assistant, 100, i) for i in range(6))]
    local = c.counter.count_messages(messages)
    assert local < 700 <= local + schema
    out = c.before_call(messages)
    assert c.stats.last_estimate == local + schema
    assert out is not messages
    assert c.counter.count_messages(out) <= 400 - schema
    assert c.target == 400 - schema
    assert c.stats.last_tokens == c.counter.count_messages(out) + schema

    plain = compactor()
    assert plain.before_call(messages) is messages


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_a_pipeline_that_raises_does_not_stop_the_turn(record, strict):
    failed = record(events.failed)
    c = counter()
    pipeline = CompactionPipeline(counter=c, strict=strict).run(Boom())
    comp = Compactor(pipeline, WINDOW, counter=c)
    messages = [sized(user, 400, 1), sized(assistant, 400, 2)]
    assert comp.before_call(messages) is messages
    senders = [s for s, _ in failed.calls]
    if strict:
        assert comp in senders
        mine = next(k for s, k in failed.calls if s is comp)
        assert isinstance(mine["error"], RuntimeError)
        assert mine["labels"]["context_size"] == 800
        assert comp.stats.failures == 1
    else:  # the pipeline kept the conversation itself and reported the strategy
        assert any(k["labels"].get("context_size") == 800 for _, k in failed.calls)
    # the next call goes on normally
    messages.append(sized(user, 5, 3))
    assert comp.before_call(messages) is messages


def test_invalid_input_is_reported_and_passed_through(record):
    failed = record(events.failed)
    comp = compactor()
    bad = [
        sized(user, 400, 1),
        tool("c1", "ls output"),  # a result answering no call: the pipeline refuses it
        sized(user, 400, 2),
    ]
    assert comp.before_call(bad) is bad
    (sender, kwargs) = failed.calls[-1]
    assert sender is comp and kwargs["stage"] == "trigger"
    assert type(kwargs["error"]).__name__ == "InvalidConversationError"


def test_a_keyboard_interrupt_is_not_swallowed():
    class Stop(Strategy):
        name = "stop"

        def rewrite(self, messages, *, target, counter):
            raise KeyboardInterrupt

    c = counter()
    comp = Compactor(CompactionPipeline(counter=c).run(Stop()), WINDOW, counter=c)
    with pytest.raises(KeyboardInterrupt):
        comp.before_call([sized(user, 800)])


def test_messages_must_be_messages():
    comp = compactor()
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        comp.before_call([user("a"), {"role": "user", "content": "b"}])
    with pytest.raises(TypeError):
        comp.before_call("hello")


# -- hysteresis --------------------------------------------------------------------------------


def run_agent(comp: Compactor, sizes: list[int]):
    """An agent loop: one model call per step, then an assistant reply, a tool call and its
    result of the given sizes are appended to the agent's own full list."""
    messages: list[Message] = [system("you are an agent"), sized(user, 20, 0)]
    sent: list[tuple[Sequence[Message], bool, int]] = []
    for step, size in enumerate(sizes):
        before = comp.stats.compactions
        request = comp.before_call(messages)
        sent.append((tuple(request), comp.stats.compactions > before, comp.stats.last_estimate))
        call = ToolCall(f"c{step}", "read")
        messages.append(assistant(f"step {step}", [call]))
        messages.append(tool(call.id, f"{step}:".ljust(max(size - 4, 1), "y"), name="read"))
    return messages, sent


def check_hysteresis(comp: Compactor, sent) -> None:
    count = comp.counter.count_messages
    previous: Sequence[Message] | None = None
    for request, compacted, estimate in sent:
        validate(request)
        if compacted:
            assert estimate >= comp.threshold
            assert count(request) <= comp.target
        else:
            assert estimate < comp.threshold
            if previous is not None:
                # between compactions every request extends the previous one: cacheable
                assert request[: len(previous)] == previous
        previous = request


def test_hysteresis_over_a_growing_conversation():
    comp = compactor()
    messages, sent = run_agent(comp, [60] * 60)
    compactions = [i for i, (_, c, _) in enumerate(sent) if c]
    assert len(compactions) >= 3
    # no compaction until the window is 70% full again: the gaps are all several steps
    gaps = [b - a for a, b in itertools.pairwise(compactions)]
    assert min(gaps) > 1
    check_hysteresis(comp, sent)
    # right after a compaction we are at or under 40%; just before the next, under 70%
    for i in compactions[1:]:
        assert sent[i - 1][2] < comp.threshold
        assert sent[i][2] >= comp.threshold
    # the agent's own list was never touched: it keeps everything
    assert len(messages) == 2 + 2 * 60


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=5, max_value=150), min_size=1, max_size=40))
def test_hysteresis_property(sizes):
    comp = compactor()
    _, sent = run_agent(comp, sizes)
    check_hysteresis(comp, sent)
    for request, _, _ in sent:
        assert comp.counter.count_messages(request) <= WINDOW


def test_the_agent_may_adopt_the_returned_request():
    comp = compactor()
    messages = [system("s"), *(sized(user if i % 2 == 0 else assistant, 100, i) for i in range(7))]
    out = comp.before_call(messages)
    assert out is not messages
    adopted = [*out, sized(user, 10, 99)]
    again = comp.before_call(adopted)
    assert again is adopted  # mapped to itself: no recompaction, no copy
    assert comp.stats.compactions == 1


def test_reset_forgets_the_view():
    comp = compactor()
    messages = [system("s"), *(sized(user if i % 2 == 0 else assistant, 100, i) for i in range(7))]
    comp.before_call(messages)
    assert comp.compacted
    comp.reset()
    assert not comp.compacted and comp.view is None


def test_async_twin_compacts_the_same():
    messages = [system("s"), *(sized(user if i % 2 == 0 else assistant, 100, i) for i in range(7))]
    sync, async_ = compactor(), compactor()
    expected = sync.before_call(messages)
    got = asyncio.run(async_.abefore_call(messages))
    assert tuple(got) == tuple(expected)
    small = [sized(user, 10)]
    fresh = compactor()
    assert asyncio.run(fresh.abefore_call(small)) is small


def test_marks_are_not_moved_by_floating_point():
    c = Compactor(CompactionPipeline(), 10, compact_at=0.7, compact_to=0.3, counter=counter())
    assert (c.threshold, c.target) == (7, 3)  # 0.7 * 10 == 7.000000000000001


# -- a usage the trigger cannot read never ends the turn -------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": None, "completion_tokens": None},
        {"input_tokens": None},
        {"total_tokens": 700},  # a server that reports only totals
        SimpleNamespace(prompt_tokens=None),
        {"prompt_tokens": -5},
    ],
)
def test_an_unreadable_usage_is_ignored_and_counted_locally(usage):
    c = compactor()
    messages = [sized(user, 50)]
    c.before_call(messages)
    messages.append(sized(assistant, 10))
    assert c.before_call(messages, usage=usage) is messages
    assert not c.stats.anchored
    assert c.stats.last_estimate == c.counter.count_messages(messages)
    assert asyncio.run(c.abefore_call(messages, usage=usage)) is messages


def test_negative_usage_fields_are_an_error():
    with pytest.raises(ValueError, match="negative"):
        usage_tokens({"prompt_tokens": -5})
    with pytest.raises(ValueError, match="negative"):
        usage_tokens({"input_tokens": 10, "cache_read_input_tokens": -20})


class TrimLast(Strategy):
    """Saves a few tokens by trimming the newest message's text: too little to be worth it."""

    name = "trim_last"

    def rewrite(self, messages, *, target, counter):
        last = messages[-1]
        if len(last.content) < 10:
            return None
        return (*messages[:-1], last.replace(content=last.content[:-10]))


class Declines(Strategy):
    name = "declines"

    def rewrite(self, messages, *, target, counter):
        return None


def test_a_saving_below_the_minimum_is_not_taken() -> None:
    c = counter()
    compactor = Compactor(CompactionPipeline().use(TrimLast), WINDOW, counter=c)
    msgs = [system("s" * 96), user("u" * 700)]
    sent = compactor.before_call(msgs)
    assert compactor.stats.attempts == 1
    assert compactor.last_result is not None and compactor.last_result.changed
    assert sent is msgs  # 10 tokens are not worth a cache miss
    assert compactor.stats.compactions == 0


def test_a_small_saving_is_taken_when_the_request_would_not_fit() -> None:
    c = counter()
    compactor = Compactor(CompactionPipeline().use(TrimLast), WINDOW, counter=c)
    msgs = [system("s" * 96), user("u" * 905)]  # 1,009 tokens: over the window
    sent = compactor.before_call(msgs)
    assert sent is not msgs
    assert c.count_messages(sent) < c.count_messages(msgs)


def test_a_ladder_that_cannot_help_is_not_asked_on_every_call() -> None:
    c = counter()
    compactor = Compactor(CompactionPipeline().use(Declines), WINDOW, counter=c)
    msgs = [system("s" * 96), user("u" * 600)]  # 708 tokens: at the 70% mark
    compactor.before_call(msgs)
    assert compactor.stats.attempts == 1
    grown = 0
    while grown < 40:  # below the 5% (50-token) minimum saving
        msgs.append(assistant("a" * 6))  # 10 tokens each
        grown += 10
        compactor.before_call(msgs)
    assert compactor.stats.attempts == 1
    msgs.append(assistant("a" * 6))
    compactor.before_call(msgs)  # grown by 50: worth asking again
    assert compactor.stats.attempts == 2


def test_backing_off_never_sends_more_than_the_window() -> None:
    c = counter()
    compactor = Compactor(CompactionPipeline().use(TrimLast), WINDOW, counter=c)
    msgs = [system("s" * 96), user("u" * 600)]
    compactor.before_call(msgs)  # too small a saving: backs off
    msgs.append(assistant("a" * 400))  # far over the window now
    sent = compactor.before_call(msgs)
    assert compactor.stats.attempts == 2
    assert c.count_messages(sent) < c.count_messages(msgs)


@pytest.mark.parametrize("bad", [-0.1, 1.0, "0.1", True])
def test_min_saving_is_validated(bad) -> None:
    with pytest.raises(ValueError, match="min_saving"):
        Compactor(CompactionPipeline(), WINDOW, min_saving=bad)
