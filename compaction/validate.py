"""What providers check before they accept a conversation, checked here first.

Both OpenAI and Anthropic answer 400 to a tool result whose call is not in the assistant
message right before its run of results, to a call left unanswered, and (for Anthropic, and for
OpenAI's reasoning models) to system messages in the middle. Every strategy's output on valid
input passes [`validate`][]; on invalid input a strategy refuses with the same error rather
than making it worse.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextvars import ContextVar, Token
from itertools import compress
from operator import is_not

from .messages import Message, ToolCall

__all__ = [
    "InvalidConversationError",
    "changed_span",
    "checked",
    "is_valid",
    "mark_checked",
    "problems",
    "problems_after",
    "reset_checked",
    "unanswered",
    "validate",
]

# The conversation the running compaction has checked last. A ladder hands each layer the
# tuple the run checked (on entry, or as the previous layer's accepted output), and each layer
# validates what it is given before it rewrites (a layer called on its own must refuse invalid
# input): within a run that second pass finds nothing new. Identity is enough: a tuple cannot
# change, and every field validity reads (role, tool calls, ``tool_call_id``) is frozen. Set
# by the engine for the length of one run only, so nothing outlives it.
_checked: ContextVar[tuple[Message, ...] | None] = ContextVar("compaction_checked", default=None)


class InvalidConversationError(ValueError):
    """A conversation a provider would reject. ``index`` names the first offending message."""

    def __init__(self, index: int, reason: str) -> None:
        self.index = index
        self.reason = reason
        super().__init__(f"message {index}: {reason}")


def problems(
    messages: Sequence[Message], *, pending: Collection[str] = ()
) -> list[InvalidConversationError]:
    """Every problem in ``messages``, in order (empty when valid).

    ``pending``: ids of calls whose result has not come back yet (a sub-agent at work, a long
    tool): left unanswered, they are not a problem here. The conversation is then valid as a
    history waiting on them, and becomes a valid request once their results are appended
    after them (see [`unanswered`][])."""
    found: list[InvalidConversationError] = []
    # Providers match results to calls by id, and Anthropic refuses two tool_use blocks with
    # one id anywhere in a request: an id belongs to one call in the whole conversation.
    first_use: dict[str, int] = {}
    n = len(messages)
    i = 0
    while i < n and messages[i].role == "system":
        i += 1
    while i < n:
        m = messages[i]
        if m.role == "system":
            found.append(
                InvalidConversationError(
                    i, "system message after the conversation started (only allowed at the start)"
                )
            )
        elif m.role == "tool":
            found.append(
                InvalidConversationError(
                    i,
                    f"tool result {m.tool_call_id!r} does not follow an assistant message "
                    "that called it",
                )
            )
        elif m.role == "assistant" and m.tool_calls:
            wanted = {}
            for call in m.tool_calls:
                if call.id in wanted:
                    found.append(
                        InvalidConversationError(i, f"tool call id {call.id!r} used twice")
                    )
                elif call.id in first_use:
                    found.append(
                        InvalidConversationError(
                            i,
                            f"tool call id {call.id!r} is already used by message "
                            f"{first_use[call.id]} (ids must be unique in a conversation)",
                        )
                    )
                else:
                    first_use[call.id] = i
                wanted[call.id] = call.name
            answered: set[str] = set()
            j = i + 1
            while j < n and messages[j].role == "tool":
                cid = messages[j].tool_call_id
                if cid not in wanted:
                    found.append(
                        InvalidConversationError(
                            j, f"tool result {cid!r} answers no call of message {i}"
                        )
                    )
                elif cid in answered:
                    found.append(InvalidConversationError(j, f"tool call {cid!r} answered twice"))
                answered.add(cid or "")
                j += 1
            missing = [cid for cid in wanted if cid not in answered and cid not in pending]
            if missing:
                found.append(
                    InvalidConversationError(
                        i, f"tool call(s) {', '.join(map(repr, missing))} left unanswered"
                    )
                )
            i = j
            continue
        i += 1
    return found


def changed_span(
    before: Sequence[Message], after: Sequence[Message]
) -> tuple[int, int, int] | None:
    """Where ``after`` differs from ``before``, by identity: ``(start, end, old_end)``, so
    that ``after[:start]`` is ``before[:start]`` and ``after[end:]`` is ``before[old_end:]``
    (the same objects); None when every message is the same. The stretch is widened to whole
    steps: it starts and ends at a message that is no tool result, in both."""
    n, m = len(after), len(before)
    lim = min(n, m)
    p = 0
    while p < lim and after[p] is before[p]:
        p += 1
    if p == n == m:
        return None
    s = 0
    while s < lim - p and after[n - 1 - s] is before[m - 1 - s]:
        s += 1
    x = p
    while x > 0 and ((x < n and after[x].role == "tool") or (x < m and before[x].role == "tool")):
        x -= 1
    y, y_old = n - s, m - s
    while y < n and after[y].role == "tool":
        y += 1
        y_old += 1
    return x, y, y_old


def problems_after(
    before: Sequence[Message], after: Sequence[Message], *, pending: Collection[str] = ()
) -> list[InvalidConversationError]:
    """``problems(after)``, when ``before`` is known valid (with the same ``pending``): only
    the stretch that differs is read when that settles it. Outside the stretch every message
    and every step is as it was; inside, the steps are checked on their own, and a call id
    there that ``before``'s stretch did not hold could repeat one outside, so the whole is
    checked then (and whenever something is found, so the errors name their indices)."""
    if len(before) == len(after):
        # Rewritten in place (cleared results, placeholders): the same roles, calls and
        # answers where they were leave every step as valid as it was.
        changed = compress(range(len(after)), map(is_not, after, before))
        if all(_same_place(after[i], before[i]) for i in changed):
            return []
    span = changed_span(before, after)
    if span is None:
        return []
    x, y, y_old = span
    window, old = after[x:y], before[x:y_old]
    if (
        any(m.role == "system" for m in window)
        or any(m.role == "system" for m in old)
        or (y_old < len(before) and before[y_old].role == "system")
    ):
        return problems(after, pending=pending)
    held = {c.id for m in old for c in m.tool_calls}
    if any(c.id not in held for m in window for c in m.tool_calls) or problems(
        window, pending=pending
    ):
        return problems(after, pending=pending)
    return []


def _same_place(new: Message, old: Message) -> bool:
    """Whether ``new`` stands where ``old`` stood as far as validity goes: its role, the call
    it answers and the ids of the calls it makes."""
    if new.role != old.role or new.tool_call_id != old.tool_call_id:
        return False
    return new.tool_calls is old.tool_calls or [c.id for c in new.tool_calls] == [
        c.id for c in old.tool_calls
    ]


def mark_checked(messages: tuple[Message, ...]) -> Token[tuple[Message, ...] | None]:
    """Record ``messages`` as checked and valid for the run in progress (the engine calls it;
    [`reset_checked`][] with the answer forgets it when the run ends)."""
    return _checked.set(messages)


def checked() -> tuple[Message, ...] | None:
    """The conversation the run in progress checked last (valid), or None outside a run."""
    return _checked.get()


def reset_checked(token: Token[tuple[Message, ...] | None]) -> None:
    """Forget what [`mark_checked`][] recorded since ``token`` (the end of a run)."""
    _checked.reset(token)


def validate(messages: Sequence[Message], *, pending: Collection[str] = ()) -> None:
    """Raise [`InvalidConversationError`][] for the first problem; return None if valid.
    ``pending`` as for [`problems`][]."""
    if messages is _checked.get():
        return
    found = problems(messages, pending=pending)
    if found:
        raise found[0]


def unanswered(messages: Sequence[Message]) -> tuple[ToolCall, ...]:
    """The tool calls in ``messages`` with no result in the run of tool messages right after
    their assistant message, oldest first: calls still waiting on their result (a sub-agent,
    a long tool) wherever they are. No layer of a ladder drops or cuts the message that makes
    one (see [`compaction.strategy`][]), so its result, when it comes, still pairs with it."""
    out: list[ToolCall] = []
    n = len(messages)
    i = 0
    while i < n:
        m = messages[i]
        i += 1
        if m.role != "assistant" or not m.tool_calls:
            continue
        answered: set[str | None] = set()
        while i < n and messages[i].role == "tool":
            answered.add(messages[i].tool_call_id)
            i += 1
        out.extend(call for call in m.tool_calls if call.id not in answered)
    return tuple(out)


def is_valid(messages: Sequence[Message]) -> bool:
    """True when a provider would accept the shape of ``messages``."""
    return not problems(messages)
