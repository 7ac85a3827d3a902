"""One strategy in the ladder, and the rules every strategy keeps.

The stack order is the policy. A layer that got the conversation under target never calls the
next one, so the strategies that cost nothing sit at the top and the one that spends a model
call is only reached when they could not get there.

A subclass answers ``Strategy.name`` and [`Strategy.rewrite`][], and nothing else. The
rules are kept here, once:

1. a strategy is asked only while the conversation is over target;
2. what it answers is taken only when it is strictly smaller, by the same counter that decided
   it was over (otherwise the layer above would write the same size back on every call,
   forever: the compaction loops of OpenHands and opencode), and only when a provider would
   accept it;
3. once under target, the layers below are never called;
4. a step still waiting on its result (a sub-agent at work) comes out as it went in, so its
   result pairs with it when it comes (``compaction._pending``).

The conversation handed to ``rewrite`` is a tuple: it belongs to the caller and cannot be
edited in place.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar, cast

import attrs

from . import events
from ._judged import answer_count, answer_problems
from ._layer_log import entered, exited
from ._log import log
from ._signature import takes_counter as _takes_counter
from ._signature import takes_limit as _takes_limit
from .budget import Budget
from .engine import AsyncCallNext, CallNext, Run, aexecute, current_labels, execute
from .messages import Message
from .result import Applied, CompactionResult, Declined, Skip
from .tokens import TokenCounter
from .validate import mark_checked

__all__ = ["Capabilities", "Run", "Strategy", "current_labels"]

#: A layer's answer as judged: the messages, what they count, why refused (None: taken).
_Verdict = tuple[tuple[Message, ...], int, str | None]


@attrs.frozen(slots=True)
class Capabilities:
    """What a strategy costs and what it gives up (its capabilities object).

    - ``model_call``: it spends a model call (only the terminal should).
    - ``lossless``: nothing is gone for good from the prompt (placeholders that say how to get
      it back count as lossy: the text is no longer in the prompt).
    - ``keeps_tool_pairs``: a call and its results are kept or dropped together.
    - ``deterministic``: the same input gives the same output.
    - ``writes_ledger``: it writes the person's statements into its text, as many as the
      budget has room for (the summary does): when a layer above gets under target while
      showing fewer of them, the ladder asks it too, as a trial, and keeps the answer that
      shows more (see ``Strategy._trial``). Other layers are never reached once under target.
    """

    model_call: bool = False
    lossless: bool = False
    keeps_tool_pairs: bool = True
    deterministic: bool = True
    writes_ledger: bool = False


class Strategy:
    """Base class of every strategy. Subclasses set ``name`` and implement ``rewrite``.

    ``rewrite(messages, *, target)`` answers a new, smaller sequence of messages, or None to
    decline (or a [`Skip`][compaction.result.Skip] to decline with its reason). A subclass
    whose ``rewrite`` also takes ``counter`` gets the run's
    [`TokenCounter`][compaction.tokens.TokenCounter], and may use it freely: counts are
    cached, so asking again costs a dictionary lookup. One whose ``rewrite`` takes ``limit``
    gets the run's hard limit (at least ``target``): what the request must fit, as opposed to
    where it aims. Only a layer that cuts protected content needs it (the last resort cuts protected
    content only down to the limit); such a layer may answer a conversation over target but
    within the limit, and it is taken, as any answer, only when smaller. A strategy that spends
    I/O also overrides [`arewrite`][], so the async pipeline awaits it instead of blocking
    the event loop.

    A subclass without a ``name`` is a TypeError when it is defined (its work would be recorded
    under ``''``); an abstract intermediate base says so with ``abstract=True``::

        class MyBase(Strategy, abstract=True): ...
    """

    #: The name this strategy compacts under, recorded on what it produces.
    name: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    # Whether ``rewrite``/``arewrite`` take ``counter=``: read once per class, when it is
    # defined, not on every call (a signature lookup per call would cost more than a rewrite).
    _rewrite_takes_counter: ClassVar[bool] = True
    _arewrite_takes_counter: ClassVar[bool] = True
    _rewrite_takes_limit: ClassVar[bool] = False
    _arewrite_takes_limit: ClassVar[bool] = False

    def __init_subclass__(cls, *, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._rewrite_takes_counter = _takes_counter(cls.rewrite)
        cls._arewrite_takes_counter = _takes_counter(cls.arewrite)
        cls._rewrite_takes_limit = _takes_limit(cls.rewrite)
        cls._arewrite_takes_limit = _takes_limit(cls.arewrite)
        if abstract:
            return
        name = getattr(cls, "name", None)
        # A property computes the name per instance; it cannot be checked here.
        if not isinstance(name, property) and (not isinstance(name, str) or not name):
            raise TypeError(
                f"{cls.__module__}.{cls.__qualname__} must set `name` (a non-empty str: the "
                "name its work is recorded under); an abstract base passes abstract=True: "
                f"class {cls.__name__}(..., abstract=True)"
            )

    # -- what a subclass answers -------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | Skip | None:
        """Answer a smaller conversation, or None to decline."""
        raise NotImplementedError(f"{type(self).__name__} must implement rewrite()")

    async def arewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | Skip | None:
        """Async twin of [`rewrite`][]; by default the same (CPU-bound, microseconds)."""
        return self._rewrite(messages, target, counter)

    def _rewrite(
        self,
        messages: tuple[Message, ...],
        target: int,
        counter: TokenCounter,
        limit: int | None = None,
    ) -> Sequence[Message] | Skip | None:
        kwargs: dict[str, Any] = {"target": target}
        if self._rewrite_takes_counter:
            kwargs["counter"] = counter
        if self._rewrite_takes_limit and limit is not None:
            kwargs["limit"] = limit
        return cast(Any, self.rewrite)(messages, **kwargs)

    async def _arewrite(
        self,
        messages: tuple[Message, ...],
        target: int,
        counter: TokenCounter,
        limit: int | None = None,
    ) -> Sequence[Message] | Skip | None:
        if type(self).arewrite is Strategy.arewrite:
            # Not overridden: the same CPU-bound rewrite, with the hard limit if it takes one.
            return self._rewrite(messages, target, counter, limit)
        kwargs: dict[str, Any] = {"target": target}
        if self._arewrite_takes_counter:
            kwargs["counter"] = counter
        if self._arewrite_takes_limit and limit is not None:
            kwargs["limit"] = limit
        return await cast(Any, self.arewrite)(messages, **kwargs)

    # -- the seed-000 protocol, with defaults --------------------------------------------------

    def explain(self) -> str:
        """One human sentence saying what this strategy does with its settings."""
        doc = (type(self).__doc__ or "").strip().splitlines()
        return doc[0] if doc else f"{self.name} compaction strategy"

    def can_handle(self, messages: Sequence[Message]) -> float:
        """Confidence in [0, 1] that this strategy can shrink ``messages``."""
        return 1.0 if messages else 0.5

    def wants(self, run: Run) -> bool:
        """Whether this layer is asked at all: rule 1, while the conversation is over target."""
        return run.over

    def apply(
        self,
        messages: Sequence[Message],
        target: int | Budget,
        *,
        counter: TokenCounter | None = None,
        limit: int | Budget | None = None,
    ) -> tuple[Message, ...]:
        """Run this strategy on its own, under the same rules as in a ladder."""
        if limit is None:  # a subclass's own ``compact`` may predate the hard limit
            return self.compact(messages, target=target, counter=counter).messages
        return self.compact(messages, target=target, counter=counter, limit=limit).messages

    def compact(
        self,
        messages: Sequence[Message],
        *,
        target: int | Budget,
        counter: TokenCounter | None = None,
        limit: int | Budget | None = None,
    ) -> CompactionResult:
        """Like [`apply`][], but answers the full [`CompactionResult`][]. ``limit``: the
        hard limit (default: the target), as for [`CompactionPipeline.compact`][]."""
        # The engine runs a ladder of one; the pipeline (which builds on this module) is not
        # needed for that, so this module never imports it.
        return execute(self, (self,), messages, target=target, counter=counter, limit=limit)

    async def acompact(
        self,
        messages: Sequence[Message],
        *,
        target: int | Budget,
        counter: TokenCounter | None = None,
        limit: int | Budget | None = None,
    ) -> CompactionResult:
        """Async twin of [`compact`][]."""
        return await aexecute(self, (self,), messages, target=target, counter=counter, limit=limit)

    # -- the rules, kept once ------------------------------------------------------------------

    def __call__(self, run: Run, call_next: CallNext) -> None:
        asked = self._asked(run)
        if run.trial and not asked:  # a trial passes by a layer it may not ask, unreported
            return call_next(run)
        entry = self._enter(run, asked)
        passed = ok = False
        try:
            if asked:
                started = time.monotonic()
                try:
                    if run.pending:  # a step waiting on its result is held out of reach
                        from ._pending import held_answer

                        answer = held_answer(self, run)
                    else:
                        answer = self._rewrite(run.messages, run.target, run.counter, run.limit)
                except Exception as exc:
                    self._raised(run, exc, started)
                else:
                    verdict = self._judge(run, answer)
                    if (trial := self._trial(run, verdict, call_next)) is not None:
                        call_next(trial)
                    self._conclude(run, verdict, trial, started)
            # Under target now, so the rest of the ladder is not needed.
            passed = run.over
            if passed:
                call_next(run)
            ok = True
        finally:
            self._exit(run, entry, asked, passed, ok)

    async def acall(self, run: Run, call_next: AsyncCallNext) -> None:
        asked = self._asked(run)
        if run.trial and not asked:
            return await call_next(run)
        entry = self._enter(run, asked)
        passed = ok = False
        try:
            if asked:
                started = time.monotonic()
                try:
                    if run.pending:
                        from ._pending import aheld_answer

                        answer = await aheld_answer(self, run)
                    else:
                        answer = await self._arewrite(
                            run.messages, run.target, run.counter, run.limit
                        )
                except Exception as exc:
                    self._raised(run, exc, started)
                else:
                    verdict = self._judge(run, answer)
                    if (trial := self._trial(run, verdict, call_next)) is not None:
                        await call_next(trial)
                    self._conclude(run, verdict, trial, started)
            passed = run.over
            if passed:
                await call_next(run)
            ok = True
        finally:
            self._exit(run, entry, asked, passed, ok)

    def _asked(self, run: Run) -> bool:
        return (self.answers_trials or not run.trial) and self.wants(run)

    @property
    def answers_trials(self) -> bool:
        """Whether a trial asks this layer: only a free one that writes the ledger (the layers
        above got under target: rule 3 holds for every other layer and for the model)."""
        return self.capabilities.writes_ledger and not self.capabilities.model_call

    # -- the person's statements: never fewer than another answer that also fits ---------------

    def _trial(self, run: Run, verdict: _Verdict, call_next: Any) -> Run | None:
        """The layers below run on what this layer was handed when its answer fits but shows
        fewer of the person's statements (``compaction._persons.trial``)."""
        new, after, reason = verdict
        if reason is not None or after > run.target or run.trial:
            return None
        from ._persons import trial

        return trial(run, new, call_next)

    def _conclude(self, run: Run, verdict: _Verdict, trial: Run | None, started: float) -> None:
        """Take the answer, or the trial's when it shows more (``fewer_statements``)."""
        new, after, reason = verdict
        if trial is not None:
            from ._persons import better

            if better(run, new, trial):
                self._book(run, (), run.tokens, "fewer_statements", started)
                run.messages, run.tokens = trial.messages, trial.tokens
                run.applied.extend(trial.applied)
                run.declined.extend(trial.declined)
                return
        self._book(run, new, after, reason, started)

    def _enter(self, run: Run, asked: bool) -> tuple[int, int, float]:
        """Report entering the layer; answers what ``_exit`` reports against."""
        return entered(self, run, asked)

    def _exit(
        self, run: Run, entry: tuple[int, int, float], asked: bool, passed: bool, ok: bool
    ) -> None:
        exited(self, run, entry, asked, passed, ok)

    def _judge(self, run: Run, answer: Sequence[Message] | Skip | None) -> _Verdict:
        """The answer, what it counts, and why it is refused (None: it is taken)."""
        before = run.tokens
        reason: str | None = None
        new: tuple[Message, ...] = ()
        after = before
        if answer is None:
            reason = "declined"
        elif isinstance(answer, Skip):
            reason = answer.reason or "declined"
        else:
            new = tuple(answer)
            after = answer_count(run, new)  # both read only what the layer changed
            if after >= before:
                reason = "did_not_shrink"
            else:
                found = answer_problems(run, new)
                if found:
                    # A strategy bug must never reach a provider as a 400; refuse it loudly.
                    reason = "invalid"
                    self._failed(run, found[0], "invalid output")
        return new, after, reason

    def _book(
        self, run: Run, new: tuple[Message, ...], after: int, reason: str | None, started: float
    ) -> None:
        before = run.tokens
        seconds = time.monotonic() - started
        name = self.name
        if reason is None:
            run.messages, run.tokens = new, after
            mark_checked(new)  # the next layer's own validate() of it is then a look-up
            run.applied.append(Applied(name, before, after, seconds))
            log.debug(
                "strategy.applied",
                strategy=name,
                before=before,
                after=after,
                seconds=seconds,
                labels=dict(run.labels),
            )
            events.strategy_applied.send(
                self, name=name, before=before, after=after, seconds=seconds, labels=run.labels
            )
        else:
            run.declined.append(Declined(name, reason, before, seconds))
            log.debug(
                "strategy.declined",
                strategy=name,
                reason=reason,
                tokens=before,
                labels=dict(run.labels),
            )
            events.strategy_declined.send(
                self,
                name=name,
                reason=reason,
                tokens=before,
                seconds=seconds,
                error=None,
                labels=run.labels,
            )
        events.duration.send(
            self, scope="strategy", name=name, seconds=seconds, ok=True, labels=run.labels
        )

    def _raised(self, run: Run, exc: Exception, started: float) -> None:
        seconds = time.monotonic() - started
        name = self.name
        run.declined.append(Declined(name, "raised", run.tokens, seconds, exc))
        events.duration.send(
            self, scope="strategy", name=name, seconds=seconds, ok=False, labels=run.labels
        )
        self._failed(run, exc, "rewrite")
        events.strategy_declined.send(
            self,
            name=name,
            reason="raised",
            tokens=run.tokens,
            seconds=seconds,
            error=exc,
            labels=run.labels,
        )
        if run.strict:
            run.reported = exc
            raise exc

    def _failed(self, run: Run, exc: BaseException, stage: str) -> None:
        log.warning(
            "strategy.failed",
            strategy=self.name,
            stage=stage,
            error=exc,
            labels=dict(run.labels),
        )
        events.failed.send(self, name=self.name, error=exc, stage=stage, labels=run.labels)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
