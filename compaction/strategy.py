"""One strategy in the ladder, and the rules every strategy keeps.

The stack order is the policy. A layer that got the conversation under target never calls the
next one, so the strategies that cost nothing sit at the top and the one that spends a model
call is only reached when they could not get there.

A subclass answers :attr:`Strategy.name` and :meth:`Strategy.rewrite`, and nothing else. The
rules are kept here, once:

1. a strategy is asked only while the conversation is over target;
2. what it answers is taken only when it is strictly smaller, by the same counter that decided
   it was over (otherwise the layer above would write the same size back on every call,
   forever: the compaction loops of OpenHands and opencode), and only when a provider would
   accept it;
3. once under target, the layers below are never called.

The conversation handed to ``rewrite`` is a tuple: it belongs to the caller and cannot be
edited in place.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import attrs

from . import events
from .budget import Budget
from .messages import Message
from .result import Applied, CompactionResult, Declined
from .tokens import TokenCounter
from .validate import problems

__all__ = ["Capabilities", "Run", "Strategy", "current_labels"]

from ._log import log

_labels: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "compaction_labels", default=MappingProxyType({})
)


def current_labels() -> Mapping[str, Any]:
    """The ``labels`` of the run in progress, for strategies that emit events of their own."""
    return _labels.get()


@attrs.frozen(slots=True)
class Capabilities:
    """What a strategy costs and what it gives up (seed 000's capabilities object).

    - ``model_call``: it spends a model call (only the terminal should).
    - ``lossless``: nothing is gone for good from the prompt (placeholders that say how to get
      it back count as lossy: the text is no longer in the prompt).
    - ``keeps_tool_pairs``: a call and its results are kept or dropped together.
    - ``deterministic``: the same input gives the same output.
    """

    model_call: bool = False
    lossless: bool = False
    keeps_tool_pairs: bool = True
    deterministic: bool = True


@attrs.define(slots=True, eq=False)
class Run:
    """The state of one compaction run, handed down the ladder (the middleware ``env``)."""

    messages: tuple[Message, ...]
    tokens: int
    target: int
    counter: TokenCounter
    labels: Mapping[str, Any] = attrs.field(factory=dict)
    strict: bool = False
    applied: list[Applied] = attrs.field(factory=list)
    declined: list[Declined] = attrs.field(factory=list)
    #: The exception a layer raised and already reported (strict runs re-raise it), so the
    #: pipeline does not report the same failure twice.
    reported: BaseException | None = None

    @property
    def over(self) -> bool:
        """True while the conversation is over target."""
        return self.tokens > self.target

    def result(self, before: int, seconds: float) -> CompactionResult:
        return CompactionResult(
            messages=self.messages,
            before=before,
            after=self.tokens,
            target=self.target,
            applied=tuple(self.applied),
            declined=tuple(self.declined),
            seconds=seconds,
        )


CallNext = Callable[[Run], None]
AsyncCallNext = Callable[[Run], Awaitable[None]]


class Strategy:
    """Base class of every strategy. Subclasses set ``name`` and implement ``rewrite``.

    ``rewrite(messages, target=..., counter=...)`` answers a new, smaller sequence of messages,
    or None to decline. It may use ``counter`` freely: counts are cached, so asking again costs
    a dictionary lookup. A strategy that spends I/O also overrides :meth:`arewrite`, so the
    async pipeline awaits it instead of blocking the event loop.
    """

    #: The name this strategy compacts under, recorded on what it produces.
    name: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()

    # -- what a subclass answers -------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        """Answer a smaller conversation, or None to decline."""
        raise NotImplementedError(f"{type(self).__name__} must implement rewrite()")

    async def arewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        """Async twin of :meth:`rewrite`; by default the same (CPU-bound, microseconds)."""
        return self.rewrite(messages, target=target, counter=counter)

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
    ) -> tuple[Message, ...]:
        """Run this strategy on its own, under the same rules as in a ladder."""
        return self.compact(messages, target=target, counter=counter).messages

    def compact(
        self,
        messages: Sequence[Message],
        *,
        target: int | Budget,
        counter: TokenCounter | None = None,
    ) -> CompactionResult:
        """Like :meth:`apply`, but answers the full :class:`CompactionResult`."""
        from .pipeline import CompactionPipeline  # the pipeline builds on this module

        return CompactionPipeline().run(self).compact(messages, target=target, counter=counter)

    # -- the rules, kept once ------------------------------------------------------------------

    def __call__(self, run: Run, call_next: CallNext) -> None:
        if self.wants(run):
            started = time.monotonic()
            try:
                answer = self.rewrite(run.messages, target=run.target, counter=run.counter)
            except Exception as exc:
                self._raised(run, exc, started)
            else:
                self._take(run, answer, started)
        # Under target now, so the rest of the ladder is not needed.
        if run.over:
            call_next(run)

    async def acall(self, run: Run, call_next: AsyncCallNext) -> None:
        if self.wants(run):
            started = time.monotonic()
            try:
                answer = await self.arewrite(run.messages, target=run.target, counter=run.counter)
            except Exception as exc:
                self._raised(run, exc, started)
            else:
                self._take(run, answer, started)
        if run.over:
            await call_next(run)

    def _take(self, run: Run, answer: Sequence[Message] | None, started: float) -> None:
        before = run.tokens
        reason: str | None = None
        new: tuple[Message, ...] = ()
        after = before
        if answer is None:
            reason = "declined"
        else:
            new = tuple(answer)
            after = run.counter.count_messages(new)
            if after >= before:
                reason = "did_not_shrink"
            else:
                found = problems(new)
                if found:
                    # A strategy bug must never reach a provider as a 400; refuse it loudly.
                    reason = "invalid"
                    self._failed(run, found[0], "invalid output")
        seconds = time.monotonic() - started
        name = self.name
        if reason is None:
            run.messages, run.tokens = new, after
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
            error=repr(exc),
            labels=dict(run.labels),
        )
        events.failed.send(self, name=self.name, error=exc, stage=stage, labels=run.labels)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
