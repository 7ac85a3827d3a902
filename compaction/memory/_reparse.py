"""Reading the shape of a view from the shape of the view it was made from.

Within a run, each layer hands the next a view that keeps most of the previous one's message
objects: a stretch rewritten or replaced, the rest as it was. A group's extent and kind
depend only on the messages from its first one on, so the groups before the first changed
message (ending before it: the message that ended a group is read too) are the old groups,
and from a group start inside the unchanged tail on, the groups are the old ones moved by
the difference in length. Only the stretch between is read again. The newest and first
person-written user groups, and the pinned ones, are brought over the same way.

Kept apart from [`compaction.memory.transcript`][] (which calls it with its own reader, so
this module imports nothing of it at run time).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from itertools import compress
from operator import attrgetter, is_not
from typing import TYPE_CHECKING

import attrs

from ..messages import Message

if TYPE_CHECKING:
    from .transcript import Group, Transcript

    Scan = Callable[
        [tuple[Message, ...], int, list[Group], set[int], int | None, Callable[[int], bool]],
        tuple[int, int | None, int | None],
    ]

__all__ = ["reuse"]

_START = attrgetter("start")
_END = attrgetter("end")


def reuse(
    old: Transcript,
    msgs: tuple[Message, ...],
    scan: Scan,
    synthetic: Callable[[Message], bool],
    note: Callable[[Message], bool],
    pinned_: Callable[[Message], bool],
) -> Transcript:
    """``msgs`` parsed, reading again only what differs from ``old.messages`` (by identity).
    ``scan`` is the reader [`parse`][compaction.memory.transcript.parse] uses; ``synthetic``
    tells a message the harness wrote (never the task or the newest request), ``note`` a
    stand-in of ours, ``pinned_`` one the caller pinned: all ``scan`` reads of a message
    beside its role and calls."""
    olds = old.messages
    n, m = len(msgs), len(olds)
    lim = min(n, m)
    p = 0
    while p < lim and msgs[p] is olds[p]:
        p += 1
    s = 0
    while s < lim - p and msgs[n - 1 - s] is olds[m - 1 - s]:
        s += 1
    if p == n == m:
        return attrs.evolve(old, messages=msgs)
    if n == m:
        # Messages rewritten in place (a cleared result, a placeholder, a cut) that read as
        # the ones they replace leave the shape as it was.
        changed = compress(range(n), map(is_not, msgs, olds))
        if all(_alike(msgs[i], olds[i], synthetic, note, pinned_) for i in changed):
            return attrs.evolve(old, messages=msgs)
    shift = n - m
    olds_groups = old.groups
    k = bisect_left(olds_groups, p, key=_END)  # the first group not wholly read before p
    groups = list(olds_groups[:k])
    pinned = {x for x in old.pinned if x < k}
    at: list[int] = []

    def known(i: int) -> bool:
        # an old group starts here, and everything from here on is the old tail
        j = bisect_left(olds_groups, i - shift, key=_START)
        if j < len(olds_groups) and olds_groups[j].start == i - shift:
            at.append(j)
            return True
        return False

    start = groups[-1].end if groups else old.system_end
    _, anchor, task = scan(msgs, start, groups, pinned, n - s, known)
    base = len(groups)
    j = at[0] if at else len(olds_groups)
    tail = olds_groups[j:]
    if tail and shift:
        group = type(tail[0])
        tail = tuple([group(g.start + shift, g.end + shift, g.kind) for g in tail])
    moved = base - j
    pinned.update(x + moved for x in old.pinned if x >= j)
    # The newest person-written request: in the tail, else in what was read, else the
    # newest in the groups kept before it.
    if old.anchor is not None and old.anchor >= j:
        anchor = old.anchor + moved
    elif anchor is None and old.anchor is not None:
        anchor = old.anchor if old.anchor < k else _newest(groups[:k], msgs, synthetic)
    # The task: the first, in the groups kept, else in what was read, else in the tail.
    if old.task is not None and old.task < k:
        task = old.task
    elif task is None and old.task is not None:
        if old.task >= j:
            task = old.task + moved
        else:
            first = _first(tail, msgs, synthetic)
            task = None if first is None else first + base
    return attrs.evolve(
        old,
        messages=msgs,
        groups=(*groups, *tail),
        anchor=anchor,
        task=task,
        pinned=frozenset(pinned),
        words=frozenset(),
    )


def _alike(
    new: Message,
    old: Message,
    synthetic: Callable[[Message], bool],
    note: Callable[[Message], bool],
    pinned: Callable[[Message], bool],
) -> bool:
    """Whether the reader reads ``new`` as it reads ``old``: the same role, calls (by id) and
    answered call, pinned or not, a stand-in or not, the harness's or not."""
    if new.role != old.role or new.tool_call_id != old.tool_call_id:
        return False
    if pinned(new) != pinned(old):
        return False
    if new.tool_calls is not old.tool_calls and [c.id for c in new.tool_calls] != [
        c.id for c in old.tool_calls
    ]:
        return False
    if new.role == "tool":
        return True
    return note(new) == note(old) and synthetic(new) == synthetic(old)


def _newest(
    groups: list[Group], msgs: tuple[Message, ...], synthetic: Callable[[Message], bool]
) -> int | None:
    for index in range(len(groups) - 1, -1, -1):
        g = groups[index]
        if g.kind == "user" and not synthetic(msgs[g.start]):
            return index
    return None


def _first(
    groups: tuple[Group, ...], msgs: tuple[Message, ...], synthetic: Callable[[Message], bool]
) -> int | None:
    for index, g in enumerate(groups):
        if g.kind == "user" and not synthetic(msgs[g.start]):
            return index
    return None
