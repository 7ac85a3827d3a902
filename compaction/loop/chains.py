"""Chains: loops that pass a message along and share one context (the seed's stream router)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import attrs

from ..messages import Message
from .context import ContextChange, _apply, _diff
from .results import LoopResult
from .turn import TurnLoop

__all__ = ["Chain", "ChainResult", "chain"]


@attrs.frozen(slots=True)
class ChainResult:
    """A message's way through a chain: each loop's result, every context change in order,
    and the final context."""

    results: tuple[LoopResult, ...]
    context_changes: tuple[ContextChange, ...]
    context: dict[str, Any]

    @property
    def reply(self) -> Message:
        """The last loop's answer."""
        return self.results[-1].reply


class Chain:
    """Loops run one after another on one shared context (the seed's stream router).

    Each loop's answer is the next loop's prompt; every loop reads and changes the same
    context, so what one agent set the next one sees. ``context`` is that mapping (a dict, or
    a session's global context to persist it); by default a new dict.
    """

    def __init__(
        self, loops: Sequence[TurnLoop], *, context: MutableMapping[str, Any] | None = None
    ) -> None:
        loops = tuple(loops)
        if not loops:
            raise ValueError("a chain needs at least one loop")
        for i, loop in enumerate(loops):
            if not isinstance(loop, TurnLoop):
                raise TypeError(f"loops[{i}] must be a TurnLoop, got {type(loop).__name__}")
        self.loops = loops
        self.context: MutableMapping[str, Any] = {} if context is None else context

    def _start(self, metadata: Mapping[str, Any] | None) -> list[ContextChange]:
        changes: list[ContextChange] = []
        if metadata:
            before = {k: self.context[k] for k in metadata if k in self.context}
            made = _diff(before, {**before, **metadata}, "chain", "metadata")
            _apply(self.context, made)
            changes += made
        return changes

    def run(
        self, message: str | Message, *, metadata: Mapping[str, Any] | None = None
    ) -> ChainResult:
        """Send ``message`` through every loop; ``metadata`` is put in the context first."""
        changes = self._start(metadata)
        results: list[LoopResult] = []
        prompt: str | Message = message
        for loop in self.loops:
            result = loop.run(prompt, history=(), context=self.context)
            results.append(result)
            changes.extend(result.context_changes)
            prompt = result.reply.content
        return ChainResult(tuple(results), tuple(changes), copy.deepcopy(dict(self.context)))

    async def arun(
        self, message: str | Message, *, metadata: Mapping[str, Any] | None = None
    ) -> ChainResult:
        """Async twin of [`run`][]."""
        changes = self._start(metadata)
        results: list[LoopResult] = []
        prompt: str | Message = message
        for loop in self.loops:
            result = await loop.arun(prompt, history=(), context=self.context)
            results.append(result)
            changes.extend(result.context_changes)
            prompt = result.reply.content
        return ChainResult(tuple(results), tuple(changes), copy.deepcopy(dict(self.context)))


def chain(*loops: TurnLoop, context: MutableMapping[str, Any] | None = None) -> Chain:
    """Loops that pass a message along and share one context: ``chain(a, b, c).run(msg)``."""
    return Chain(loops, context=context)
