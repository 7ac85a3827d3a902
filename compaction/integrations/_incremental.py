"""A framework's history, converted once: each call converts only what is new.

A drop-in sees the agent's whole history before every model call. Converting all of it each
time makes a call cost O(history) and a run O(history²) (measured at 35-160 ms per call at
5,000 messages). Frameworks append to their history, so what was converted last time is kept,
by source: a call compares the new list with the sources it converted (identity first, then
equality, for frameworks that rebuild their items), keeps the conversions of the common
prefix and converts the rest. The messages it answers for the kept prefix are the very same
objects as before, so the trigger's prefix check is a pointer walk.

Conversion stays exactly what the adapter's ``from_*`` gives on the whole list: a call id an
earlier message already used is re-keyed over the whole list (rare, and then paid in full), a
Responses step that may still grow is read again, and a tool result whose call came earlier
gets that call's name.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

from .._trigger_view import AppendLog
from ..adapters import AdapterError
from ..adapters._coerce import plain
from ..adapters.openai import message_from_openai
from ..adapters.person import IsPerson, mark_authors
from ..adapters.rekey import rekey
from ..adapters.responses import _PEOPLE, _kind, from_responses
from ..messages import Message

__all__ = ["OpenAIHistory", "ResponsesHistory", "common_prefix"]


def common_prefix(old: list[Any], new: Sequence[Any]) -> int:
    """How many leading items of ``new`` are those of ``old`` (the same object, or equal)."""
    n = min(len(old), len(new))
    # One list comparison, in C, short-cut on identity: the usual case (the framework appended
    # to the list it had) is a pointer walk. No copy of the history: the new tail is lent to
    # ``old`` for the comparison and taken back (a copy touches every object's reference count,
    # which is what a call costs at thousands of messages).
    if n == len(old) and type(new) is list:
        if len(new) == n:
            if old == new:
                return n
        else:
            old.extend(new[n:])
            try:
                same = old == new
            finally:
                del old[n:]
            if same:
                return n
    else:
        head = list(new[:n])
        if head == (old if n == len(old) else old[:n]):
            return n
    for i in range(n):
        a, b = old[i], new[i]
        if a is not b and a != b:
            return i
    return n


class OpenAIHistory:
    """OpenAI chat messages (dicts or SDK objects) converted incrementally."""

    def __init__(self, is_person: IsPerson | None = None) -> None:
        self.is_person = is_person
        self.sources: list[Any] = []
        self.messages: list[Message] = []
        self._call_ids: set[str] = set()
        self._duplicates = False

    def extends(self, raw: Sequence[Any]) -> bool:
        """True when ``raw`` starts with everything converted so far."""
        return common_prefix(self.sources, raw) == len(self.sources)

    def convert(self, raw: Sequence[Any]) -> tuple[Message, ...]:
        """``from_openai(raw)``, converting only what differs from the last call."""
        keep = common_prefix(self.sources, raw)
        if keep < len(self.sources):
            del self.sources[keep:], self.messages[keep:]
            self._recount()
        new = [message_from_openai(raw[i], i) for i in range(keep, len(raw))]
        if self.is_person is not None:
            new = list(mark_authors(new, self.is_person))
        duplicates = self._duplicates
        ids = set()
        for m in new:
            for call in m.tool_calls:
                if call.id in self._call_ids or call.id in ids:
                    duplicates = True
                ids.add(call.id)
        self.sources.extend(raw[keep:])
        self.messages.extend(new)
        self._call_ids |= ids
        self._duplicates = duplicates
        out = tuple(self.messages)
        # A reused call id is re-keyed over the whole list, as from_openai does: which fresh id
        # it gets depends on every id in the conversation.
        return rekey(out) if duplicates else out

    def _recount(self) -> None:
        self._call_ids = set()
        self._duplicates = False
        for m in self.messages:
            for call in m.tool_calls:
                if call.id in self._call_ids:
                    self._duplicates = True
                self._call_ids.add(call.id)


class ResponsesHistory:
    """Responses API input items (the Agents SDK's) converted incrementally.

    Several items make one message (an assistant step: reasoning, text, calls), so the
    conversions are kept with the item each starts at, and the last message (a step that the
    next items may extend) is always read again.
    """

    def __init__(self, is_person: IsPerson | None = None) -> None:
        self.is_person = is_person
        self.sources: list[Any] = []
        self.lead: tuple[Message, ...] = ()
        # The lead, then the conversions: an AppendLog, so the compactor reads only its tail.
        self.messages = AppendLog()
        self.starts: list[int] = []  # the item each converted message starts at
        # Call id -> the names of the calls with that id, in order: a dropped message takes
        # back only its own (an id can be reused, and an earlier call keeps its name).
        self._names: dict[str, list[str]] = {}

    def convert(self, items: Sequence[Any], lead: tuple[Message, ...] = ()) -> Sequence[Message]:
        """``lead + from_responses(items)``, converting only what differs from the last call.

        ``lead`` (the agent's instructions as a system message) goes first; a different lead
        object starts the conversion afresh.
        """
        if isinstance(items, str | bytes) or not isinstance(items, Sequence):
            return lead + from_responses(items, is_person=self.is_person)
        if lead is not self.lead:
            self._forget()
            self.lead = lead
            self.messages.extend(lead)
        h = len(lead)
        # The whole list is compared with the items converted (an equality per item: the
        # Agents SDK rebuilds every item on every call, and gives the filter no per-run
        # identity under which its input only grows; CallModelData.context is the caller's
        # own context, None by default and free to be shared by many runs).
        keep = common_prefix(self.sources, items)
        # Messages wholly inside the common prefix and closed (the next one starts inside it).
        whole = max(bisect.bisect_right(self.starts, keep) - 1, 0)
        start = self.starts[whole] if whole < len(self.starts) else 0
        try:
            tail = from_responses(items[start:], is_person=self.is_person)
        except AdapterError:
            # Read the whole list again, so the error names the item by its real index.
            from_responses(items)
            raise
        starts = _starts(items, start)
        if len(starts) != len(tail):
            # Grouped otherwise than expected (a newer adapter): convert in full, keep nothing.
            self._forget()
            self.lead = ()
            return lead + from_responses(items, is_person=self.is_person)
        for m in self.messages[h + whole :]:
            for call in m.tool_calls:
                names = self._names.get(call.id)
                if names:
                    names.pop()
                    if not names:
                        del self._names[call.id]
        fixed: list[Message] = []
        for m in tail:
            if m.role == "tool" and m.name is None and m.tool_call_id in self._names:
                # from_responses names a result after its call; the call came before the tail.
                m = m.replace(name=self._names[m.tool_call_id][-1])
            fixed.append(m)
            for call in m.tool_calls:
                self._names.setdefault(call.id, []).append(call.name)
        self.messages.put_tail(h + whole, fixed)
        del self.starts[whole:]
        self.starts.extend(starts)
        # The items kept are those converted before (equal to the new ones): holding on to
        # the runner's fresh copies instead would free the old ones here, on every call.
        del self.sources[keep:]
        self.sources.extend(items[keep:])
        return self.messages

    def _forget(self) -> None:
        self.sources, self.starts, self._names = [], [], {}
        self.messages.cut(0)


def _starts(items: Sequence[Any], start: int) -> list[int]:
    # Where each message from ``start`` on begins, grouped as from_responses groups them: a
    # person message or a call output is a message of its own, a run of anything else is one
    # assistant step.
    starts: list[int] = []
    step_open = False
    for i in range(start, len(items)):
        item = plain(items[i])
        kind = _kind(item) if isinstance(item, Mapping) else ""
        if (kind == "message" and item.get("role") in _PEOPLE) or kind.endswith("_call_output"):
            starts.append(i)
            step_open = False
        elif not step_open:
            starts.append(i)
            step_open = True
    return starts
