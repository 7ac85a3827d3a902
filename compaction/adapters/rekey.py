"""One tool-call id, one call: duplicates across messages are given fresh ids, visibly.

Providers match a tool result to its call by id, and Anthropic refuses a request in which
two ``tool_use`` blocks share an id. Agent logs and hand-made requests do reuse ids (a
resumed session restarting its counter, ``call_1`` in every turn of a text-action agent), so
everything that reads conversations in (the adapters' ``from_*`` and the transcript readers)
passes them through [`rekey`][]: a call whose id an earlier message already used gets a new
one (``<id>-r2``, ``<id>-r3``...: only characters every provider accepts in an id, Anthropic
included), the results right after it follow, and both messages record
the change in ``meta["rekeyed"]`` (``{new id: old id}``), like the readers' other repairs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Final

from ..messages import Message, ToolCall

__all__ = ["REKEYED_KEY", "rekey"]

REKEYED_KEY: Final = "rekeyed"


def _fresh(old: str, taken: set[str]) -> str:
    n = 2
    while f"{old}-r{n}" in taken:
        n += 1
    return f"{old}-r{n}"


def rekey(messages: Sequence[Message]) -> tuple[Message, ...]:
    """``messages`` with every tool call's id unique across the conversation (see above).

    A conversation without duplicates comes back unchanged, message for message.
    """
    taken = {c.id for m in messages for c in m.tool_calls}
    taken |= {m.tool_call_id for m in messages if m.tool_call_id is not None}
    used: set[str] = set()
    out: list[Message] = []
    pending: dict[str, deque[str]] = {}  # old id -> new ids of the current group, in order
    for message in messages:
        if message.role == "tool" and pending:
            queue = pending.get(message.tool_call_id or "")
            if queue:
                new = queue.popleft()
                if new != message.tool_call_id:
                    changed = {new: message.tool_call_id or ""}
                    message = message.replace(
                        tool_call_id=new, meta={**message.meta, REKEYED_KEY: changed}
                    )
            out.append(message)
            continue
        pending = {}
        if message.role == "assistant" and message.tool_calls:
            calls: list[ToolCall] = []
            renamed: dict[str, str] = {}
            for call in message.tool_calls:
                new = call.id
                if call.id in used:
                    new = _fresh(call.id, taken)
                    taken.add(new)
                    renamed[new] = call.id
                    call = ToolCall(new, call.name, call.arguments)
                used.add(new)
                pending.setdefault(renamed.get(new, new), deque()).append(new)
                calls.append(call)
            if renamed:
                message = message.replace(
                    tool_calls=tuple(calls), meta={**message.meta, REKEYED_KEY: renamed}
                )
        out.append(message)
    return tuple(out)
