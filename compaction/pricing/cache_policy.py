"""A trigger that knows the prompt cache: compact when it pays, not at one fixed mark.

A compaction rewrites the start of the prompt. While the provider's cache is warm, that throws
away prefix reads at a tenth of the input price and pays to write the new prefix again (at a
premium on Anthropic; at the full input price on OpenAI's automatic cache, as a miss); what
it saves is the reads of the dropped tokens on the calls that follow. Once the cache has gone
cold (the gap since the last call exceeds the TTL) the whole request is written again anyway,
and a compaction made then only makes that write smaller. So [`CacheAware`][]:

- compacts **early** when the cache is cold: from ``early * window`` on (the request is about
  to be written in full; writing less of it is pure gain);
- compacts **later** while it is warm: only from ``late * window`` on. Measured on the shared
  transcripts (``benchmarks/cost.py``), marks later than the default trigger's 0.7 cost
  more, not less: a bigger prompt is read on every call, and that outweighs the rewrites
  saved. So ``late`` defaults to 0.7, and is there to be set per workload;
- **never past the hard limit**: a request over the window is compacted whatever the cache
  (the [`Compactor`][compaction.trigger.Compactor] rule, which the policy never overrides);
- **batches** what it frees: a rewrite frees at least ``min_free * window`` tokens (aiming
  below the compactor's own target when needed, never below ``floor * window``), and a
  compaction that frees less is not taken while the request fits, so tool-result clearing
  happens in large batches and the prefix is rewritten rarely. This keeps less context after
  a compaction than the default trigger does (the protected part, task included, is kept
  as always).

Attach it with ``Compactor(pipeline, window, policy=CacheAware(price))``. It reads the clock
(``clock``, default ``time.time``) at every call; a replay tells it the transcript's time
with [`CacheAware.tick`][]. When it decides to compact it puts its estimate of the net
gain in USD on the run's labels (``estimated_net_usd``), so the ``compacted`` event and the
OpenTelemetry span carry it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from .prices import Price

__all__ = ["CacheAware"]


class CacheAware:
    """Compact early when the prompt cache is cold, late while it is warm (see the module).

    ``price`` is the model's row of the price table; ``ttl`` the cache lifetime in seconds
    (default: the model's first); ``late`` and ``early`` the warm and cold marks as shares of
    the window (``0 < early <= late <= 1``); ``min_free`` the least share of the window a
    rewrite must free; ``floor`` the share of the window a compaction never aims below.
    """

    def __init__(
        self,
        price: Price,
        *,
        ttl: int | None = None,
        late: float = 0.7,
        early: float = 0.5,
        min_free: float = 0.4,
        floor: float = 0.25,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(price, Price):
            raise TypeError(
                f"price must be a compaction.pricing.prices.Price, got {type(price).__name__}"
            )
        for name, value in (
            ("late", late),
            ("early", early),
            ("min_free", min_free),
            ("floor", floor),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, got {value!r}")
        if not 0 < early <= late <= 1:
            raise ValueError(f"need 0 < early <= late <= 1, got early={early!r}, late={late!r}")
        if not 0 <= min_free < 1:
            raise ValueError(f"min_free must be in [0, 1), got {min_free!r}")
        if not 0 < floor < early:
            raise ValueError(f"need 0 < floor < early, got floor={floor!r}, early={early!r}")
        self.price = price
        self.ttl = price.ttl[0] if ttl is None else int(ttl)
        self.write = price.write_price(self.ttl) if price.cache == "breakpoint" else price.input
        self.late = float(late)
        self.early = float(early)
        self.min_free = float(min_free)
        self.floor = float(floor)
        self.clock = clock
        self._now: float | None = None
        self._last: float | None = None
        self._growth: list[int] = []
        self._previous = 0

    def __repr__(self) -> str:
        return f"<CacheAware {self.price.model} ttl={self.ttl} early={self.early} late={self.late}>"

    def attach(self, compactor: Any) -> None:
        """Called by the Compactor it is given to: the batching rule raises its minimum saving."""
        window = compactor.window
        compactor.min_saving_tokens = max(
            compactor.min_saving_tokens, math.ceil(self.min_free * window)
        )
        self._last, self._now, self._previous = None, None, 0
        self._growth.clear()

    def tick(self, at: float) -> None:
        """The time of the coming call, in seconds (replays; a live agent need not call it)."""
        self._now = float(at)

    def adjust(self, compactor: Any, plan: Any) -> None:
        """Decide, for the call being planned, whether to compact (sets ``plan.compact``)."""
        now = self._now if self._now is not None else self.clock()
        self._now = None
        cold = self._last is None or now - self._last > self.ttl
        self._last = now
        window = compactor.window
        estimate = plan.estimate
        if self._previous and estimate > self._previous:
            self._growth = [*self._growth[-19:], estimate - self._previous]
        self._previous = estimate
        if estimate > window:
            plan.compact = True  # never past the hard limit, whatever the cache
        elif estimate < compactor._retry_at or estimate < math.ceil(self.early * window):
            plan.compact = False
        else:
            plan.compact = cold or estimate >= math.ceil(self.late * window)
        if plan.compact:
            # Batching: free at least min_free of the window per rewrite (never aiming below
            # the floor), so the prefix is rewritten rarely.
            batch = estimate - math.ceil(self.min_free * window) - compactor.tool_tokens
            lowest = math.floor(self.floor * window) - compactor.tool_tokens
            plan.target = max(min(plan.target, max(batch, lowest)), 1)
            plan.labels["estimated_net_usd"] = round(
                self.estimated_net(estimate, plan.target, cold, compactor), 6
            )

    def estimated_net(self, estimate: int, target: int, cold: bool, compactor: Any) -> float:
        """USD a compaction from ``estimate`` down to ``target`` tokens should earn before the
        next one: the reads it saves on the coming calls, less the rewrite (when warm), plus
        the smaller write (when cold)."""
        p = self.price
        freed = max(estimate - target, 0)
        growth = sum(self._growth) / len(self._growth) if self._growth else 0
        room = max(math.ceil(self.late * compactor.window) - target, 0)
        calls = room / growth if growth > 0 else 1.0
        reads = freed * p.cache_read * calls
        if cold:
            return (reads + freed * self.write) / 1e6
        return (reads - target * (self.write - p.cache_read)) / 1e6
