"""The cost model checked against what providers actually billed.

Claude Code and mini-swe-agent logs record, per call, the provider's own split of the input:
cache reads, cache writes, uncached tokens. [`check_bill`][] replays such a log with no
compaction through a [`CacheMeter`][compaction.pricing.cost.CacheMeter] and compares the reads
and writes it
predicts with the recorded ones.

Each call's size is the size the provider recorded (``input + cache reads + cache writes``):
the logs do not hold the system prompt and tool schemas the agent sent, and the provider's
tokenizer is not ours, so a local count says nothing about the cache model and everything
about the tokenizer. The local count is compared on its own (``size_error``). Time and TTL
come from the log. A request that is smaller than the previous one (the agent compacted, or
the log interleaves a second conversation) shares only the fixed head with it, the size of the
first call. A log that records, per call, how many tokens it wrote for 5 minutes and for 1 hour
(Claude Code) is priced and modelled with both: each TTL's writes at that TTL's price.

A log cannot show what an earlier session left in the cache: the first call's recorded read is
taken as already cached (for Claude Code, its system prompt and tools, shared by every session
of the same version within the TTL).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..messages import Message
from .cost import CacheMeter
from .prices import Price, price_for
from .recorded import RecordedUsage, call_time, check_order, recorded_model, recorded_usage

__all__ = ["BillCheck", "check_bill"]


@attrs.frozen(slots=True)
class BillCheck:
    """Recorded and modelled totals of one log, and the relative errors.

    ``read_error``/``write_error`` are ``(modelled - recorded) / recorded`` for cache reads
    and writes; ``cost_error`` the same for the whole bill in USD (output included, the same
    on both sides).
    """

    calls: int
    recorded_read: int
    recorded_write: int
    recorded_uncached: int
    model_read: int
    model_write: int
    model_uncached: int
    recorded_cost: float
    model_cost: float

    @staticmethod
    def _err(model: float, recorded: float) -> float:
        return (model - recorded) / recorded if recorded else 0.0 if model == recorded else 1.0

    @property
    def read_error(self) -> float:
        return self._err(self.model_read, self.recorded_read)

    @property
    def write_error(self) -> float:
        return self._err(self.model_write, self.recorded_write)

    @property
    def cost_error(self) -> float:
        return self._err(self.model_cost, self.recorded_cost)


def _model_name(messages: Sequence[Message]) -> str | None:
    return recorded_model(messages)


def _calls(messages: Sequence[Message]) -> list[tuple[float | None, RecordedUsage]]:
    calls = []
    previous = None
    for index, m in enumerate(messages):
        if m.role != "assistant" or index == 0 or messages[index - 1].role == "assistant":
            continue
        usage = recorded_usage(m)
        if usage is not None:
            at = call_time(m)
            if at is not None:
                check_order(m, at, previous)
                previous = at
            calls.append((at, usage))
    return calls


def _write_cost(usage: RecordedUsage, price: Price, default: float) -> float:
    """What the call's recorded cache writes cost: each TTL's tokens at that TTL's price
    (a log that splits them), else all at the ``default`` write price."""
    if not usage.writes:
        return usage.cache_write * default
    return sum(n * price.cache_write.get(ttl, default) for ttl, n in usage.writes)


def check_bill(messages: Sequence[Message], price: Price | None = None) -> BillCheck | None:
    """Compare the cache reads and writes the model predicts for ``messages`` with the ones
    recorded in it; None when the log records no usage. ``price`` defaults to the table's row
    for the model the log names (its prices weight the cost error only)."""
    calls = _calls(messages)
    if not calls:
        return None
    if price is None:
        price = price_for(_model_name(messages) or "claude-sonnet-4-5")
    ttl = next((u.ttl for _, u in calls if u.ttl), None)
    meter = CacheMeter(price, ttl if ttl in price.ttl else None)
    first = calls[0][1]
    # The fixed head (system prompt, tools) is often cached by an earlier session before the
    # log starts: the first call's recorded read says how much, and nothing else can.
    fixed = first.cache_read or first.input_tokens
    meter.preload(fixed, calls[0][0] or 0.0)
    previous = 0
    at = 0.0
    read = write = uncached = 0
    cost = 0.0
    for when, usage in calls:
        at = when if when is not None else at
        size = usage.input_tokens
        prefix = previous if size >= previous else min(fixed, size)
        c = meter.call(
            at, size, prefix, usage.output, fixed=min(fixed, size), writes=dict(usage.writes)
        )
        read, write, uncached = read + c.cache_read, write + c.cache_write, uncached + c.uncached
        cost += c.cost
        previous = size
    rec_read = sum(u.cache_read for _, u in calls)
    rec_write = sum(u.cache_write for _, u in calls)
    rec_uncached = sum(u.uncached for _, u in calls)
    rec_output = sum(u.output for _, u in calls)
    write_cost = sum(_write_cost(u, price, meter.write_price) for _, u in calls)
    recorded_cost = (
        rec_read * price.cache_read
        + write_cost
        + rec_uncached * price.input
        + rec_output * price.output
    ) / 1_000_000
    return BillCheck(
        calls=len(calls),
        recorded_read=rec_read,
        recorded_write=rec_write,
        recorded_uncached=rec_uncached,
        model_read=read,
        model_write=write,
        model_uncached=uncached,
        recorded_cost=recorded_cost,
        model_cost=cost,
    )
