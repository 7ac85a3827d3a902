"""Running a ladder: the checks, the state handed down the layers, the events of a whole run.

This is the one place a run happens, whether a
[`CompactionPipeline`][compaction.pipeline.CompactionPipeline] runs its layers or a strategy
runs on its own (``Strategy.apply``). It sits below both: it knows layers only as callables
``layer(run, call_next)`` (and ``await layer.acall(run, call_next)``), so neither the strategy
base nor the pipeline has to import the other to run (the imports of the core go one way: engine
<- strategy <- pipeline <- registry).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

import attrs

from . import _judged, _run_memo, events
from ._log import log
from .budget import Budget, resolve_limit, resolve_target
from .checks import check_labels
from .messages import Message
from .result import Applied, CompactionResult, Declined
from .tokens import CachingCounter, TokenCounter, default_counter
from .validate import InvalidConversationError, mark_checked, reset_checked, unanswered, validate

__all__ = ["Layer", "Run", "current_labels", "execute", "aexecute"]

_labels: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "compaction_labels", default=MappingProxyType({})
)


def current_labels() -> Mapping[str, Any]:
    """The ``labels`` of the run in progress, for strategies that emit events of their own."""
    return _labels.get()


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
    #: How many layers the run is inside now: the position of the next layer entered.
    depth: int = 0
    #: The hard limit the request must fit (>= ``target``; 0 means the target itself).
    #: Layers are asked only while over target; a strategy that cuts protected content (one
    #: whose ``rewrite`` takes ``limit=``) cuts it only down to this.
    hard_limit: int = 0
    #: A trial: the layers below run on what a layer above was handed, to compare answers
    #: that fit (see ``Strategy._trial``); layers that spend a model call are not asked.
    trial: bool = False
    #: Ids of the calls still waiting on their result (a sub-agent at work): no layer drops
    #: or cuts the step that holds one (``compaction._pending``).
    pending: frozenset[str] = frozenset()

    @property
    def limit(self) -> int:
        """The hard limit: what the request must fit (the target unless a bigger one was given)."""
        return self.hard_limit or self.target

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
            limit=self.limit,
        )


CallNext = Callable[[Run], None]
AsyncCallNext = Callable[[Run], Awaitable[None]]


class Layer(Protocol):
    """What the engine runs: a strategy, as far as running it goes."""

    def __call__(self, run: Run, call_next: CallNext) -> None: ...

    async def acall(self, run: Run, call_next: AsyncCallNext) -> None: ...


def check_messages(messages: Any) -> tuple[Message, ...]:
    """``messages`` as a tuple of [`Message`][]; a TypeError naming the first bad item."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a sequence of Message, got {type(messages).__name__}")
    msgs = tuple(messages)
    for i, m in enumerate(msgs):
        if not isinstance(m, Message):
            raise TypeError(
                f"messages[{i}] must be a compaction.Message, got {type(m).__name__}; "
                "convert provider dicts with compaction.adapters first"
            )
    return msgs


def _start(
    sender: Any,
    messages: Sequence[Message],
    target: int | Budget,
    counter: TokenCounter | None,
    labels: Mapping[str, Any] | None,
    strict: bool,
    hard: int | Budget | None = None,
) -> Run:
    # All checks happen before any work: nothing half-compacted is ever returned.
    aim = resolve_target(target)
    hard_limit = resolve_limit(hard, aim)
    msgs = check_messages(messages)
    # Our own counters first: the protocol's check reads every member (about 20 us a run).
    if counter is not None and not isinstance(counter, (CachingCounter, TokenCounter)):
        raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
    pending: frozenset[str] = frozenset()
    try:
        validate(msgs)
    except InvalidConversationError:
        # A call still waiting on its result (a sub-agent at work) is a history, not a fault:
        # it is kept as it is, and its result pairs with it when it comes. Anything else
        # a provider would refuse is still refused.
        pending = frozenset(c.id for c in unanswered(msgs))
        if not pending:
            raise
        validate(msgs, pending=pending)
    counter = counter or default_counter()
    tokens = counter.count_messages(msgs)
    run = Run(msgs, tokens, aim, counter, check_labels(labels), strict, hard_limit=hard_limit)
    run.pending = pending
    # ``started`` fires for every run, with the same keyword arguments as ever (receivers with
    # fixed signatures must keep working): ``tokens > target`` says whether there is anything to
    # do. A count of compactions reads ``changed`` on ``compacted`` instead.
    log.debug(
        "compaction.started",
        tokens=tokens,
        target=aim,
        limit=hard_limit,
        messages=len(msgs),
        over=run.over,
        labels=run.labels,
    )
    events.started.send(sender, tokens=tokens, target=aim, messages=len(msgs), labels=run.labels)
    return run


def _finish(sender: Any, run: Run, before: int, started: float, ok: bool) -> CompactionResult:
    seconds = time.monotonic() - started
    events.duration.send(
        sender, scope="run", name="pipeline", seconds=seconds, ok=ok, labels=run.labels
    )
    result = run.result(before, seconds)
    if ok:
        log.info(
            "compaction.compacted",
            before=before,
            after=result.after,
            target=result.target,
            limit=result.limit,
            applied=[a.strategy for a in result.applied],
            skipped=[(d.strategy, d.reason) for d in result.skipped],
            budget_use=round(result.budget_use, 4),
            changed=result.changed,
            seconds=round(seconds, 6),
            labels=run.labels,
        )
        events.compacted.send(
            sender,
            before=before,
            after=result.after,
            target=result.target,
            applied=result.applied,
            changed=result.changed,
            fits=result.fits,
            budget_use=result.budget_use,
            skipped=result.skipped,
            labels=run.labels,
        )
    return result


def _fail(sender: Any, run: Run, exc: BaseException) -> None:
    if exc is run.reported:  # the layer that raised has reported it already
        return
    log.error("compaction.failed", error=exc, labels=run.labels)
    events.failed.send(sender, name="pipeline", error=exc, stage="run", labels=run.labels)


def _forget_texts(counter: TokenCounter) -> None:
    # A counter may hold texts within a run to read them once (the windows around a cut); one
    # shared by many conversations (the default counter is) must not keep a conversation's
    # text after its run. Counts are numbers, weakly keyed: they stay.
    forget = getattr(counter, "forget_texts", None)
    if forget is not None:
        forget()


def reaches_trial(call_next: CallNext | AsyncCallNext) -> bool:
    """Whether a trial handed to ``call_next`` may be answered by a layer below (one that
    says it answers trials, or any layer that says nothing about them). When none may, a
    trial would come back as it went, and the layer above need not set one up (nor read the
    person's statements to decide whether to)."""
    return bool(getattr(call_next, "answers_trials", True))


def _answers_trials(layer: Layer, call_next: Any) -> bool:
    return bool(getattr(layer, "answers_trials", True)) or reaches_trial(call_next)


def _chain(layers: Sequence[Layer]) -> CallNext:
    def bottom(run: Run) -> None:
        return None

    call_next: CallNext = bottom
    setattr(call_next, "answers_trials", False)  # noqa: B010 - a function's own attribute
    for layer in reversed(layers):
        call_next = _bind(layer, call_next)
    return call_next


def _achain(layers: Sequence[Layer]) -> AsyncCallNext:
    async def bottom(run: Run) -> None:
        return None

    call_next: AsyncCallNext = bottom
    setattr(call_next, "answers_trials", False)  # noqa: B010 - a function's own attribute
    for layer in reversed(layers):
        call_next = _abind(layer, call_next)
    return call_next


def _bind(layer: Layer, call_next: CallNext) -> CallNext:
    def call(run: Run) -> None:
        layer(run, call_next)

    setattr(call, "answers_trials", _answers_trials(layer, call_next))  # noqa: B010
    return call


def _abind(layer: Layer, call_next: AsyncCallNext) -> AsyncCallNext:
    async def call(run: Run) -> None:
        await layer.acall(run, call_next)

    setattr(call, "answers_trials", _answers_trials(layer, call_next))  # noqa: B010
    return call


def execute(
    sender: Any,
    layers: Sequence[Layer],
    messages: Sequence[Message],
    *,
    target: int | Budget,
    counter: TokenCounter | None = None,
    labels: Mapping[str, Any] | None = None,
    strict: bool = False,
    limit: int | Budget | None = None,
) -> CompactionResult:
    """Run ``layers`` over ``messages`` (``sender`` is the sender of the run's events)."""
    started = time.monotonic()
    run = _start(sender, messages, target, counter, labels, strict, limit)
    before = run.tokens
    token = _labels.set(run.labels)
    valid = mark_checked(run.messages)
    memo = _run_memo.open_memo()
    _judged.remember_count(run.messages, run.tokens, run.counter)
    try:
        _chain(layers)(run)
    except BaseException as exc:  # strict mode, or KeyboardInterrupt: report, then raise
        _fail(sender, run, exc)
        _finish(sender, run, before, started, ok=False)
        raise
    finally:
        _run_memo.close(memo)
        reset_checked(valid)
        _labels.reset(token)
        _forget_texts(run.counter)
    return _finish(sender, run, before, started, ok=True)


async def aexecute(
    sender: Any,
    layers: Sequence[Layer],
    messages: Sequence[Message],
    *,
    target: int | Budget,
    counter: TokenCounter | None = None,
    labels: Mapping[str, Any] | None = None,
    strict: bool = False,
    limit: int | Budget | None = None,
) -> CompactionResult:
    """Async twin of [`execute`][]: awaits layers that do I/O instead of blocking."""
    started = time.monotonic()
    run = _start(sender, messages, target, counter, labels, strict, limit)
    before = run.tokens
    token = _labels.set(run.labels)
    valid = mark_checked(run.messages)
    memo = _run_memo.open_memo()
    _judged.remember_count(run.messages, run.tokens, run.counter)
    try:
        await _achain(layers)(run)
    except BaseException as exc:
        _fail(sender, run, exc)
        _finish(sender, run, before, started, ok=False)
        raise
    finally:
        _run_memo.close(memo)
        reset_checked(valid)
        _labels.reset(token)
        _forget_texts(run.counter)
    return _finish(sender, run, before, started, ok=True)
