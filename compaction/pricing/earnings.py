"""What each compaction of a priced replay earned: its cost, what it saved, and the net.

A compaction at call *k* is charged for rewriting the prompt (the input of call *k* above what
the same tokens would cost read from a warm cache) and for its summariser calls (at the
model's input and output prices). It is credited with what the calls from *k* up to the next
compaction (or the end) cost less than the same calls with no compaction at all (their
summariser calls aside), plus its own rewrite (already inside call *k*'s cost). So the nets of
all compactions add up to the baseline's cost minus the compacted run's cost (which includes
the summaries): nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..replay import ReplayRecord
from .prices import Price

__all__ = ["Earning", "earnings"]


@attrs.frozen(slots=True)
class Earning:
    """One compaction: at ``call``, over ``calls`` calls until the next; USD figures."""

    call: int
    calls: int
    rewrite: float
    summary: float
    saved: float

    @property
    def cost(self) -> float:
        return self.rewrite + self.summary

    @property
    def net(self) -> float:
        return self.saved - self.cost


def earnings(records: Sequence[ReplayRecord], price: Price) -> list[Earning]:
    """One [`Earning`][] per compaction in ``records`` (a priced replay, in order)."""
    out: list[Earning] = []
    starts = [i for i, r in enumerate(records) if r.compacted]
    for n, start in enumerate(starts):
        stop = starts[n + 1] if n + 1 < len(starts) else len(records)
        first = records[start]
        if first.cost is None:
            continue
        output_cost = first.cost.output * price.output / 1e6
        call_cost = first.cost.cost - first.cost.summary  # the call itself
        rewrite = max(
            call_cost - output_cost - first.cost.input_tokens * price.cache_read / 1e6, 0.0
        )
        summary_in, summary_out = first.summary_tokens
        summary = (summary_in * price.input + summary_out * price.output) / 1e6
        segment = records[start:stop]
        saved = (
            sum(
                r.baseline.cost - (r.cost.cost - r.cost.summary)
                for r in segment
                if r.baseline and r.cost
            )
            + rewrite
        )
        out.append(Earning(first.call, len(segment), rewrite, summary, saved))
    return out
