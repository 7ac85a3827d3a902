"""A layer's answer judged by what it changed: what it counts and whether it is valid, read
from the view the layer was handed where the messages are the same objects.

A ladder judges every answer (count it, check it as a provider would) and most of an answer
is the view it came from: the stretch a layer rewrote is read, the rest is known. The count
of a view is kept in the run's memo ([`compaction._run_memo`][]) when it is known, so only a
count taken in this run, by this counter, is built on; without one (a layer called outside a
ladder, a counter of another kind) the whole answer is read, as before.
"""

from __future__ import annotations

from itertools import compress
from operator import is_not
from typing import TYPE_CHECKING

from . import _run_memo
from .messages import Message
from .tokens import CachingCounter, TokenCounter
from .validate import InvalidConversationError, changed_span, checked, problems, problems_after

if TYPE_CHECKING:
    from .engine import Run

__all__ = ["answer_count", "answer_problems", "remember_count"]

_KEPT = 4  # views whose count a run keeps (the current one, a trial's, the answers judged)


def remember_count(messages: tuple[Message, ...], tokens: int, counter: TokenCounter) -> None:
    """Record that ``messages`` count ``tokens`` by ``counter``, for the run in progress."""
    memo = _run_memo.memo()
    if memo is None:
        return
    counted: list[tuple[tuple[Message, ...], int, TokenCounter]] = memo.setdefault("counted", [])
    counted.insert(0, (messages, tokens, counter))
    del counted[_KEPT:]


def answer_count(run: Run, new: tuple[Message, ...]) -> int:
    """What ``new`` counts by the run's counter: the handed view's count, less what the
    stretch the layer changed counted, plus what the new stretch counts (a sum of per-message
    counts: our own counters only)."""
    counter = run.counter
    memo = _run_memo.memo()
    if memo is None or type(counter).count_messages is not CachingCounter.count_messages:
        return counter.count_messages(new)
    before = run.messages
    after = -1
    for messages, tokens, by in memo.get("counted", ()):
        if messages is before and by is counter and tokens == run.tokens:
            span = changed_span(before, new)
            if span is None:
                after = tokens
            elif len(new) == len(before):  # rewritten in place: only the changed ones
                changed = list(compress(range(len(new)), map(is_not, new, before)))
                after = tokens - sum(map(counter.count, map(before.__getitem__, changed)))
                after += sum(map(counter.count, map(new.__getitem__, changed)))
            else:
                x, y, y_old = span
                old, fresh = before[x:y_old], new[x:y]
                after = tokens - counter.count_messages(old) + counter.count_messages(fresh)
            break
    if after < 0:
        after = counter.count_messages(new)
    remember_count(new, after, counter)
    return after


def answer_problems(run: Run, new: tuple[Message, ...]) -> list[InvalidConversationError]:
    """``problems(new)``: from the handed view's validity when the run checked it."""
    if run.messages is checked():
        return problems_after(run.messages, new, pending=run.pending)
    return problems(new, pending=run.pending)
