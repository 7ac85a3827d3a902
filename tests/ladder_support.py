"""Small, real strategies used to exercise the ladder's rules in tests and features.

They are ordinary :class:`Strategy` subclasses (not mocks): each records when it was asked, so a
test can check which layers the pipeline reached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from compaction import Message, Strategy, ToolCall
from compaction.memory.transcript import parse
from compaction.tokens import TokenCounter


class Recording(Strategy):
    name = "recording"

    def __init__(self, label: str | None = None) -> None:
        self.label = label or type(self).name
        self.asked: list[int] = []  # token totals it was asked at

    def _record(self, messages: tuple[Message, ...], counter: TokenCounter) -> None:
        self.asked.append(counter.count_messages(messages))


class DropOldestGroup(Recording):
    """Drops the oldest keep-or-drop group after the system block (never the last one)."""

    name = "drop_oldest_group"

    def rewrite(self, messages, *, target, counter):
        self._record(messages, counter)
        t = parse(messages)
        if len(t.groups) <= 1:
            return None
        first = t.groups[0]
        return messages[: first.start] + messages[first.end :]


class SameSize(Recording):
    """Answers a conversation exactly as big as the one it got (must be refused)."""

    name = "same_size"

    def rewrite(self, messages, *, target, counter):
        self._record(messages, counter)
        return list(messages)


class Bigger(Recording):
    """Answers a bigger conversation (must be refused)."""

    name = "bigger"

    def rewrite(self, messages, *, target, counter):
        self._record(messages, counter)
        return [*messages, Message("user", "extra " * 50)]


class Declines(Recording):
    name = "declines"

    def rewrite(self, messages, *, target, counter):
        self._record(messages, counter)
        return None


class Raises(Recording):
    name = "raises"

    def rewrite(self, messages, *, target, counter):
        self._record(messages, counter)
        raise RuntimeError("layer exploded")


class BreaksPairs(Recording):
    """Drops the first tool result it finds: a provider would answer 400, so it must be refused."""

    name = "breaks_pairs"

    def rewrite(self, messages, *, target, counter):
        self._record(messages, counter)
        for i, m in enumerate(messages):
            if m.role == "tool":
                return messages[:i] + messages[i + 1 :]
        return None


class ToTarget(Recording):
    """Drops oldest groups until under target in one rewrite (a realistic free layer)."""

    name = "to_target"

    def rewrite(self, messages, *, target, counter):
        self._record(messages, counter)
        t = parse(messages)
        total = counter.count_messages(messages)
        cut = None
        for g in t.groups[:-1]:
            total -= counter.count_messages(messages[g.start : g.end])
            cut = g.end
            if total <= target:
                break
        if cut is None:
            return None
        return messages[: t.system_end] + messages[cut:]


class AsyncToTarget(ToTarget):
    """The same as ToTarget, but does its work in ``arewrite`` after yielding to the loop."""

    name = "async_to_target"

    async def arewrite(self, messages, *, target, counter):
        await asyncio.sleep(0)
        return ToTarget.rewrite(self, messages, target=target, counter=counter)


def sizes(messages: Sequence[Message]) -> list[int]:
    return [len(m.content) for m in messages]


def irreducible_tokens(messages: Sequence[Message], counter: TokenCounter) -> int:
    """What no cut can shorten: the non-system messages' envelopes, tool-call ids and names."""
    bare = [
        m.replace(
            content="",
            tool_calls=tuple(ToolCall(c.id, c.name, "{}") for c in m.tool_calls),
            tokens=None,
        )
        for m in messages
        if m.role != "system"
    ]
    return counter.count_messages(bare)
