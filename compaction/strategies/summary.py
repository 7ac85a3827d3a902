"""Summary: the terminal. Stretches of the conversation give way to summaries of them.

It is the only strategy that may spend a model call, so it sits at the bottom of the ladder and
is reached only when the free layers could not get under target. It works in rounds until the
conversation fits or nothing more may be given up, and each round gives up as little as it can,
in this order:

1. the oldest whole historical turns (never the system block, never the task anchor);
2. when only summaries are left of the history, the oldest summaries, combined (two at least);
3. the oldest steps of the current task, keeping the newest ``keep_steps``;
4. the current task's own summaries, combined.

Within a region raw messages are summarised before summaries are combined. "As little as it
can" is decided without calling the summariser: the stretch taken is the shortest one (from
the oldest end) whose replacement by a summary of the expected size would reach target, or the
whole region when none would. One summariser call per round.

A summary takes the place of the oldest message it replaces, as a ``user`` message (every
provider accepts one anywhere after the system block), with its provenance in ``meta`` (see
[`compaction.memory.transcript.mark`][]), so it is never taken for the task anchor.

Failure never costs the conversation (LangChain's summary failure wipes history): a round whose
summariser raises, times out, answers nothing, or answers something no smaller than what it
replaces ends the loop, and the last good round's conversation is answered. When the first
round failed there is nothing to answer, and the failure is raised to the pipeline, which keeps
the conversation and shows it where users look (``result.failures``, the ``failed`` event),
never as a quiet decline. The timeout is a deadline for the whole call: a late answer is
dropped, and a summariser left running does not keep the program alive. After ``max_failures``
failed runs in a row the breaker opens and the summariser is not called again until
[`Summary.reset`][], so a broken endpoint is not paid every turn.

This module holds the options, the breaker and the loop of rounds; the planning of a round
(which never calls the summariser) is in ``_summary_plan`` and the summariser calls (deadline,
sync and async, reporting) are in ``_summary_call``, each small enough to read on its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, ClassVar

from .._log import log
from .._text import plural
from ..messages import Message
from ..result import Skip
from ..strategy import Capabilities, Run, Strategy, current_labels
from ..summarizers.base import INSTRUCTIONS, is_async_summarizer
from ..summarizers.deadline import check_timeout
from ..summarizers.extractive import ExtractiveSummarizer
from ..tokens import TokenCounter
from ._summary_call import NotSmaller, Recall, _SummaryCalls
from ._summary_plan import _RoundPlanner

__all__ = ["Recall", "Summary"]

#: Set on a summariser's exception that the round already reported, before it is raised.
_REPORTED = "_compaction_reported"


def _check_int(option: str, value: Any, minimum: int, why: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"Summary {option} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"Summary {option} must be >= {minimum}, got {value}: {why}")


class _SummaryCapabilities:
    """``Summary.capabilities``: the class's worst case, or an instance's own summariser's."""

    #: What a summariser that says nothing about itself may do.
    ANY = Capabilities(
        model_call=True,
        lossless=False,
        keeps_tool_pairs=True,
        deterministic=False,
        writes_ledger=True,
    )

    def __get__(self, instance: Any, owner: Any = None) -> Capabilities:
        summarizer = getattr(instance, "summarizer", None)
        if summarizer is None:
            return self.ANY
        # A summariser states what it is with ``model_call``/``deterministic`` attributes
        # (ExtractiveSummarizer does); one that does not is taken to call a model.
        return Capabilities(
            model_call=bool(getattr(summarizer, "model_call", True)),
            lossless=False,
            keeps_tool_pairs=True,
            deterministic=bool(getattr(summarizer, "deterministic", False)),
            writes_ledger=True,
        )


class Summary(_RoundPlanner, _SummaryCalls, Strategy):
    """Replaces the oldest stretches of the conversation with summaries, round by round."""

    name: ClassVar[str] = "summary"
    # The class may call a model (ladders and tools that must stay free read this); an
    # instance answers for its own summariser, so the offline extractive default is reported
    # as what it is: no model call, deterministic.
    capabilities: ClassVar[Capabilities] = _SummaryCapabilities()  # type: ignore[assignment]

    def __init__(
        self,
        summarizer: Any = None,
        *,
        keep_steps: int = 1,
        max_failures: int | None = 3,
        timeout: float | None = None,
        instructions: str | None = None,
        summary_tokens: int | None = None,
        min_tokens: int = 200,
        recall: Recall | None = None,
    ) -> None:
        """
        - ``summarizer``: a callable ``(transcript, instructions) -> str`` (or awaitable);
          default [`ExtractiveSummarizer`][compaction.summarizers.extractive.ExtractiveSummarizer]
          (offline, free). One with a sync ``summarize_messages(messages, instructions)``
          is given the stretch's messages instead, and must answer what it would for their
          rendered transcript: the stretch is then never rendered whole.
        - ``keep_steps``: the newest steps of the current task that are never summarised (at
          least 1: the model has not acted on the newest tool output yet). The default, 1, is
          below [`SlidingWindow`][]'s 2 on purpose: as the terminal under a sliding window,
          the summary must be allowed to give up something the free layer kept, or it would
          never have anything to do.
        - ``max_failures``: failed runs in a row after which the summariser is no longer
          called until [`reset`][] (None: never stop calling it).
        - ``timeout``: seconds one summariser call may take, a deadline for the whole call (a
          finite number > 0, or None for none); a late answer is dropped and fails the round.
        - ``instructions``: extra text appended to the standard prompt (which already asks
          for the fixed sections and says the transcript is data, not instructions).
        - ``summary_tokens``: the size a summary is expected to take at most, used to choose
          how much to give up per round; default the summariser's ``max_tokens``, else 1024.
        - ``min_tokens``: a stretch smaller than this is not worth a summariser call (its
          summary would not be smaller), so that region is passed over.
        - ``recall``: where originals can be looked up by recall id, e.g. a session's
          ``recall`` (``Session.recall``): a callable ``(ref) -> Message | None``. A region
          holding placeholders or cut messages is then summarised from the originals they
          stand for, not from the placeholders (a summary of a placeholder
          would carry only its name). None: from what is there.
        """
        if summarizer is None:
            summarizer = ExtractiveSummarizer()
        if not callable(summarizer):
            raise TypeError(
                "Summary summarizer must be a callable (transcript, instructions) -> str, "
                f"got {type(summarizer).__name__}"
            )
        _check_int("keep_steps", keep_steps, 1, "the newest step's output is not acted on yet")
        if max_failures is not None:
            _check_int("max_failures", max_failures, 1, "use None to never open the breaker")
        if timeout is not None:
            timeout = check_timeout("Summary timeout", timeout)
        if instructions is not None and not isinstance(instructions, str):
            raise TypeError(
                f"Summary instructions must be a str, got {type(instructions).__name__}"
            )
        if summary_tokens is None:
            cap = getattr(summarizer, "max_tokens", None)
            summary_tokens = cap if isinstance(cap, int) and cap > 0 else 1024
        else:
            _check_int("summary_tokens", summary_tokens, 1, "a summary takes some tokens")
        self.summarizer = summarizer
        self.keep_steps = keep_steps
        self.max_failures = max_failures
        self.timeout = timeout
        self.instructions = f"{INSTRUCTIONS}\n\n{instructions}" if instructions else INSTRUCTIONS
        _check_int("min_tokens", min_tokens, 0, "a token count")
        self.summary_tokens = summary_tokens
        self.min_tokens = min_tokens
        if recall is not None and not callable(recall):
            raise TypeError(
                f"Summary recall must be a callable (ref) -> Message | None, "
                f"got {type(recall).__name__}"
            )
        self.recall = recall
        self._failures = 0

    # -- the breaker ---------------------------------------------------------------------------

    @property
    def failures(self) -> int:
        """Failed runs in a row so far (a run with at least one good round resets it)."""
        return self._failures

    @property
    def breaker_open(self) -> bool:
        """True when the summariser is no longer called (until [`reset`][])."""
        return self.max_failures is not None and self._failures >= self.max_failures

    def reset(self) -> None:
        """Close the breaker: the summariser is called again on the next run."""
        self._failures = 0

    @property
    def is_async(self) -> bool:
        """True when the summariser can only be awaited: use ``acompact`` with it."""
        # An ``acall`` serves the async path only: a summariser whose own call is a coroutine
        # still cannot be used by ``compact``.
        return is_async_summarizer(self.summarizer)

    # -- the seed-000 protocol -----------------------------------------------------------------

    def explain(self) -> str:
        breaker = (
            f"; after {plural(self.max_failures, 'failed run')} in a row it stops calling it "
            "until reset"
            if self.max_failures is not None
            else ""
        )
        return (
            f"Summarises the oldest turns, then combines old summaries, then the current "
            f"task's oldest steps (keeping the newest {self.keep_steps}) with the "
            f"{self.summarizer_name} summariser, until under target{breaker}."
        )

    def can_handle(self, messages: Sequence[Message]) -> float:
        if self.breaker_open:
            return 0.0
        return super().can_handle(messages)

    def __repr__(self) -> str:
        return (
            f"Summary(summarizer={self.summarizer!r}, keep_steps={self.keep_steps}, "
            f"max_failures={self.max_failures}, timeout={self.timeout})"
        )

    # -- one run: the breaker's count and the answer -------------------------------------------

    def _settle(
        self, called: bool, good: tuple[Message, ...] | None, error: BaseException | None
    ) -> None:
        if good is not None:
            self._failures = 0
        elif isinstance(error, NotSmaller) and not self.capabilities.model_call:
            pass  # a free summariser that declines costs nothing: no breaker for it
        elif called:
            self._failures += 1
            if self.breaker_open:
                log.warning(
                    "summary.breaker_open",
                    summarizer=self.summarizer_name,
                    failures=self._failures,
                    labels=dict(current_labels()),
                )

    def _closed(self) -> bool:
        if self.breaker_open:
            log.info(
                "summary.skipped",
                reason="breaker_open",
                failures=self._failures,
                labels=dict(current_labels()),
            )
            return False
        return True

    # -- the rounds: sync ----------------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | Skip | None:
        if self.is_async:
            # A programming error, not a summariser failure: it does not count for the breaker.
            raise TypeError(
                f"Summary's summariser {self.summarizer_name} is async; run the ladder with "
                "`await pipeline.acompact(...)` instead of `compact(...)`"
            )
        if not self._closed():
            return Skip("breaker_open")
        current, good, called, error = messages, None, False, None
        carried = None  # each round's plan hands the next what the messages it kept count
        while (
            plan := self._plan(current, target=target, counter=counter, carried=carried)
        ) is not None:
            called = True
            summary, error = self._round_sync(plan, counter)
            if summary is None:
                break
            current = good = plan.apply(summary)
            carried = plan.carried(summary, counter)
        self._settle(called, good, error)
        return self._answer(good, error)

    def _answer(
        self, good: tuple[Message, ...] | None, error: BaseException | None
    ) -> tuple[Message, ...] | Skip | None:
        if good is None and isinstance(error, NotSmaller):
            # The summary would not be smaller than what it replaces: the layer declines,
            # quietly, with its reason (``result.skipped``); not a failure of the summariser.
            return Skip("summary_not_smaller")
        if good is None and error is not None:
            # Nothing taken because the summariser failed: that is a failure, not a decline
            # (a dead endpoint must not read as reason="declined", error=None). The pipeline
            # keeps the conversation and records it with its error in result.failures.
            # Marked on the exception itself, not on this strategy: one Summary may serve
            # several runs at once.
            with contextlib.suppress(AttributeError, TypeError):
                setattr(error, _REPORTED, True)
            raise error
        return good

    def _failed(self, run: Run, exc: BaseException, stage: str) -> None:
        # The round reported this failure as it happened (``summarized`` and ``failed`` with
        # stage "summarize"); the pipeline's report of the same exception would count it twice.
        if getattr(exc, _REPORTED, False):
            return
        super()._failed(run, exc, stage)

    # -- the rounds: async ---------------------------------------------------------------------

    async def arewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | Skip | None:
        if not self._closed():
            return Skip("breaker_open")
        current, good, called, error = messages, None, False, None
        carried = None  # each round's plan hands the next what the messages it kept count
        while (
            plan := self._plan(current, target=target, counter=counter, carried=carried)
        ) is not None:
            called = True
            summary, error = await self._round_async(plan, counter)
            if summary is None:
                break
            current = good = plan.apply(summary)
            carried = plan.carried(summary, counter)
        self._settle(called, good, error)
        return self._answer(good, error)
