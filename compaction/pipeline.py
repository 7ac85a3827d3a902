"""The ladder: [`CompactionPipeline`][] stacks strategies, cheapest first.

Built Rack-style::

    pipeline = (CompactionPipeline()
                .use(ToolResults, keep_steps=1)
                .use(SlidingWindow)
                .run(Summary()))
    result = pipeline.compact(messages, target=40_000)

Each layer is called with the run and the next layer (``call_next``), and the rules of
[`compaction.strategy`][] decide whether it is asked and whether its answer is taken. The
pipeline itself knows no concrete strategy: it composes the layers (announcing each with
``events.layer_added``) and hands them to [`compaction.engine`][], which runs, times and
reports them and guarantees that a layer that raises never costs the conversation.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from . import events
from ._log import log
from .budget import Budget
from .engine import aexecute, execute
from .messages import Message
from .result import CompactionResult
from .strategy import Strategy
from .tokens import TokenCounter, default_counter

__all__ = ["CompactionPipeline", "resolve_keys_with"]

KeyResolver = Callable[..., Strategy]

# String keys ("sliding_window") are the registry's business. The registry builds pipelines
# from config, so it imports this module; this module must not import it back. Instead the
# registry installs its resolver here when it is imported (``import compaction`` imports it,
# so a key always resolves in practice).
_resolve_key: KeyResolver | None = None


def resolve_keys_with(resolver: KeyResolver) -> None:
    """Set how ``use("key", **options)`` builds a strategy from a key (the registry does)."""
    global _resolve_key
    _resolve_key = resolver


def _build(spec: Any, options: Mapping[str, Any], method: str) -> Strategy:
    if isinstance(spec, str):
        if _resolve_key is None:
            raise LookupError(
                f"{method}({spec!r}): no registry to resolve keys; import compaction.registry"
            )
        return _resolve_key(spec, **options)
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
        layer = _build(strategy, options, "use")
        self._layers.append(layer)
        self._added(layer, len(self._layers) - 1, terminal=False)
        return self

    def run(
        self, terminal: type[Strategy] | Strategy | str, /, **options: Any
    ) -> CompactionPipeline:
        """Set the terminal: the last resort, reached only when every layer above left the
        conversation over target (usually the one strategy that spends a model call)."""
        self._terminal = _build(terminal, options, "run")
        self._added(self._terminal, len(self._layers), terminal=True)
        return self

    def _added(self, layer: Strategy, position: int, *, terminal: bool) -> None:
        log.debug("layer.added", strategy=layer.name, position=position, terminal=terminal)
        events.layer_added.send(
            self,
            name=layer.name,
            strategy=layer,
            position=position,
            terminal=terminal,
            labels=MappingProxyType({}),
        )

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

    def compact(
        self,
        messages: Sequence[Message],
        *,
        target: int | Budget,
        counter: TokenCounter | None = None,
        labels: Mapping[str, Any] | None = None,
        limit: int | Budget | None = None,
    ) -> CompactionResult:
        """Shrink ``messages`` to ``target`` tokens, as cheaply as the ladder allows.

        ``limit`` is the hard limit the request must fit (default: the target; an int or a
        [`Budget`][], at least the target): layers are asked while the conversation is over
        ``target``, and a layer that cuts protected content (one whose ``rewrite`` takes
        ``limit=``) cuts it only down to ``limit``. Pass the model's window (less what its
        answer needs) so that what the agent was told is cut only when the window demands it.

        ``labels`` are passed to every event (for tagging metrics). The input is never
        modified; when nothing was taken, ``result.messages`` holds the same messages.
        """
        return execute(
            self,
            self.strategies,
            messages,
            target=target,
            counter=self.counter if counter is None else counter,
            labels=labels,
            strict=self.strict,
            limit=limit,
        )

    async def acompact(
        self,
        messages: Sequence[Message],
        *,
        target: int | Budget,
        counter: TokenCounter | None = None,
        labels: Mapping[str, Any] | None = None,
        limit: int | Budget | None = None,
    ) -> CompactionResult:
        """The same ladder, awaiting strategies that do I/O (summarisers) instead of blocking."""
        return await aexecute(
            self,
            self.strategies,
            messages,
            target=target,
            counter=self.counter if counter is None else counter,
            labels=labels,
            strict=self.strict,
            limit=limit,
        )
