"""The compacted view, written back to a framework's objects once: each call writes only what
is new.

After a compaction, every call until the next one sends the same compacted prefix followed by
the steps appended since. Writing the whole view back into framework objects on every call
made a call cost O(view) again (tens of milliseconds at thousands of messages, most of it
deep copies of messages that did not change). So what was written is kept: a call compares
the view it must send with the one it wrote last (identity first, in C, as
`common_prefix` in `compaction.integrations._incremental` does), keeps what the common
prefix wrote and writes the rest.

A framework object may stand for several of our messages (pydantic-ai sends a call's results
and the next user prompt in one ``ModelRequest``), so the writer works in *units*: a run of
messages and the objects written for it. A unit is kept only when the message after it is in
the common prefix too, since that message is what closed it; the last unit is written again
whenever the view grew, because new messages may belong to it.

The objects handed out are the same from call to call, as the framework's own history
objects are when nothing is compacted: a framework that mutated what it is sent would corrupt
its own history too, so it does not, and the writer relies on that.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..messages import Message
from ._incremental import common_prefix

__all__ = ["Units", "WrittenView", "many_each", "one_each"]

#: Writes messages as framework objects, a unit at a time: ``(objects, end)`` per unit, where
#: ``end`` is the index (in the messages given) just past the unit's last message.
Units = Callable[[Sequence[Message]], Iterable[tuple[Sequence[Any], int]]]


def one_each(write: Callable[[Message], Any]) -> Units:
    """Units for a writer that maps each message to one object on its own."""

    def units(messages: Sequence[Message]) -> Iterable[tuple[Sequence[Any], int]]:
        return (((write(m),), i + 1) for i, m in enumerate(messages))

    return units


def many_each(write: Callable[[Message], Sequence[Any]]) -> Units:
    """Units for a writer that maps each message to any number of objects on its own."""

    def units(messages: Sequence[Message]) -> Iterable[tuple[Sequence[Any], int]]:
        return ((write(m), i + 1) for i, m in enumerate(messages))

    return units


class WrittenView:
    """The last view written, kept so the next call writes only what differs."""

    __slots__ = ("_ends", "_objects", "_sent", "_stops", "_units")

    def __init__(self, units: Units) -> None:
        self._units = units
        self._sent: list[Message] = []
        self._objects: list[Any] = []
        self._ends: list[int] = []  # per unit: the index in _sent just past it
        self._stops: list[int] = []  # per unit: len(_objects) just past it

    def write(self, sent: Sequence[Message]) -> list[Any]:
        """``sent`` as framework objects (a new list; its objects reused where they can be)."""
        same = common_prefix(self._sent, sent)
        # Units that end before the first message that differs were closed by a message both
        # views share: they stand as written. The unit that ends at it may grow.
        kept = bisect.bisect_left(self._ends, same)
        start = self._ends[kept - 1] if kept else 0
        del self._ends[kept:], self._stops[kept:]
        del self._objects[self._stops[-1] if self._stops else 0 :]
        tail = sent[start:]
        for objects, end in self._units(tail):
            self._objects.extend(objects)
            self._ends.append(start + end)
            self._stops.append(len(self._objects))
        self._sent = list(sent)  # a copy: the caller's list may change under us
        return list(self._objects)

    def clear(self) -> None:
        """Forget what was written (the next call writes the whole view)."""
        self._sent, self._objects, self._ends, self._stops = [], [], [], []
