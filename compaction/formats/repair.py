"""Making an agent log a valid conversation, visibly.

Agent logs are records of what happened, not requests: a session killed mid-tool leaves a call
with no result, a resumed or trimmed log can hold a result whose call is gone. A provider
rejects both, so the readers for agent logs repair them here, the same way everywhere, and
every repair is reported ([`Repair`][compaction.formats.loaded.Repair]) and marked in the
message's ``meta["repair"]``. Nothing is dropped: an orphan result becomes a user message that
says what it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ..adapters.rekey import REKEYED_KEY, rekey
from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from .loaded import Repair

__all__ = ["NO_RESULT", "orphan_note", "rekeyed", "repair"]

NO_RESULT: Final = "[no result recorded: the log ends or moves on before this call returned]"

REPAIR_KEY: Final = "repair"


def no_result(call: ToolCall, **meta: object) -> Message:
    """The explicit tool result for a call the log never answered."""
    return Message(
        "tool",
        NO_RESULT,
        tool_call_id=call.id,
        name=call.name,
        meta={REPAIR_KEY: "no_result", **meta},
    )


def orphan_note(result: Message) -> Message:
    """A tool result whose call is not in the log, kept as a user message that says so."""
    label = f"{result.name} " if result.name else ""
    text = (
        f"[orphan tool result: the {label}call {result.tool_call_id!r} this answers is not in "
        f"the log]\n{result.content}"
    )
    meta = {k: v for k, v in result.meta.items() if k not in ("openai", "anthropic")}
    meta[REPAIR_KEY] = "orphan_result"
    meta["orphan_tool_call_id"] = result.tool_call_id
    # A tool's output in the user role is still not the person's: never the task anchor.
    meta[SYNTHETIC_KEY] = True
    return Message("user", text, meta=meta, id=result.id)


def repair(messages: Sequence[Message]) -> tuple[tuple[Message, ...], tuple[Repair, ...]]:
    """``messages`` with every unanswered call answered and every orphan result turned into a
    user message, plus the list of what was done (empty when nothing needed it)."""
    out: list[Message] = []
    done: list[Repair] = []
    n = len(messages)
    i = 0
    while i < n:
        m = messages[i]
        if m.role == "assistant" and m.tool_calls:
            out.append(m)
            wanted = {c.id for c in m.tool_calls}
            answered: set[str] = set()
            stray: list[Message] = []
            j = i + 1
            while j < n and messages[j].role == "tool":
                t = messages[j]
                if t.tool_call_id in wanted and t.tool_call_id not in answered:
                    answered.add(t.tool_call_id or "")
                    out.append(t)
                else:
                    stray.append(t)
                j += 1
            for call in m.tool_calls:
                if call.id not in answered:
                    answered.add(call.id)
                    out.append(no_result(call))
                    done.append(Repair("no_result", call.id, len(out) - 1, call.name))
            for t in stray:
                out.append(orphan_note(t))
                done.append(Repair("orphan_result", t.tool_call_id or "", len(out) - 1))
            i = j
            continue
        if m.role == "tool":
            out.append(orphan_note(m))
            done.append(Repair("orphan_result", m.tool_call_id or "", len(out) - 1))
        else:
            out.append(m)
        i += 1
    fixed = rekey(out)
    return fixed, (*done, *rekeyed(fixed))


def rekeyed(messages: Sequence[Message]) -> tuple[Repair, ...]:
    """A [`Repair`][] for every call [`rekey`][compaction.adapters.rekey.rekey] renamed."""
    out = []
    for index, m in enumerate(messages):
        if m.role == "assistant" and isinstance(m.meta.get(REKEYED_KEY), dict):
            for new, old in m.meta[REKEYED_KEY].items():
                out.append(Repair("rekeyed", old, index, f"now {new!r}"))
    return tuple(out)
