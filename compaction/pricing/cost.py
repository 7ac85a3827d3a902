"""What a model call costs once the provider's prompt cache is taken into account.

A compaction rewrites the start of the prompt, so the provider's prompt cache (read at about a
tenth of the input price) is lost and must be written again, at a premium on Anthropic. Tokens
alone cannot say whether that pays; this module turns a run of calls into money with
[`CacheMeter`][], which follows the provider's cache call by call:

- every call leaves a cache entry covering its whole request (Anthropic: a breakpoint on the
  last message, as Claude Code and most agents place it; OpenAI and Gemini: the prefix cache
  they keep by themselves) and, when told how long it is, one covering the fixed head (system
  prompt and tool schemas), which survives a compaction;
- a call reads the longest unexpired entry its request starts with: an entry expires when the
  time since it was last written or read exceeds the TTL;
- ``"breakpoint"`` caching writes everything after what was read (at the write price of the
  chosen TTL) once the request reaches ``min_prefix``; ``"automatic"`` caching reads only
  whole steps from ``min_prefix`` on, writes for free, and bills the rest as plain input.

What it does not model (see docs/cost.md): the provider's best-effort misses (Gemini and
OpenAI do not promise a hit), Anthropic's limit on how far back a breakpoint looks, more than
two breakpoints, batch discounts and long-context surcharges.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from .prices import Price, PriceError

__all__ = ["CacheMeter", "CallCost", "CostTotals"]

_MILLION = 1_000_000


@attrs.frozen(slots=True)
class CallCost:
    """One call's input split the way the provider bills it, and its price in USD.

    ``cache_read + cache_write + uncached`` is the request's size; ``warm`` says whether a live
    cache entry matched the start of the request (even one too short to be billed as a read).
    ``summary`` is what the summariser's model calls made for this call's compaction cost
    (a priced replay fills it in); it is part of ``cost``, since the run paid for it.
    """

    cache_read: int
    cache_write: int
    uncached: int
    output: int
    cost: float
    warm: bool
    summary: float = 0.0

    @property
    def input_tokens(self) -> int:
        return self.cache_read + self.cache_write + self.uncached


@attrs.frozen(slots=True)
class CostTotals:
    """The sum of many [`CallCost`][] (``calls`` of them); ``cost`` includes ``summary``,
    the summariser's calls."""

    calls: int = 0
    cache_read: int = 0
    cache_write: int = 0
    uncached: int = 0
    output: int = 0
    cost: float = 0.0
    summary: float = 0.0

    @classmethod
    def of(cls, costs: Iterable[CallCost | None]) -> CostTotals:
        present = [c for c in costs if c is not None]
        return cls(
            calls=len(present),
            cache_read=sum(c.cache_read for c in present),
            cache_write=sum(c.cache_write for c in present),
            uncached=sum(c.uncached for c in present),
            output=sum(c.output for c in present),
            cost=sum(c.cost for c in present),
            summary=sum(c.summary for c in present),
        )


class CacheMeter:
    """Follows one conversation's prompt cache at one provider and prices every call.

    ``price`` is the model's row of the price table; ``ttl`` the cache lifetime in seconds
    (default: the first the model offers; Anthropic bills the write by it). Calls are fed in
    order with [`call`][]; the meter keeps only a few cache entries, so it is O(1) a call.

    A call may write at more than one TTL (Claude Code records, per call, the tokens written
    for 5 minutes and for 1 hour): given that split (``writes``), the call's write is priced
    at each TTL's price for its share, and each cache entry lives for its own TTL: the fixed
    head for the longest of them, the rest of the request for the shortest.
    """

    __slots__ = ("_entries", "price", "ttl", "write_price")

    def __init__(self, price: Price, ttl: int | None = None) -> None:
        self.price = price
        self.ttl = price.ttl[0] if ttl is None else ttl
        if isinstance(self.ttl, bool) or not isinstance(self.ttl, int) or self.ttl <= 0:
            raise PriceError(f"{price.model}: ttl must be a positive number of seconds")
        self.write_price = price.write_price(self.ttl)
        # Cached prefix length -> (when it was last written or read, its TTL). A handful at
        # most: the fixed head and the last request (older requests are prefixes of it or dead).
        self._entries: dict[int, tuple[float, int]] = {}

    def preload(self, tokens: int, at: float) -> None:
        """Take the first ``tokens`` of the next request as already cached at ``at`` (by an
        earlier conversation that began the same way: a shared system prompt)."""
        if tokens >= self.price.min_prefix:
            self._entries[tokens] = (at, self.ttl)

    def warm(self, at: float) -> bool:
        """Whether any cache entry is alive at time ``at`` (seconds)."""
        return any(at - t <= ttl for t, ttl in self._entries.values())

    def _steps(self, tokens: int) -> int:
        # Automatic caches hit in whole steps from the minimum on (OpenAI: 1024 + 128 k).
        p = self.price
        if tokens < p.min_prefix:
            return 0
        return p.min_prefix + (tokens - p.min_prefix) // p.step * p.step

    def _split(self, writes: Mapping[int, int] | None) -> tuple[float, int, int]:
        """The write price, and the TTLs of the request's entry and of the fixed head's."""
        used = {t: n for t, n in (writes or {}).items() if n > 0}
        if not used or self.price.cache != "breakpoint":
            return self.write_price, self.ttl, self.ttl
        total = sum(used.values())
        price = sum(n * self.price.write_price(t) for t, n in used.items()) / total
        return price, min(used), max(used)

    def call(
        self,
        at: float,
        tokens: int,
        prefix: int,
        output: int,
        *,
        fixed: int = 0,
        writes: Mapping[int, int] | None = None,
    ) -> CallCost:
        """Price one call made at ``at`` seconds, sending ``tokens`` input tokens of which the
        first ``prefix`` are the same as the previous request's, producing ``output`` tokens;
        ``fixed`` is the length of the stable head (system prompt and tools), 0 if unknown;
        ``writes`` the tokens this call wrote per TTL, when recorded (else all at ``ttl``)."""
        p = self.price
        write_price, short, long = self._split(writes)
        alive = {n: e for n, e in self._entries.items() if at - e[0] <= e[1]}
        usable = [n for n in alive if n <= prefix or n <= fixed]
        hit = max((n for n in usable if n <= tokens), default=0)
        if p.cache == "automatic":
            read = self._steps(hit)
            write = 0
        else:
            read = hit if hit >= p.min_prefix else 0
            write = tokens - read if tokens >= p.min_prefix else 0
        uncached = tokens - read - write
        for n in usable:
            if n <= read or (p.cache == "automatic" and n <= hit):
                alive[n] = (at, alive[n][1])  # a read refreshes the entry's lifetime
        if tokens >= p.min_prefix:
            alive[tokens] = (at, short)
            if p.min_prefix <= fixed < tokens and (fixed not in alive or alive[fixed][1] < long):
                alive[fixed] = (at, long)
        # Entries longer than this request that it does not extend can never be read again.
        self._entries = {n: e for n, e in alive.items() if n <= tokens}
        cost = (
            read * p.cache_read + write * write_price + uncached * p.input + output * p.output
        ) / _MILLION
        return CallCost(read, write, uncached, output, cost, bool(hit))
