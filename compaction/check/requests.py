"""Where an agent called the model, and what each of its requests measured.

A replay through our own [`Compactor`][compaction.trigger.Compactor] is
[`compaction.replay.replay`][]. A check also replays runs through other frameworks'
compaction (a LangChain middleware, a peer's trimming) whose requests are not our messages,
so the measuring is kept apart from the feeding: the caller sends each request it built to a
[RequestMeter][compaction.check.requests.RequestMeter], which knows only how to count an item
and whether two items are the same.

Per request the meter records its size, the tokens at its start that repeat the previous
request's start unchanged (what a provider's prompt cache can reuse), whether it is over the
window, whether it rewrote the previous request's prefix (a compaction the cache pays for),
whether the task was in it, and, given a [`CacheMeter`][compaction.pricing.cost.CacheMeter], its
price with the cache. The prefix is compared item by item from the start and stops at the
first difference, so each request costs one pass over the part it shares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import attrs

from ..messages import Message
from ..pricing.cost import CacheMeter

__all__ = ["RequestMeter", "RequestTotals", "Sent", "call_points"]

T = TypeVar("T")


def call_points(messages: Sequence[Message]) -> list[int]:
    """Where the agent called the model, as [`compaction.replay.replay`][] sees it: before
    each assistant message that follows a non-assistant one (some logs store one answer as
    several assistant messages). ``messages[:i]`` is what it sent."""
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "assistant" and i > 0 and messages[i - 1].role != "assistant"
    ]


@attrs.frozen(slots=True)
class Sent:
    """One request as measured: ``tokens`` its size; ``prefix`` the tokens at its start the
    same as the previous request's; ``over`` whether it exceeded the window; ``rewrote``
    whether it did not keep the previous request whole at its start; ``task`` whether the
    task was in it (None when not asked); ``cost`` its price in USD (0.0 when unpriced)."""

    tokens: int
    prefix: int
    over: bool
    rewrote: bool
    task: bool | None
    cost: float = 0.0


@attrs.frozen(slots=True)
class RequestTotals:
    """The sums over a run: ``calls``, ``tokens_sent``, ``prefix_tokens``, ``over_window``,
    ``without_task`` (calls whose request lost the task), ``rewrites``, ``cost``."""

    calls: int = 0
    tokens_sent: int = 0
    prefix_tokens: int = 0
    over_window: int = 0
    without_task: int = 0
    rewrites: int = 0
    cost: float = 0.0


def _same(a: object, b: object) -> bool:
    return a is b or a == b


class RequestMeter(Generic[T]):
    """Measures the requests of one run, in order.

    ``count`` gives an item's tokens (memoise it if the items repeat: every request counts
    its items); ``window`` is what a request must fit; ``same`` says whether an item equals
    the previous request's item at the same place (identity or equality by default). With a
    ``meter``, each request is priced at the ``at`` time and ``output`` tokens the caller
    gives, ``fixed`` being the length of the stable head (system prompt, tools)."""

    def __init__(
        self,
        count: Callable[[T], int],
        window: int,
        *,
        same: Callable[[T, T], bool] = _same,
        meter: CacheMeter | None = None,
        fixed: int = 0,
    ) -> None:
        self._count = count
        self._same = same
        self.window = window
        self._meter = meter
        self._fixed = fixed
        self._previous: list[T] = []
        self._totals = RequestTotals()

    def measure(
        self,
        request: Sequence[T],
        *,
        task: bool | None = None,
        at: float = 0.0,
        output: int = 0,
    ) -> Sent:
        """Record one request (every item the model is sent, in order); ``task`` whether the
        caller found the task in it."""
        count = self._count
        full = list(request)
        size = sum(count(m) for m in full)
        prefix = 0
        for a, b in zip(self._previous, full, strict=False):
            if not self._same(a, b):
                break
            prefix += count(b)
        rewrote = bool(self._previous) and prefix < sum(count(m) for m in self._previous)
        cost = 0.0
        if self._meter is not None:
            cost = self._meter.call(at, size, prefix, output, fixed=self._fixed).cost
        sent = Sent(size, prefix, size > self.window, rewrote, task, cost)
        t = self._totals
        self._totals = RequestTotals(
            t.calls + 1,
            t.tokens_sent + size,
            t.prefix_tokens + prefix,
            t.over_window + sent.over,
            t.without_task + (task is False),
            t.rewrites + rewrote,
            t.cost + cost,
        )
        self._previous = full
        return sent

    @property
    def totals(self) -> RequestTotals:
        """The sums over every request measured so far."""
        return self._totals
