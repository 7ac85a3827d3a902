"""Trials (a layer's fitting answer that shows fewer of the person's statements is set against
what the layers below make of the same input) are set up only when a layer below may answer
one: the last free layers of a ladder do not read the person's statements for nothing, and a
layer below that answers trials, or says nothing about them, still gets one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from compaction import CompactionPipeline
from compaction.engine import Run, execute
from compaction.memory import words
from compaction.messages import Message, assistant, system, user
from compaction.strategies.fit import Fit
from compaction.strategies.sliding_window import SlidingWindow
from compaction.strategies.summary import Summary
from compaction.strategy import Strategy
from compaction.tokens import CachingCounter


class Chars(CachingCounter):
    name = "chars"
    per_message = 12
    per_name = 0
    per_tool_call = 0

    def count_text(self, text: str) -> int:
        return len(text)


def _session() -> list[Message]:
    """65 short turns, 12 of them the person's rules and facts, each about its own thing."""
    msgs = [system("You are a coding assistant. Follow every rule in this session.")]
    for turn in range(65):
        if turn % 5 == 3:
            text = f"RULE: Never touch the module m{turn} without the phrase QX{turn}ZK."
        else:
            text = "Looking at the ingestion module now."
        msgs += [user(text), assistant("Noted. Continuing.")]
    return msgs


class Recorder(Strategy):
    """Declines, and records every conversation it is asked about."""

    name: ClassVar[str] = "recorder"

    def __init__(self, answers: bool) -> None:
        self.answers = answers
        self.asked: list[int] = []

    @property
    def answers_trials(self) -> bool:
        return self.answers

    def rewrite(self, messages: tuple[Message, ...], *, target: int) -> None:
        self.asked.append(len(messages))
        return None


def test_the_window_drops_the_persons_statements_at_this_size() -> None:
    # What the other tests rely on: the window's answer fits and hides some of them.
    msgs = _session()
    target = Chars().count_messages(msgs) * 35 // 100
    result = CompactionPipeline().use(SlidingWindow()).compact(msgs, target=target, counter=Chars())
    assert result.fits and [a.strategy for a in result.applied] == ["sliding_window"]
    shown = "\n".join(m.content for m in result.messages)
    assert any(f"QX{t}ZK" not in shown for t in range(3, 65, 5))


def test_a_layer_below_that_answers_trials_gets_one() -> None:
    msgs = _session()
    target = Chars().count_messages(msgs) * 35 // 100
    below = Recorder(answers=True)
    result = (
        CompactionPipeline()
        .use(SlidingWindow())
        .run(below)
        .compact(msgs, target=target, counter=Chars())
    )
    # Under target after the window, so only a trial reaches it, on what the window was handed.
    assert below.asked == [len(msgs)]
    assert [a.strategy for a in result.applied] == ["sliding_window"]


def test_no_trial_when_no_layer_below_answers_one() -> None:
    msgs = _session()
    target = Chars().count_messages(msgs) * 35 // 100
    below = Recorder(answers=False)
    result = (
        CompactionPipeline()
        .use(SlidingWindow())
        .run(below)
        .compact(msgs, target=target, counter=Chars())
    )
    assert below.asked == []
    assert [a.strategy for a in result.applied] == ["sliding_window"]


def test_the_summary_below_the_window_still_wins_the_trial_it_should() -> None:
    # The default ladder's summary answers trials; with it below, the window's answer is set
    # aside when the summary shows more of the person's statements (persons_words.feature).
    msgs = _session()
    target = Chars().count_messages(msgs) * 35 // 100
    result = (
        CompactionPipeline()
        .use(SlidingWindow())
        .use(Summary())
        .run(Fit())
        .compact(msgs, target=target, counter=Chars())
    )
    reasons = {d.strategy: d.reason for d in result.declined}
    assert reasons.get("sliding_window") == "fewer_statements"
    assert "summary" in [a.strategy for a in result.applied]


def test_a_layer_that_says_nothing_about_trials_may_answer_one() -> None:
    msgs = _session()
    target = Chars().count_messages(msgs) * 35 // 100
    seen: list[bool] = []

    class Plain:
        """A layer of the engine's own protocol, not a strategy: it says nothing of trials."""

        def __call__(self, run: Run, call_next: Any) -> None:
            seen.append(run.trial)
            call_next(run)

        async def acall(self, run: Run, call_next: Any) -> None:  # pragma: no cover
            seen.append(run.trial)
            await call_next(run)

    layers: Sequence[Any] = (SlidingWindow(), Plain())
    result = execute(object(), layers, msgs, target=target, counter=Chars())
    assert seen == [True]
    assert result.fits


def test_the_last_layer_reads_none_of_the_persons_statements() -> None:
    # Fit cuts the task, which drops some of its sentences; nothing below it could answer a
    # trial, so whether its answer shows fewer of them is never asked (reading them is the
    # costly part of a trial: about a microsecond a character).
    task = " ".join(f"Never change src/mod{i}.py without running test {i}." for i in range(200))
    msgs = [system("You are helpful."), user(task), assistant("ok")]
    target = Chars().count_messages(msgs) // 3
    words._read_message.cache_clear()
    for pipeline in (
        CompactionPipeline().run(Fit()),
        CompactionPipeline().use(SlidingWindow()).run(Fit()),
    ):
        result = pipeline.compact(msgs, target=target, counter=Chars())
        assert [a.strategy for a in result.applied] == ["fit"]
        assert result.messages[1].content != task
    assert words._read_message.cache_info().misses == 0
