"""The strategy contract as seed 004 states it: a name, ``rewrite(messages, *, target)``, and
NotImplementedError from a subclass that answers neither."""

from __future__ import annotations

import asyncio

import pytest

import compaction
from compaction import ApproximateCounter, CompactionPipeline, Strategy, events
from compaction.strategies import SlidingWindowStrategy
from compaction.strategies.sliding_window import SlidingWindow
from tests.test_pipeline import convo


def test_a_subclass_without_a_name_is_a_type_error_naming_the_class() -> None:
    with pytest.raises(TypeError, match=r"Nameless must set `name`"):

        class Nameless(Strategy):
            def rewrite(self, messages, *, target):
                return None


def test_an_empty_or_non_str_name_is_refused_too() -> None:
    with pytest.raises(TypeError, match="Empty"):

        class Empty(Strategy):
            name = ""

    with pytest.raises(TypeError, match="Numbered"):

        class Numbered(Strategy):
            name = 7  # type: ignore[assignment]


def test_an_abstract_base_opts_out_and_its_subclasses_are_checked() -> None:
    class Base(Strategy, abstract=True):
        def helper(self) -> str:
            return "shared"

    class Concrete(Base):
        name = "concrete"

    assert Concrete().helper() == "shared"
    with pytest.raises(TypeError, match="StillNameless"):

        class StillNameless(Base):
            pass


def test_a_name_is_inherited() -> None:
    class Parent(Strategy):
        name = "parent"

    class Child(Parent):
        pass

    assert Child.name == "parent"


class SeedSignature(Strategy):
    """Written to seed 004's signature: ``rewrite(conversation, target:)``, no counter."""

    name = "seed_signature"

    def __init__(self) -> None:
        self.calls = 0

    def rewrite(self, conversation, *, target):
        self.calls += 1
        return conversation[:1] + conversation[-2:]


def test_a_rewrite_without_counter_works_in_a_ladder_standalone_and_async() -> None:
    counter = ApproximateCounter()
    msgs = convo()
    target = counter.count_messages(msgs) // 2
    failures: list[dict] = []
    with events.failed.connected_to(lambda s, **kw: failures.append(kw)):
        strategy = SeedSignature()
        result = CompactionPipeline(counter=counter).use(strategy).compact(msgs, target=target)
        assert result.changed and result.applied[0].strategy == "seed_signature"
        assert len(strategy.apply(msgs, target, counter=counter)) == 3
        again = asyncio.run(
            CompactionPipeline(counter=counter).run(strategy).acompact(msgs, target=target)
        )
        assert again.changed
    assert failures == []
    assert strategy.calls == 3


def test_counter_is_passed_to_a_rewrite_that_takes_it_by_name_or_kwargs() -> None:
    got: list[object] = []

    class ByName(Strategy):
        name = "by_name"

        def rewrite(self, messages, *, target, counter):
            got.append(counter)

    class ByKwargs(Strategy):
        name = "by_kwargs"

        def rewrite(self, messages, *, target, **kwargs):
            got.append(kwargs.get("counter"))

    counter = ApproximateCounter()
    msgs = convo()
    CompactionPipeline(counter=counter).use(ByName()).use(ByKwargs()).compact(msgs, target=10)
    assert got == [counter, counter]


def test_an_async_rewrite_without_counter_is_awaited() -> None:
    class AsyncSeed(Strategy):
        name = "async_seed"

        async def arewrite(self, messages, *, target):
            await asyncio.sleep(0)
            return messages[:1] + messages[-2:]

    counter = ApproximateCounter()
    msgs = convo()
    result = asyncio.run(
        CompactionPipeline(counter=counter).use(AsyncSeed()).acompact(msgs, target=10)
    )
    assert result.applied[0].strategy == "async_seed"


class NoRewrite(Strategy):
    name = "no_rewrite"


def test_a_subclass_without_rewrite_raises_not_implemented_error() -> None:
    with pytest.raises(NotImplementedError, match="NoRewrite must implement rewrite"):
        NoRewrite().rewrite((), target=1, counter=ApproximateCounter())


def test_not_implemented_error_is_a_reported_failure_and_strict_runs_raise_it() -> None:
    counter = ApproximateCounter()
    msgs = convo()
    failures: list[dict] = []
    with events.failed.connected_to(lambda s, **kw: failures.append(kw)):
        result = CompactionPipeline(counter=counter).use(NoRewrite()).compact(msgs, target=10)
    assert not result.changed
    assert isinstance(result.failures[0].error, NotImplementedError)
    assert [f["stage"] for f in failures] == ["rewrite"]
    with pytest.raises(NotImplementedError):
        CompactionPipeline(counter=counter, strict=True).use(NoRewrite()).compact(msgs, target=10)


def test_seed_000_users_can_import_sliding_window_strategy() -> None:
    assert SlidingWindowStrategy is SlidingWindow
    assert compaction.SlidingWindowStrategy is SlidingWindow
    assert "SlidingWindowStrategy" in compaction.__all__
