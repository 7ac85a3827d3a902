"""What the LangChain middleware remembers about one conversation (a LangGraph thread): its
compactor and the messages converted so far, so a call converts only what is new."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from .._trigger_view import AppendLog
from ..adapters.person import IsPerson, by_person, synthetic
from ..messages import Message
from ..trigger import Compactor
from ._incremental import common_prefix
from ._written import WrittenView, one_each
from .langchain_messages import message_from_langchain, message_to_langchain


class _Thread:
    """What the middleware remembers about one conversation."""

    __slots__ = ("by_id", "compactor", "converted", "is_person", "sources", "system", "written")

    def __init__(self, compactor: Compactor, is_person: IsPerson | None = None) -> None:
        self.compactor = compactor
        self.is_person = is_person
        # The LangChain messages converted so far, and their conversions, by position: a
        # message already converted (the same object, or an equal one) is not converted
        # again, so a call costs a pointer walk over the old messages.
        self.sources: list[BaseMessage] = []
        self.system: BaseMessage | None = None
        # The system message's conversion (if any) first, then those of ``sources``: an
        # AppendLog, so the compactor reads only its new tail (see _convert for why that is
        # safe).
        self.converted: AppendLog = AppendLog()
        # Our message -> the LangChain message it came from, to send unchanged messages back
        # out as the very objects the state holds.
        self.by_id: dict[int, BaseMessage] = {}
        # The view last sent, as LangChain messages: a call between compactions writes only
        # the steps appended since (the rest is the same list of objects as last time).
        # Unchanged messages go out as the state's own objects, those the ladder wrote or
        # rewrote are built once.
        self.written = WrittenView(one_each(self._write))

    def _write(self, m: Message) -> BaseMessage:
        lc = self.by_id.get(id(m))
        return lc if lc is not None else message_to_langchain(m)

    def to_langchain(self, sent: Sequence[Message]) -> list[BaseMessage]:
        return self.written.write(sent)

    def convert(self, system: BaseMessage | None, messages: Sequence[BaseMessage]) -> AppendLog:
        # The whole list is compared with what was converted (identity first, in C): a
        # conversation is followed only while it really extends what was mapped. LangGraph
        # gives no append-only identity to lean on instead: the state's message list is a new
        # list after every step, and under one thread_id the history can still be edited
        # (RemoveMessage, update_state, a message replaced by id); without a checkpointer
        # every conversation shares the thread None.
        old = self.system
        if system is not old and (system is None or old is None or system != old):
            self._cut(0)
            self.sources.clear()
            self.system = system
            if system is not None:
                self._append(system, -1)
        keep = common_prefix(self.sources, messages)
        base = keep + (system is not None)
        del self.sources[keep:]
        new = []
        for i in range(keep, len(messages)):
            self.sources.append(messages[i])
            new.append(self._read(messages[i], i))
        dropped = self.converted[base:]
        same = self.converted.put_tail(base, new)
        for m in dropped[same:]:
            self.by_id.pop(id(m), None)
        by_id, stale = self.by_id, False
        for m, lc in zip(self.converted[base:], messages[keep:], strict=True):
            old_lc = by_id.get(id(m))
            if old_lc is not lc:
                # A kept conversion now stands for the current object; what was written for
                # it last time is the previous object, so the next request is written afresh.
                stale = stale or old_lc is not None
                by_id[id(m)] = lc
        if stale:
            self.written.clear()
        return self.converted

    def _read(self, lc: BaseMessage, index: int) -> Message:
        m = message_from_langchain(lc, index)
        if m.role == "user" and self.is_person is not None and not by_person(m, self.is_person):
            return synthetic(m)
        return m

    def _append(self, lc: BaseMessage, index: int) -> None:
        m = self._read(lc, index)
        self.converted.append(m)
        self.by_id[id(m)] = lc

    def _cut(self, n: int) -> None:
        for m in self.converted[n:]:
            self.by_id.pop(id(m), None)
        self.converted.cut(n)
