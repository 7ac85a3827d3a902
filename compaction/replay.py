"""Replay a recorded transcript through a :class:`~compaction.trigger.Compactor`.

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
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import attrs

from .messages import Message
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


@attrs.frozen(slots=True)
class ReplayTotals:
    """A whole replay in a few numbers (for the CLI and the benchmarks).

    ``cache_share`` is the share of all tokens sent that were an unchanged prefix of the
    previous request; ``strategies`` counts how often each strategy applied.
    """

    calls: int
    compactions: int
    tokens_sent: int
    max_tokens_sent: int
    tokens_saved: int
    prefix_tokens: int
    cache_share: float
    strategies: dict[str, int] = attrs.field(eq=False)

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
        data = self._data
        for i in range(self._stop):
            yield data[i]


def _common_prefix(a: Sequence[Message], b: Sequence[Message], compactor: Compactor) -> int:
    count = compactor.counter.count
    total = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and x != y:
            break
        total += count(x)
    return total


def replay(
    messages: Sequence[Message], compactor: Compactor, *, keep_requests: bool = False
) -> Iterator[ReplayRecord]:
    """Yield a :class:`ReplayRecord` for every model call the transcript ``messages`` records.

    The compactor is :meth:`~compaction.trigger.Compactor.reset` first (its stats keep
    accumulating) and follows the transcript from there; replay it with a fresh compactor for
    figures of its own. ``keep_requests`` keeps every request on its record (memory grows
    with the transcript times the window).
    """
    msgs = tuple(messages)
    for i, m in enumerate(msgs):
        if not isinstance(m, Message):
            raise TypeError(f"messages[{i}] must be a compaction.Message, got {type(m).__name__}")
    compactor.reset()
    tool_tokens = compactor.tool_tokens
    previous: Sequence[Message] | None = None
    previous_tokens = 0  # messages only
    call = 0
    for index, message in enumerate(msgs):
        if message.role != "assistant" or index == 0 or msgs[index - 1].role == "assistant":
            continue
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
        )
        previous = request
        previous_tokens = sent - tool_tokens
        call += 1
