"""Every ladder event, in order and with its arguments: a sync run, an async run, a no-op run,
and runs that raise (strict and not)."""

from __future__ import annotations

import asyncio

import pytest

from compaction import ApproximateCounter, CompactionPipeline, Strategy
from tests.event_recorder import recording
from tests.ladder_support import AsyncToTarget, Declines, DropOldestGroup, Raises, ToTarget
from tests.test_pipeline import convo

RUN_SIGNALS = (
    "started",
    "layer_entered",
    "strategy_applied",
    "strategy_declined",
    "duration",
    "failed",
    "layer_exited",
    "compacted",
)


@pytest.fixture
def counter() -> ApproximateCounter:
    return ApproximateCounter()


def test_layer_added_fires_for_use_and_run_in_order() -> None:
    declines, to_target, last = Declines(), ToTarget(), DropOldestGroup()
    with recording() as seen:
        pipeline = CompactionPipeline().use(declines).use(to_target).run(last)
    assert seen.names() == ["layer_added"] * 3
    assert [s for s in seen.senders("layer_added")] == [pipeline] * 3
    assert seen.of("layer_added") == [
        {"name": "declines", "strategy": declines, "position": 0, "terminal": False, "labels": {}},
        {
            "name": "to_target",
            "strategy": to_target,
            "position": 1,
            "terminal": False,
            "labels": {},
        },
        {
            "name": "drop_oldest_group",
            "strategy": last,
            "position": 2,
            "terminal": True,
            "labels": {},
        },
    ]


def test_layer_added_for_a_registry_key_names_the_built_strategy() -> None:
    with recording() as seen:
        CompactionPipeline().use("sliding_window")
    (added,) = seen.of("layer_added")
    assert added["name"] == "sliding_window"
    assert type(added["strategy"]).__name__ == "SlidingWindow"


def _expect_two_layer_run(seen, pipeline, first, second, before, after, target) -> None:
    assert seen.names(*RUN_SIGNALS) == [
        "started",
        "layer_entered",  # declines
        "strategy_declined",
        "duration",
        "layer_entered",  # to_target
        "strategy_applied",
        "duration",
        "layer_exited",  # to_target: under target, the terminal is not reached
        "layer_exited",  # declines, after the layer below it
        "duration",
        "compacted",
    ]
    assert seen.of("started") == [
        {"tokens": before, "target": target, "messages": 19, "labels": {"run": 1}}
    ]
    entered = seen.of("layer_entered")
    assert entered == [
        {
            "name": "declines",
            "position": 0,
            "tokens": before,
            "target": target,
            "asked": True,
            "labels": {"run": 1},
        },
        {
            "name": second.name,
            "position": 1,
            "tokens": before,
            "target": target,
            "asked": True,
            "labels": {"run": 1},
        },
    ]
    assert seen.senders("layer_entered") == [first, second]
    exited = seen.of("layer_exited")
    assert [(e["name"], e["position"], e["before"], e["after"]) for e in exited] == [
        (second.name, 1, before, after),
        ("declines", 0, before, after),
    ]
    assert [(e["asked"], e["passed"], e["ok"]) for e in exited] == [
        (True, False, True),
        (True, True, True),
    ]
    # The outer layer's time includes the inner one's.
    assert exited[1]["seconds"] >= exited[0]["seconds"] >= 0
    (compacted,) = seen.of("compacted")
    assert compacted["changed"] is True and compacted["before"] == before
    assert compacted["after"] == after < target
    assert seen.senders("compacted") == [pipeline]


def test_sync_run_events_in_order(counter) -> None:
    msgs = convo()
    before = counter.count_messages(msgs)
    first, second, last = Declines(), ToTarget(), DropOldestGroup()
    pipeline = CompactionPipeline(counter=counter).use(first).use(second).run(last)
    with recording() as seen:
        result = pipeline.compact(msgs, target=before // 2, labels={"run": 1})
    _expect_two_layer_run(seen, pipeline, first, second, before, result.after, before // 2)
    assert last.asked == []


def test_async_run_events_in_order(counter) -> None:
    msgs = convo()
    before = counter.count_messages(msgs)
    first, second = Declines(), AsyncToTarget()
    pipeline = CompactionPipeline(counter=counter).use(first).run(second)
    with recording() as seen:
        result = asyncio.run(pipeline.acompact(msgs, target=before // 2, labels={"run": 1}))
    _expect_two_layer_run(seen, pipeline, first, second, before, result.after, before // 2)


def test_a_run_under_target_enters_the_top_layer_unasked_and_is_not_a_compaction(counter) -> None:
    msgs = convo()
    before = counter.count_messages(msgs)
    top, below = ToTarget(), DropOldestGroup()
    pipeline = CompactionPipeline(counter=counter).use(top).run(below)
    with recording() as seen:
        pipeline.compact(msgs, target=before)
    assert seen.names(*RUN_SIGNALS) == [
        "started",
        "layer_entered",
        "layer_exited",
        "duration",
        "compacted",
    ]
    (entered,) = seen.of("layer_entered")
    assert entered["name"] == "to_target" and entered["asked"] is False
    (exited,) = seen.of("layer_exited")
    assert (exited["asked"], exited["passed"], exited["before"], exited["after"]) == (
        False,
        False,
        before,
        before,
    )
    (compacted,) = seen.of("compacted")
    assert compacted["changed"] is False and compacted["applied"] == ()
    (started,) = seen.of("started")
    assert started["tokens"] <= started["target"]  # how a subscriber tells a no-op run


def test_a_strict_run_that_raises_exits_every_layer_and_sends_no_compacted(counter) -> None:
    msgs = convo()
    before = counter.count_messages(msgs)
    top, boom = Declines(), Raises()
    pipeline = CompactionPipeline(counter=counter, strict=True).use(top).use(boom)
    with recording() as seen, pytest.raises(RuntimeError, match="layer exploded"):
        pipeline.compact(msgs, target=before // 2)
    assert seen.names(*RUN_SIGNALS) == [
        "started",
        "layer_entered",
        "strategy_declined",
        "duration",
        "layer_entered",
        "duration",
        "failed",
        "strategy_declined",
        "layer_exited",
        "layer_exited",
        "duration",
    ]
    exited = seen.of("layer_exited")
    assert [(e["name"], e["ok"], e["passed"]) for e in exited] == [
        ("raises", False, False),
        ("declines", False, True),  # it called the layer below, which raised
    ]
    assert seen.of("failed")[0]["stage"] == "rewrite"
    assert seen.of("duration")[-1]["scope"] == "run" and seen.of("duration")[-1]["ok"] is False


def test_a_layer_that_raises_in_a_lenient_run_is_exited_and_the_next_is_entered(counter) -> None:
    msgs = convo()
    before = counter.count_messages(msgs)
    pipeline = CompactionPipeline(counter=counter).use(Raises()).run(ToTarget())
    with recording() as seen:
        result = pipeline.compact(msgs, target=before // 2)
    assert result.changed
    assert seen.names("layer_entered", "failed", "strategy_applied", "layer_exited") == [
        "layer_entered",
        "failed",
        "layer_entered",
        "strategy_applied",
        "layer_exited",
        "layer_exited",
    ]
    assert all(e["ok"] for e in seen.of("layer_exited"))


def test_standalone_apply_sends_the_run_events_with_the_strategy_as_sender(counter) -> None:
    msgs = convo()
    before = counter.count_messages(msgs)
    strategy = ToTarget()
    with recording() as seen:
        strategy.apply(msgs, before // 2, counter=counter)
    assert seen.names("started", "layer_entered", "layer_exited", "compacted") == [
        "started",
        "layer_entered",
        "layer_exited",
        "compacted",
    ]
    assert seen.senders("started") == [strategy] and seen.senders("compacted") == [strategy]


def test_the_existing_signals_keep_their_keyword_arguments(counter) -> None:
    """Receivers written with fixed signatures (OpenTelemetry instrumentation) keep working."""
    msgs = convo()
    before = counter.count_messages(msgs)
    seen: list[str] = []

    def on_started(sender, *, tokens, target, messages, labels):
        seen.append("started")

    # ``compacted`` gained keywords (budget_use, skipped), which the events module says a
    # receiver must expect: the ones it had are all still sent.
    def on_compacted(sender, *, before, after, target, applied, changed, fits, labels, **later):
        assert set(later) <= {"budget_use", "skipped"}
        seen.append("compacted")

    def on_applied(sender, *, name, before, after, seconds, labels):
        seen.append("applied")

    def on_duration(sender, *, scope, name, seconds, ok, labels):
        seen.append("duration")

    from compaction import events

    pairs = [
        (events.started, on_started),
        (events.compacted, on_compacted),
        (events.strategy_applied, on_applied),
        (events.duration, on_duration),
    ]
    for signal, fn in pairs:
        signal.connect(fn)
    try:
        CompactionPipeline(counter=counter).use(ToTarget()).compact(msgs, target=before // 2)
    finally:
        for signal, fn in pairs:
            signal.disconnect(fn)
    assert seen == ["started", "applied", "duration", "duration", "compacted"]


class _Named(Strategy):
    name = "named"

    def rewrite(self, messages, *, target):
        return messages[:1] + messages[-1:]


def test_events_are_logged_through_structlog(counter) -> None:
    structlog = pytest.importorskip("structlog")
    msgs = convo()
    with structlog.testing.capture_logs() as logs:
        CompactionPipeline(counter=counter).use(_Named()).compact(msgs, target=10)
    names = [entry["event"] for entry in logs]
    assert names[:3] == ["layer.added", "compaction.started", "layer.entered"]
    assert "layer.exited" in names
    exited = next(e for e in logs if e["event"] == "layer.exited")
    assert exited["strategy"] == "named" and exited["asked"] is True


def test_an_async_strict_run_that_raises_sends_the_same_events(counter) -> None:
    class AsyncRaises(Raises):
        name = "async_raises"

        async def arewrite(self, messages, *, target, counter):
            await asyncio.sleep(0)
            raise RuntimeError("async layer exploded")

    msgs = convo()
    before = counter.count_messages(msgs)
    pipeline = CompactionPipeline(counter=counter, strict=True).use(Declines()).use(AsyncRaises())
    with recording() as seen, pytest.raises(RuntimeError, match="async layer exploded"):
        asyncio.run(pipeline.acompact(msgs, target=before // 2))
    assert seen.names(*RUN_SIGNALS) == [
        "started",
        "layer_entered",
        "strategy_declined",
        "duration",
        "layer_entered",
        "duration",
        "failed",
        "strategy_declined",
        "layer_exited",
        "layer_exited",
        "duration",
    ]
    assert [(e["name"], e["ok"]) for e in seen.of("layer_exited")] == [
        ("async_raises", False),
        ("declines", False),
    ]
