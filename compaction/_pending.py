"""Calls still waiting on their result, held out of every layer's reach.

A call whose result has not come back yet (a sub-agent at work, a long build: an assistant tool
call with no result after it, at the end of the conversation or anywhere) must come out of
every compaction exactly as it went in: the result, when it comes, pairs with it by its id, and
the parent must still see what it asked for. Each strategy could be taught that; instead the
base class keeps it, once, for every strategy (ours and a user's):

- before a layer rewrites, the message holding such a call is replaced by a **stand-in**: the
  same calls (ids and names) with empty arguments and no text, pinned (``meta["pinned"]``:
  no layer drops or summarises a pinned group), each open call answered by an empty, pinned
  result. The layer sees a valid conversation in which nothing of the open step can be cut
  (there is nothing in it to cut), and a target lowered by what the real message counts
  above its stand-in;
- after it, the stand-in is swapped back for the message itself and the stand-in answers are
  taken out. An answer that lost a stand-in or changed its calls is refused as invalid.

The calls open while a layer rewrites are also what a ledger written then names
([`compaction.memory.agents`][]).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import attrs

from .memory.agents import open_calls, waiting_on
from .memory.transcript import PINNED_KEY
from .messages import Message, ToolCall
from .result import Skip
from .tokens import TokenCounter
from .validate import InvalidConversationError, unanswered

if TYPE_CHECKING:
    from .engine import Run
    from .strategy import Strategy

#: A layer's answer.
Answer = Sequence[Message] | Skip | None

#: ``meta`` key on a stand-in and its answers (they never leave the base class).
STAND_IN_KEY = "compaction_pending"


@attrs.frozen(slots=True)
class Held:
    """A conversation with its open steps replaced by stand-ins (see the module docstring)."""

    messages: tuple[Message, ...]
    #: stand-in -> the message it stands for, by the stand-in's identity
    originals: dict[int, Message]
    pending: frozenset[str]
    #: the open calls themselves, oldest first
    calls: tuple[ToolCall, ...]
    #: what the originals count above their stand-ins and the stand-in answers
    extra: int

    def aim(self, tokens: int) -> int:
        """``tokens`` (a target or a limit of the real conversation) for the stand-in one."""
        return max(tokens - self.extra, 1)

    def restore(self, answer: Sequence[Message]) -> tuple[Message, ...]:
        """The layer's ``answer`` with the original messages back in place of their stand-ins
        and the stand-in answers taken out; an
        [`InvalidConversationError`][compaction.validate.InvalidConversationError] when the
        layer dropped a stand-in or changed its calls."""
        out: list[Message] = []
        back: set[int] = set()
        by_first = {m.tool_calls[0].id: m for m in self.originals.values()}
        for i, m in enumerate(answer):
            if m.role == "tool" and m.tool_call_id in self.pending:
                continue  # a stand-in answer
            if m.role == "assistant" and m.tool_calls:
                original = self.originals.get(id(m))
                if original is None:
                    original = by_first.get(m.tool_calls[0].id)
                    if original is not None and _ids(m.tool_calls) != _ids(original.tool_calls):
                        raise InvalidConversationError(
                            i, "a layer changed the calls of a step still waiting on a result"
                        )
                if original is not None:
                    back.add(id(original))
                    out.append(original)
                    continue
            out.append(m)
        if len(back) != len(self.originals):
            raise InvalidConversationError(
                len(out), "a layer dropped a step still waiting on its result"
            )
        return tuple(out)


def _ids(calls: Sequence[ToolCall]) -> tuple[str, ...]:
    return tuple(c.id for c in calls)


def pending_ids(messages: Sequence[Message]) -> frozenset[str]:
    """The ids of the calls in ``messages`` still waiting on their result."""
    return frozenset(c.id for c in unanswered(messages))


def hold(messages: Sequence[Message], pending: Collection[str], counter: TokenCounter) -> Held:
    """``messages`` with every step that holds a call in ``pending`` replaced by its stand-in."""
    out: list[Message] = []
    originals: dict[int, Message] = {}
    calls: list[ToolCall] = []
    extra = 0
    n = len(messages)
    i = 0
    while i < n:
        m = messages[i]
        i += 1
        if m.role != "assistant" or not any(c.id in pending for c in m.tool_calls):
            out.append(m)
            continue
        stand_in = Message(
            "assistant",
            "",
            tool_calls=tuple(ToolCall(c.id, c.name, "{}") for c in m.tool_calls),
            meta={PINNED_KEY: True, STAND_IN_KEY: True},
        )
        originals[id(stand_in)] = m
        out.append(stand_in)
        extra += counter.count(m) - counter.count(stand_in)
        while i < n and messages[i].role == "tool":
            out.append(messages[i])
            i += 1
        for call in m.tool_calls:
            if call.id in pending:
                calls.append(call)
                answer = Message(
                    "tool",
                    "",
                    tool_call_id=call.id,
                    name=call.name,
                    meta={PINNED_KEY: True, STAND_IN_KEY: True},
                )
                out.append(answer)
                extra -= counter.count(answer)
    return Held(tuple(out), originals, frozenset(pending), tuple(calls), extra)


def held_answer(strategy: Strategy, run: Run) -> Answer:
    """``strategy``'s answer to ``run`` with its open steps held (see the module docstring)."""
    held = hold(run.messages, run.pending, run.counter)
    with open_calls(waiting_on(held.calls)):
        answer = strategy._rewrite(
            held.messages, held.aim(run.target), run.counter, held.aim(run.limit)
        )
    return _restored(strategy, run, held, answer)


async def aheld_answer(strategy: Strategy, run: Run) -> Answer:
    """Async twin of [`held_answer`][]."""
    held = hold(run.messages, run.pending, run.counter)
    with open_calls(waiting_on(held.calls)):
        answer = await strategy._arewrite(
            held.messages, held.aim(run.target), run.counter, held.aim(run.limit)
        )
    return _restored(strategy, run, held, answer)


def _restored(strategy: Strategy, run: Run, held: Held, answer: Answer) -> Answer:
    if answer is None or isinstance(answer, Skip):
        return answer
    try:
        return held.restore(answer)
    except InvalidConversationError as exc:
        # A layer bug must never lose what the agent is waiting for: refused, loudly, as any
        # invalid answer is.
        strategy._failed(run, exc, "invalid output")
        return Skip("invalid")
