"""The ladder: :class:`CompactionPipeline` stacks strategies, cheapest first.

Built Rack-style::

    pipeline = (CompactionPipeline()
                .use(ToolResults, keep_steps=1)
                .use(SlidingWindow)
                .run(Summary()))
    result = pipeline.compact(messages, target=40_000)

Each layer is called with the run and the next layer (``call_next``), and the rules of
:mod:`compaction.strategy` decide whether it is asked and whether its answer is taken. The
pipeline itself knows no concrete strategy: it composes, times, reports, and guarantees that a
layer that raises never costs the conversation.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from . import events
from .budget import Budget, resolve_target
from .messages import Message
from .result import CompactionResult
from .strategy import Run, Strategy, _labels
from .tokens import TokenCounter, default_counter
from .validate import validate

__all__ = ["CompactionPipeline"]

from ._log import log


def _build(spec: Any, options: Mapping[str, Any], method: str) -> Strategy:
    if isinstance(spec, str):
        from .registry import registry  # keys are resolved lazily; the registry imports us not

        return registry.create(spec, **options)
    if inspect.isclass(spec):
        if not issubclass(spec, Strategy):
            raise TypeError(
                f"{method}() takes a Strategy subclass, an instance or a registry key; "
                f"{spec.__name__} is not a Strategy"
            )
        return spec(**options)
    if isinstance(spec, Strategy):
        if options:
            raise TypeError(
                f"{method}() got options {sorted(options)} for an already built "
                f"{type(spec).__name__}; pass the class to build it with options"
            )
        return spec
    raise TypeError(
        f"{method}() takes a Strategy subclass, an instance or a registry key, "
        f"got {type(spec).__name__} {spec!r}"
    )


def _check_messages(messages: Any) -> tuple[Message, ...]:
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


class CompactionPipeline:
    """A ladder of strategies. ``use`` adds a layer, ``run`` sets the terminal; both chain.

    With no terminal the bottom of the ladder declines: the free layers are all you get.
    ``strict=True`` re-raises a layer's exception (after reporting it) instead of keeping the
    last good conversation and going on to the next layer.
    """

    def __init__(self, *, counter: TokenCounter | None = None, strict: bool = False) -> None:
        self._layers: list[Strategy] = []
        self._terminal: Strategy | None = None
        self._counter = counter
        self.strict = strict

    # -- building --------------------------------------------------------------------------

    def use(
        self, strategy: type[Strategy] | Strategy | str, /, **options: Any
    ) -> CompactionPipeline:
        """Add a layer below the ones already added: a class (built with ``options``), an
        instance, or a registry key such as ``"sliding_window"``."""
        self._layers.append(_build(strategy, options, "use"))
        return self

    def run(
        self, terminal: type[Strategy] | Strategy | str, /, **options: Any
    ) -> CompactionPipeline:
        """Set the terminal: the last resort, reached only when every layer above left the
        conversation over target (usually the one strategy that spends a model call)."""
        self._terminal = _build(terminal, options, "run")
        return self

    @property
    def strategies(self) -> tuple[Strategy, ...]:
        """The layers in order, terminal last."""
        return (*self._layers, *((self._terminal,) if self._terminal else ()))

    @property
    def counter(self) -> TokenCounter:
        """The counter used when ``compact`` is given none (built once, so its cache lasts)."""
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    def __repr__(self) -> str:
        names = " -> ".join(s.name for s in self.strategies) or "(empty)"
        return f"<CompactionPipeline {names}>"

    # -- running ---------------------------------------------------------------------------

    def _start(
        self,
        messages: Sequence[Message],
        target: int | Budget,
        counter: TokenCounter | None,
        labels: Mapping[str, Any] | None,
    ) -> tuple[Run, int]:
        # All checks happen before any work: nothing half-compacted is ever returned.
        limit = resolve_target(target)
        msgs = _check_messages(messages)
        if counter is not None and not isinstance(counter, TokenCounter):
            raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        validate(msgs)
        counter = counter or self.counter
        tokens = counter.count_messages(msgs)
        run = Run(msgs, tokens, limit, counter, dict(labels or {}), self.strict)
        log.debug(
            "compaction.started", tokens=tokens, target=limit, messages=len(msgs), labels=run.labels
        )
        events.started.send(
            self, tokens=tokens, target=limit, messages=len(msgs), labels=run.labels
        )
        return run, tokens

    def _finish(self, run: Run, before: int, started: float, ok: bool) -> CompactionResult:
        seconds = time.monotonic() - started
        events.duration.send(
            self, scope="run", name="pipeline", seconds=seconds, ok=ok, labels=run.labels
        )
        result = run.result(before, seconds)
        if ok:
            log.info(
                "compaction.compacted",
                before=before,
                after=result.after,
                target=result.target,
                applied=[a.strategy for a in result.applied],
                seconds=round(seconds, 6),
                labels=run.labels,
            )
            events.compacted.send(
                self,
                before=before,
                after=result.after,
                target=result.target,
                applied=result.applied,
                changed=result.changed,
                fits=result.fits,
                labels=run.labels,
            )
        return result

    def _fail(self, run: Run, exc: BaseException) -> None:
        if exc is run.reported:  # the layer that raised has reported it already
            return
        log.error("compaction.failed", error=repr(exc), labels=run.labels)
        events.failed.send(self, name="pipeline", error=exc, stage="run", labels=run.labels)

    def _chain(self) -> Callable[[Run], None]:
        def bottom(run: Run) -> None:
            return None

        call_next: Callable[[Run], None] = bottom
        for layer in reversed(self.strategies):
            call_next = _bind(layer, call_next)
        return call_next

    def _achain(self) -> Callable[[Run], Awaitable[None]]:
        async def bottom(run: Run) -> None:
            return None

        call_next: Callable[[Run], Awaitable[None]] = bottom
        for layer in reversed(self.strategies):
            call_next = _abind(layer, call_next)
        return call_next

    def compact(
        self,
        messages: Sequence[Message],
        *,
        target: int | Budget,
        counter: TokenCounter | None = None,
        labels: Mapping[str, Any] | None = None,
    ) -> CompactionResult:
        """Shrink ``messages`` to ``target`` tokens, as cheaply as the ladder allows.

        ``labels`` are passed to every event (for tagging metrics). The input is never
        modified; when nothing was taken, ``result.messages`` holds the same messages.
        """
        started = time.monotonic()
        run, before = self._start(messages, target, counter, labels)
        token = _labels.set(run.labels)
        try:
            self._chain()(run)
        except BaseException as exc:  # strict mode, or KeyboardInterrupt: report, then raise
            self._fail(run, exc)
            self._finish(run, before, started, ok=False)
            raise
        finally:
            _labels.reset(token)
        return self._finish(run, before, started, ok=True)

    async def acompact(
        self,
        messages: Sequence[Message],
        *,
        target: int | Budget,
        counter: TokenCounter | None = None,
        labels: Mapping[str, Any] | None = None,
    ) -> CompactionResult:
        """The same ladder, awaiting strategies that do I/O (summarisers) instead of blocking."""
        started = time.monotonic()
        run, before = self._start(messages, target, counter, labels)
        token = _labels.set(run.labels)
        try:
            await self._achain()(run)
        except BaseException as exc:
            self._fail(run, exc)
            self._finish(run, before, started, ok=False)
            raise
        finally:
            _labels.reset(token)
        return self._finish(run, before, started, ok=True)


def _bind(layer: Strategy, call_next: Callable[[Run], None]) -> Callable[[Run], None]:
    def call(run: Run) -> None:
        layer(run, call_next)

    return call


def _abind(
    layer: Strategy, call_next: Callable[[Run], Awaitable[None]]
) -> Callable[[Run], Awaitable[None]]:
    async def call(run: Run) -> None:
        await layer.acall(run, call_next)

    return call
