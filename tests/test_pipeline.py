"""The ladder's rules, kept once in the base class and the pipeline."""

from __future__ import annotations

import asyncio
import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import (
    ApproximateCounter,
    Budget,
    CompactionPipeline,
    InvalidConversationError,
    Message,
    ToolCall,
    events,
    validate,
)
from compaction.messages import assistant, system, tool, user
from tests.conversations import conversations
from tests.ladder_support import (
    AsyncToTarget,
    Bigger,
    BreaksPairs,
    Declines,
    DropOldestGroup,
    Raises,
    SameSize,
    ToTarget,
)


def convo(n_turns: int = 6, size: int = 400) -> list[Message]:
    msgs = [system("You are a coding agent.")]
    for i in range(n_turns):
        msgs.append(user(f"task {i} " + "u" * size))
        call = ToolCall(f"c{i}", "bash", '{"command": "ls"}')
        msgs.append(assistant("", [call]))
        msgs.append(tool(f"c{i}", "o" * size))
    return msgs


@pytest.fixture
def counter() -> ApproximateCounter:
    return ApproximateCounter()


def total(msgs, counter) -> int:
    return counter.count_messages(msgs)


class TestRules:
    def test_a_layer_under_target_is_never_called(self, counter) -> None:
        msgs = convo()
        first, second = ToTarget(), DropOldestGroup()
        pipeline = CompactionPipeline(counter=counter).use(first).run(second)
        result = pipeline.compact(msgs, target=total(msgs, counter) - 1)
        assert len(first.asked) == 1
        assert second.asked == []
        assert result.fits and result.changed

    def test_nothing_is_asked_when_already_under_target(self, counter) -> None:
        msgs = convo()
        layer = ToTarget()
        result = (
            CompactionPipeline(counter=counter)
            .use(layer)
            .compact(msgs, target=total(msgs, counter))
        )
        assert layer.asked == []
        assert not result.changed
        assert list(result.messages) == msgs

    @pytest.mark.parametrize("refused", [SameSize, Bigger, BreaksPairs])
    def test_a_layer_that_does_not_help_is_refused_and_the_next_is_asked(
        self, counter, refused
    ) -> None:
        msgs = convo()
        bad, good = refused(), ToTarget()
        target = total(msgs, counter) // 2
        result = CompactionPipeline(counter=counter).use(bad).use(good).compact(msgs, target=target)
        assert len(bad.asked) == 1 and len(good.asked) == 1
        assert [a.strategy for a in result.applied] == ["to_target"]
        reason = {SameSize: "did_not_shrink", Bigger: "did_not_shrink", BreaksPairs: "invalid"}
        assert [(d.strategy, d.reason) for d in result.declined] == [(bad.name, reason[refused])]
        validate(result.messages)

    def test_a_declining_layer_passes_on(self, counter) -> None:
        msgs = convo()
        declines, good = Declines(), ToTarget()
        result = (
            CompactionPipeline(counter=counter)
            .use(declines)
            .use(good)
            .compact(msgs, target=total(msgs, counter) // 2)
        )
        assert result.declined[0].reason == "declined"
        assert result.fits

    def test_terminal_reached_only_when_needed(self, counter) -> None:
        msgs = convo(n_turns=8)
        free, terminal = DropOldestGroup(), ToTarget()
        pipeline = CompactionPipeline(counter=counter).use(free).run(terminal)
        # dropping one group (the first user message) in the free layer is enough
        one_group = total(msgs[1:2], counter)
        pipeline.compact(msgs, target=total(msgs, counter) - one_group)
        assert terminal.asked == []
        # far below: the free layer's single step is not enough, so the terminal runs
        result = pipeline.compact(msgs, target=total(msgs, counter) // 3)
        assert len(terminal.asked) == 1
        assert [a.strategy for a in result.applied] == ["drop_oldest_group", "to_target"]

    def test_no_terminal_means_the_bottom_declines(self, counter) -> None:
        msgs = convo()
        result = CompactionPipeline(counter=counter).use(Declines()).compact(msgs, target=10)
        assert not result.changed and not result.fits
        assert result.messages == tuple(msgs)

    def test_a_raising_layer_keeps_the_last_good_state(self, counter) -> None:
        msgs = convo()
        first, boom, after = DropOldestGroup(), Raises(), Declines()
        failures = []
        receiver = lambda sender, **kw: failures.append((sender, kw["error"]))  # noqa: E731
        with events.failed.connected_to(receiver):
            result = (
                CompactionPipeline(counter=counter)
                .use(first)
                .use(boom)
                .use(after)
                .compact(msgs, target=10)
            )
        assert len(after.asked) == 1  # went on to the next layer
        assert [a.strategy for a in result.applied] == ["drop_oldest_group"]
        assert result.failures[0].strategy == "raises"
        assert failures[0][0] is boom and isinstance(failures[0][1], RuntimeError)
        validate(result.messages)

    def test_strict_reraises_after_reporting_once(self, counter) -> None:
        failures = []
        receiver = lambda sender, **kw: failures.append(kw["name"])  # noqa: E731
        with events.failed.connected_to(receiver), pytest.raises(RuntimeError, match="exploded"):
            CompactionPipeline(counter=counter, strict=True).use(Raises()).compact(
                convo(), target=10
            )
        assert failures == ["raises"]

    def test_budget_target(self, counter) -> None:
        msgs = convo()
        budget = Budget(max_tokens=total(msgs, counter), reserved_tokens=100)
        result = CompactionPipeline(counter=counter).use(ToTarget()).compact(msgs, target=budget)
        assert result.target == budget.available
        assert result.after <= budget.available

    def test_registry_keys_and_classes_in_use(self, counter) -> None:
        from compaction import registry

        registry.register("to_target_test", ToTarget)
        try:
            pipeline = CompactionPipeline(counter=counter).use("to_target_test")
            assert pipeline.strategies[0].name == "to_target"
        finally:
            registry.unregister("to_target_test")


class TestBadInput:
    @pytest.mark.parametrize("target", [0, -5])
    def test_non_positive_target(self, target) -> None:
        with pytest.raises(ValueError, match="target"):
            CompactionPipeline().compact(convo(), target=target)

    @pytest.mark.parametrize("target", ["100", 10.5, None, True])
    def test_target_of_the_wrong_type(self, target) -> None:
        with pytest.raises(TypeError, match="target"):
            CompactionPipeline().compact(convo(), target=target)

    def test_reserve_exceeding_maximum(self) -> None:
        with pytest.raises(ValueError, match="reserved_tokens"):
            Budget(100, 100)
        with pytest.raises(ValueError, match="max_tokens"):
            Budget(0)
        with pytest.raises(ValueError, match="reserved_tokens"):
            Budget(100, -1)

    @pytest.mark.parametrize("thing", [object(), 3, dict, "no_such_key"])
    def test_non_strategy_in_use(self, thing) -> None:
        with pytest.raises((TypeError, KeyError)) as info:
            CompactionPipeline().use(thing)
        assert "strateg" in str(info.value).lower()

    def test_options_for_an_instance(self) -> None:
        with pytest.raises(TypeError, match="options"):
            CompactionPipeline().use(ToTarget(), keep=1)

    def test_messages_must_be_messages(self) -> None:
        with pytest.raises(TypeError, match=r"messages\[1\]"):
            CompactionPipeline().compact([user("x"), {"role": "user"}], target=10)
        with pytest.raises(TypeError, match="sequence"):
            CompactionPipeline().compact("hello", target=10)

    def test_invalid_conversation_is_refused_before_any_work(self, counter) -> None:
        layer = ToTarget()
        with pytest.raises(InvalidConversationError) as info:
            CompactionPipeline(counter=counter).use(layer).compact(
                [user("u"), tool("x", "orphan")], target=1
            )
        assert info.value.index == 1
        assert layer.asked == []


class TestEvents:
    def test_events_fire_in_order_with_documented_arguments(self, counter) -> None:
        msgs = convo()
        seen: list[tuple[str, dict]] = []
        signals = [
            events.started,
            events.strategy_applied,
            events.strategy_declined,
            events.compacted,
            events.duration,
        ]

        def make(name):
            return lambda sender, **kw: seen.append((name, kw))

        receivers = [(sig, make(sig.name)) for sig in signals]
        for sig, fn in receivers:
            sig.connect(fn)
        try:
            before = total(msgs, counter)
            CompactionPipeline(counter=counter).use(Declines()).use(ToTarget()).compact(
                msgs, target=before // 2, labels={"session": "s1"}
            )
        finally:
            for sig, fn in receivers:
                sig.disconnect(fn)
        names = [n for n, _ in seen]
        assert names == [
            "compaction.started",
            "compaction.strategy_declined",
            "compaction.duration",
            "compaction.strategy_applied",
            "compaction.duration",
            "compaction.duration",
            "compaction.compacted",
        ]
        started = seen[0][1]
        assert started == {
            "tokens": before,
            "target": before // 2,
            "messages": len(msgs),
            "labels": {"session": "s1"},
        }
        declined = seen[1][1]
        assert declined["name"] == "declines" and declined["reason"] == "declined"
        applied = seen[3][1]
        assert applied["before"] == before and applied["after"] <= before // 2
        assert seen[4][1]["scope"] == "strategy" and seen[5][1]["scope"] == "run"
        assert all(kw["seconds"] >= 0 and kw["ok"] for n, kw in seen if n.endswith("duration"))
        done = seen[-1][1]
        assert done["before"] == before and done["after"] == applied["after"]
        assert [a.strategy for a in done["applied"]] == ["to_target"]
        assert done["changed"] and done["fits"] and done["labels"] == {"session": "s1"}

    def test_duration_fires_when_work_raised(self, counter) -> None:
        got = []
        fn = lambda sender, **kw: got.append(kw)  # noqa: E731
        with events.duration.connected_to(fn), pytest.raises(RuntimeError):
            CompactionPipeline(counter=counter, strict=True).use(Raises()).compact(
                convo(), target=10
            )
        assert [(d["scope"], d["ok"]) for d in got] == [("strategy", False), ("run", False)]


class TestAsync:
    def test_async_and_sync_give_identical_results(self, counter) -> None:
        msgs = convo(10)
        target = total(msgs, counter) // 3
        sync = CompactionPipeline(counter=counter).use(Declines()).run(ToTarget())
        asyn = CompactionPipeline(counter=counter).use(Declines()).run(AsyncToTarget())
        a = sync.compact(msgs, target=target)
        b = asyncio.run(asyn.acompact(msgs, target=target))
        assert a.messages == b.messages
        assert (a.before, a.after) == (b.before, b.after)

    def test_acompact_does_not_block_the_loop(self, counter) -> None:
        ticks = []

        async def main():
            async def ticker():
                for _ in range(3):
                    ticks.append(1)
                    await asyncio.sleep(0)

            pipeline = CompactionPipeline(counter=counter).run(AsyncToTarget())
            msgs = convo(6)
            await asyncio.gather(
                pipeline.acompact(msgs, target=total(msgs, counter) // 2), ticker()
            )

        asyncio.run(main())
        assert len(ticks) == 3


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.floats(0.05, 1.2))
def test_input_untouched_and_output_valid(msgs, ratio) -> None:
    counter = ApproximateCounter()
    snapshot = copy.deepcopy(msgs)
    before = counter.count_messages(msgs)
    target = max(1, int(before * ratio))
    pipeline = CompactionPipeline(counter=counter).use(BreaksPairs()).use(DropOldestGroup())
    result = pipeline.compact(msgs, target=target)
    assert msgs == snapshot
    assert [m.meta for m in msgs] == [m.meta for m in snapshot]
    validate(result.messages)
    assert result.after <= result.before
    assert result.after == counter.count_messages(result.messages)
    if not result.changed:
        assert result.messages == tuple(msgs)


class TestCheckedOnce:
    """Within a run, the layers' own ``validate`` of what the run hands them is a look-up (the
    run checked it); outside a run nothing is remembered, and nothing is kept alive."""

    def test_a_layer_alone_still_refuses_invalid_input(self, counter) -> None:
        bad = [user("hi"), tool("nope", "orphan result")]
        with pytest.raises(InvalidConversationError):
            DropOldestGroup().apply(bad, target=1, counter=counter)

    @pytest.mark.parametrize("run_async", [False, True])
    def test_nothing_of_a_run_outlives_it(self, counter, run_async) -> None:
        import gc
        import weakref

        msgs = convo(4)
        pipeline = CompactionPipeline(counter=counter).use(DropOldestGroup()).run(ToTarget())
        target = total(msgs, counter) // 2
        if run_async:
            result = asyncio.run(pipeline.acompact(msgs, target=target))
        else:
            result = pipeline.compact(msgs, target=target)
        assert result.changed
        watched = [weakref.ref(m) for m in result.messages]
        del result, msgs
        gc.collect()
        assert all(ref() is None for ref in watched)
