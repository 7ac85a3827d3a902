"""Replay a recorded transcript through a [`Compactor`][compaction.trigger.Compactor].

The measuring instrument behind the CLI's ``replay`` and the benchmarks: it answers "had this
agent run with this compactor, what would each model call have sent?". A model call happens
before each assistant message (a run of consecutive assistant messages is one call's answer,
as some logs store one content block per line); its request is everything before that message,
with the compactor's earlier compactions applied, exactly as an agent that keeps appending to
its own list would have sent it.

Per call it reports the tokens sent, whether compaction ran, which strategies applied and what
they saved, and the share of the request that is an unchanged prefix of the previous request:
what a provider's prompt cache could have reused.

It is linear in the transcript: each message is counted once (counts are cached by the
counter; the compactor adds only what was appended since the previous call), the prefix shared
with the previous request is known without comparing when no compaction happened in between
(the request then extends the previous one by construction) and compared message by message
only after a compaction, and the transcript is never sliced per call.

Given a [`Price`][compaction.pricing.prices.Price], every call is also priced with the provider's
prompt cache followed by a [`CacheMeter`][compaction.pricing.cost.CacheMeter] (cache reads, writes,
uncached input, output, USD), and so is the same call with no compaction at all (the
*baseline*: the transcript as it was, side by side). Time comes from the log where it is
recorded, else from ``cadence`` seconds between calls; output sizes from the recorded usage,
else a local count of the answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, overload

import attrs

from . import events
from .messages import Message
from .pricing.cost import CacheMeter, CallCost, CostTotals
from .pricing.prices import Price
from .pricing.recorded import call_time, check_order, recorded_usage
from .trigger import Compactor

__all__ = ["ReplayRecord", "ReplayTotals", "replay"]


@attrs.frozen(slots=True)
class ReplayRecord:
    """One model call of a replay.

    - ``call``: its number (0-based); ``index``: the index, in the transcript, of the assistant
      message the call produced (so the request is the transcript before it, compacted).
    - ``messages``: messages in the request; ``tokens_sent``: its size by the compactor's
      counter, tool schemas included; ``estimate``: the size the trigger judged it by.
    - ``compacted``: whether a compaction was taken before this call; ``strategies``: the
      strategies applied, in order; ``tokens_saved``: what that compaction saved.
    - ``prefix_tokens``: tokens at the start of this request that are the same as the start
      of the previous request (tool schemas included; 0 for the first call);
      ``prefix_share``: ``prefix_tokens / tokens_sent``.
    - ``request``: the request itself, when asked for (``keep_requests=True``).
    - Priced replays only: ``at`` the call's time in seconds (from the log, or the cadence:
      ``timed`` says which); ``output_tokens``; ``cost`` and ``baseline`` the call's
      [`CallCost`][compaction.pricing.cost.CallCost] compacted (the summariser's calls made by
      this call's compaction included) and with no compaction (whose request is
      ``baseline_tokens``); ``summary_tokens`` the (input, output) tokens of those summariser
      calls.
    """

    call: int
    index: int
    messages: int
    tokens_sent: int
    estimate: int
    compacted: bool
    strategies: tuple[str, ...]
    tokens_saved: int
    prefix_tokens: int
    prefix_share: float
    request: tuple[Message, ...] | None = attrs.field(default=None, repr=False, eq=False)
    at: float = 0.0
    timed: bool = False
    output_tokens: int = 0
    baseline_tokens: int = 0
    cost: CallCost | None = None
    baseline: CallCost | None = None
    summary_tokens: tuple[int, int] = (0, 0)


@attrs.frozen(slots=True)
class ReplayTotals:
    """A whole replay in a few numbers (for the CLI and the benchmarks).

    ``cache_share`` is the share of all tokens sent that were an unchanged prefix of the
    previous request; ``strategies`` counts how often each strategy applied. A priced
    replay adds ``cost`` and ``baseline`` ([`CostTotals`][compaction.pricing.cost.CostTotals],
    compacted, the summariser's calls included, and with no compaction) and
    ``baseline_max_tokens``, the largest uncompacted request.
    """

    calls: int
    compactions: int
    tokens_sent: int
    max_tokens_sent: int
    tokens_saved: int
    prefix_tokens: int
    cache_share: float
    strategies: dict[str, int] = attrs.field(eq=False)
    cost: CostTotals | None = None
    baseline: CostTotals | None = None
    baseline_max_tokens: int = 0

    @classmethod
    def of(cls, records: Sequence[ReplayRecord]) -> ReplayTotals:
        strategies: dict[str, int] = {}
        for r in records:
            for name in r.strategies:
                strategies[name] = strategies.get(name, 0) + 1
        sent = sum(r.tokens_sent for r in records)
        prefix = sum(r.prefix_tokens for r in records)
        return cls(
            calls=len(records),
            compactions=sum(r.compacted for r in records),
            tokens_sent=sent,
            max_tokens_sent=max((r.tokens_sent for r in records), default=0),
            tokens_saved=sum(r.tokens_saved for r in records),
            prefix_tokens=prefix,
            cache_share=prefix / sent if sent else 0.0,
            strategies=strategies,
            cost=CostTotals.of(r.cost for r in records) if any(r.cost for r in records) else None,
            baseline=(
                CostTotals.of(r.baseline for r in records)
                if any(r.baseline for r in records)
                else None
            ),
            baseline_max_tokens=max((r.baseline_tokens for r in records), default=0),
        )


class _Prefix(Sequence[Message]):
    """``data[:stop]`` without copying it: the agent's list as it stood before one call."""

    __slots__ = ("_data", "_stop")

    def __init__(self, data: tuple[Message, ...], stop: int) -> None:
        self._data = data
        self._stop = stop

    def __len__(self) -> int:
        return self._stop

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._stop)
            return self._data[start:stop:step]
        if index < 0:
            index += self._stop
        if not 0 <= index < self._stop:
            raise IndexError("message index out of range")
        return self._data[index]

    def __iter__(self) -> Iterator[Message]:
        # In C: the trigger copies the agent's list every call, and a generator here made
        # that copy a Python loop over the whole history.
        return itertools.islice(self._data, self._stop)


def _common_prefix(a: Sequence[Message], b: Sequence[Message], compactor: Compactor) -> int:
    count = compactor.counter.count
    total = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and x != y:
            break
        total += count(x)
    return total


def replay(
    messages: Sequence[Message],
    compactor: Compactor,
    *,
    keep_requests: bool = False,
    price: Price | None = None,
    ttl: int | None = None,
    cadence: float = 30.0,
    overhead: int = 0,
) -> Iterator[ReplayRecord]:
    """Yield a [`ReplayRecord`][] for every model call the transcript ``messages`` records.

    The compactor is ``reset`` first (its stats keep
    accumulating) and follows the transcript from there; replay it with a fresh compactor for
    figures of its own. ``keep_requests`` keeps every request on its record (memory grows
    with the transcript times the window).

    With ``price``, every call is priced (see the module docstring): ``ttl`` is the cache
    lifetime in seconds (default: the model's first), ``cadence`` the seconds between calls
    where the log records no time, ``overhead`` tokens sent with every request that the log
    does not hold (a system prompt or tool schemas the agent never logged).
    """
    msgs = tuple(messages)
    for i, m in enumerate(msgs):
        if not isinstance(m, Message):
            raise TypeError(f"messages[{i}] must be a compaction.Message, got {type(m).__name__}")
    if isinstance(cadence, bool) or not isinstance(cadence, int | float) or not cadence >= 0:
        raise ValueError(f"cadence must be a number of seconds >= 0, got {cadence!r}")
    if isinstance(overhead, bool) or not isinstance(overhead, int) or overhead < 0:
        raise ValueError(f"overhead must be a number of tokens >= 0, got {overhead!r}")
    compactor.reset()
    meter = _Meters(msgs, compactor, price, ttl, float(cadence), overhead)
    if price is not None:
        events.summarized.connect(meter.on_summarized)
    try:
        yield from _replay(msgs, compactor, keep_requests, meter)
    finally:
        events.summarized.disconnect(meter.on_summarized)


class _Meters:
    """The pricing half of a replay: the compacted run's cache and the baseline's."""

    def __init__(
        self,
        msgs: tuple[Message, ...],
        compactor: Compactor,
        price: Price | None,
        ttl: int | None,
        cadence: float,
        overhead: int,
    ) -> None:
        self.msgs = msgs
        self.count = compactor.counter.count
        self.tool_tokens = compactor.tool_tokens
        self.price = price
        self.compacted = CacheMeter(price, ttl) if price else None
        self.baseline = CacheMeter(price, ttl) if price else None
        self.cadence = cadence
        self.overhead = overhead
        head = 0
        for m in msgs:
            if m.role != "system":
                break
            head += self.count(m)
        self.fixed = overhead + compactor.tool_tokens + head
        self.running = 0  # local count of msgs[:done]
        self.done = 0
        self.at = 0.0
        self.recorded: float | None = None  # the last time the log recorded
        self.summaries: list[tuple[int, int]] = []
        # The policy (cache-aware trigger) is told the transcript's time of every call.
        self.policy = getattr(compactor, "policy", None)

    def on_summarized(self, sender: Any, **kw: Any) -> None:
        from .summarizers.extractive import ExtractiveSummarizer

        # The extractive summariser runs offline: no model call, nothing to pay.
        if isinstance(getattr(sender, "summarizer", None), ExtractiveSummarizer):
            return
        self.summaries.append((int(kw.get("input_tokens") or 0), int(kw.get("output_tokens") or 0)))

    def time(self, index: int, call: int) -> tuple[float, bool]:
        # Only a priced replay reads the log's times as facts (the cache expires between calls
        # far apart): an unpriced one never refuses a log for its clock.
        at = call_time(self.msgs[index]) if self.price is not None else None
        if at is None:
            at, timed = (self.at + self.cadence if call else 0.0), False
        else:
            check_order(self.msgs[index], at, self.recorded)
            self.recorded = at
            timed = True
        self.at = at
        if self.policy is not None and hasattr(self.policy, "tick"):
            self.policy.tick(at)
        return at, timed

    def output(self, index: int) -> int:
        usage = recorded_usage(self.msgs[index])
        if usage is not None:
            return usage.output
        total, k = 0, index
        while k < len(self.msgs) and self.msgs[k].role == "assistant":
            total += self.count(self.msgs[k])
            k += 1
        return total

    def baseline_tokens(self, index: int) -> int:
        while self.done < index:
            self.running += self.count(self.msgs[self.done])
            self.done += 1
        return self.running + self.tool_tokens

    def price_call(
        self, at: float, sent: int, prefix: int, previous_baseline: int, index: int
    ) -> tuple[int, int, CallCost | None, CallCost | None, tuple[int, int]]:
        output = self.output(index)
        base = self.baseline_tokens(index)
        summary = (sum(s[0] for s in self.summaries), sum(s[1] for s in self.summaries))
        self.summaries.clear()
        if self.compacted is None or self.baseline is None:
            return output, base, None, None, summary
        extra = self.overhead
        cost = self.compacted.call(
            at, sent + extra, prefix + extra if prefix else 0, output, fixed=self.fixed
        )
        if summary != (0, 0) and self.price is not None:
            # The summariser's calls are part of what this call cost the run.
            paid = (summary[0] * self.price.input + summary[1] * self.price.output) / 1e6
            cost = attrs.evolve(cost, cost=cost.cost + paid, summary=paid)
        # With no compaction every request extends the previous one.
        shared = previous_baseline + extra if previous_baseline else 0
        baseline = self.baseline.call(at, base + extra, shared, output, fixed=self.fixed)
        return output, base, cost, baseline, summary


def _replay(
    msgs: tuple[Message, ...], compactor: Compactor, keep_requests: bool, meter: _Meters
) -> Iterator[ReplayRecord]:
    tool_tokens = compactor.tool_tokens
    previous: Sequence[Message] | None = None
    previous_tokens = 0  # messages only
    previous_baseline = 0
    call = 0
    for index, message in enumerate(msgs):
        if message.role != "assistant" or index == 0 or msgs[index - 1].role == "assistant":
            continue
        at, timed = meter.time(index, call)
        request = compactor.before_call(_Prefix(msgs, index))
        stats = compactor.stats
        result = compactor.last_result
        compacted = result is not None and result.changed
        sent = stats.last_tokens
        if previous is None:
            prefix = 0
        elif (
            not compacted
            and len(request) >= len(previous)
            and (not previous or request[len(previous) - 1] is previous[-1])
        ):
            # No compaction in between: the request is the previous one plus what followed.
            prefix = previous_tokens + tool_tokens
        else:
            prefix = _common_prefix(request, previous, compactor) + tool_tokens
        output, base, cost, baseline, summary = meter.price_call(
            at, sent, prefix, previous_baseline, index
        )
        yield ReplayRecord(
            call=call,
            index=index,
            messages=len(request),
            tokens_sent=sent,
            estimate=stats.last_estimate,
            compacted=compacted,
            strategies=tuple(a.strategy for a in result.applied) if compacted and result else (),
            tokens_saved=result.saved if compacted and result else 0,
            prefix_tokens=prefix,
            prefix_share=prefix / sent if sent else 0.0,
            request=tuple(request) if keep_requests else None,
            at=at,
            timed=timed,
            output_tokens=output,
            baseline_tokens=base,
            cost=cost,
            baseline=baseline,
            summary_tokens=summary,
        )
        previous = request
        previous_tokens = sent - tool_tokens
        previous_baseline = base
        call += 1
