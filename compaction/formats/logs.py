"""Reading agent logs as logs: the rules every log reader shares.

An agent log records what happened; a request is what to send. A log can hold what no
request may: parallel calls written one per assistant message, a system message in the middle
of the run (where the agent compacted or was re-instructed), calls the run never answered, the
agent's own compaction summary. Log readers turn those into a valid conversation here, the
same way everywhere, and report every change ([`Repair`][compaction.formats.loaded.Repair]):

- [`merge_split_calls`][]: consecutive assistant messages that each only add calls (no text of
  their own) are one message with several calls, put back together;
- [`system_boundary`][]: a system message after the start becomes a user-role message that
  says it is a system message, marked synthetic (never taken for the person's task) and
  ``meta["boundary"] = {"kind": "system"}``;
- [`native_compaction`][]: the agent's own compaction summary is marked as a summary
  (``meta["compaction"]``, so it is never the task anchor and records the messages it
  stood for) and ``meta["boundary"] = {"kind": "compaction", "agent": ...}``; it stays in
  the conversation and is counted like any message (it was billed);
- [`as_log`][]: all of the above, then [`repair`][compaction.formats.repair.repair]
  (unanswered calls answered with the visible "no result recorded", orphan results kept as
  user messages saying so).

What a log recorded about each model call goes in ``meta["recorded"]`` of the assistant
message the call produced (see [`recorded`][]), in one shape for every format, so the priced
replay and the bill check read Codex, Gemini or Copilot logs the way they read Claude Code's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..memory.transcript import SYNTHETIC_KEY, mark
from ..messages import Message
from .loaded import Repair
from .repair import repair

__all__ = [
    "BOUNDARY_KEY",
    "RECORDED_KEY",
    "as_log",
    "merge_split_calls",
    "native_compaction",
    "recorded",
    "system_boundary",
]

BOUNDARY_KEY: Final = "boundary"
RECORDED_KEY: Final = "recorded"

#: The label a mid-run system message carries once it is in the user role, so neither the
#: model nor a reader takes it for the person's words.
SYSTEM_LABEL: Final = "[system message in the middle of the run]\n"


def recorded(
    *,
    timestamp: str | float | None = None,
    model: str | None = None,
    cache_read: int | None = None,
    cache_write: int | None = None,
    uncached: int | None = None,
    output: int | None = None,
    **raw: Any,
) -> dict[str, Any]:
    """The ``meta["recorded"]`` value for one model call.

    ``timestamp``: ISO 8601 text or Unix seconds. Usage, when the log has it, as the
    provider's split of the input (``cache_read`` + ``cache_write`` + ``uncached`` = the
    input tokens billed) and ``output`` tokens; leave them ``None`` when it does not. ``raw``
    keeps the log's own usage record beside it (``raw_usage=...``).
    """
    out: dict[str, Any] = {}
    if timestamp is not None:
        out["timestamp"] = timestamp
    if model:
        out["model"] = model
    if uncached is not None or cache_read is not None or output is not None:
        out["usage"] = {
            "cache_read": int(cache_read or 0),
            "cache_write": int(cache_write or 0),
            "uncached": int(uncached or 0),
            "output": int(output or 0),
        }
    out.update(raw)
    return out


def system_boundary(message: Message) -> Message:
    """A system message found mid-run, as the marked user-role boundary it becomes."""
    meta = {k: v for k, v in message.meta.items() if k not in ("openai", "anthropic", "responses")}
    meta[SYNTHETIC_KEY] = True
    meta[BOUNDARY_KEY] = {"kind": "system"}
    return Message("user", SYSTEM_LABEL + message.content, meta=meta, id=message.id)


def native_compaction(
    message: Message, *, agent: str, replaces: Sequence[Message] = (), **details: Any
) -> Message:
    """``message`` (the agent's own compaction summary) marked as what it is."""
    boundary = {"kind": "compaction", "agent": agent, **details}
    marked = mark(message, strategy=agent, kind="summary", replaces=replaces, **details)
    return marked.replace(meta={**marked.meta, BOUNDARY_KEY: boundary})


def _only_calls(message: Message, first: Message) -> bool:
    """True when ``message`` adds calls and nothing else to ``first`` (no text of its own)."""
    text = message.content.strip()
    return bool(message.tool_calls) and (not text or text == first.content.strip())


def merge_split_calls(messages: Sequence[Message]) -> tuple[list[Message], list[Repair]]:
    """Consecutive assistant messages, the later ones holding only calls, merged into the
    first (its text, id and meta; every call in order)."""
    out: list[Message] = []
    done: list[Repair] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        j = i + 1
        if m.role == "assistant" and m.tool_calls:
            while j < n and messages[j].role == "assistant" and _only_calls(messages[j], m):
                j += 1
        if j > i + 1:
            calls = tuple(c for k in range(i, j) for c in messages[k].tool_calls)
            merged_ids = [messages[k].id for k in range(i, j) if messages[k].id]
            meta = {**m.meta, "merged_from": merged_ids} if merged_ids else dict(m.meta)
            out.append(m.replace(tool_calls=calls, meta=meta))
            detail = f"{j - i} messages, {len(calls)} calls"
            done.append(Repair("merged_calls", calls[0].id, len(out) - 1, detail))
        else:
            out.append(m)
        i = j
    return out, done


def _boundaries(messages: Sequence[Message]) -> tuple[list[Message], list[Repair]]:
    out: list[Message] = []
    done: list[Repair] = []
    started = False
    for m in messages:
        if m.role == "system" and started:
            out.append(system_boundary(m))
            done.append(Repair("boundary", "", len(out) - 1))
            continue
        started = started or m.role != "system"
        out.append(m)
    return out, done


def as_log(messages: Sequence[Message]) -> tuple[tuple[Message, ...], tuple[Repair, ...]]:
    """``messages`` of an agent log made a valid conversation, with every change reported.

    Split calls merged, mid-run system messages made boundaries, then the pairs repaired.
    The indexes of the first two kinds of repair are positions before the pair repair (which
    only inserts results after calls), so they are recomputed from the message marks.
    """
    merged, done = merge_split_calls(messages)
    bounded, _ = _boundaries(merged)
    fixed, paired = repair(bounded)
    out: list[Repair] = []
    for index, m in enumerate(fixed):
        if isinstance(m.meta.get(BOUNDARY_KEY), Mapping) and m.meta[BOUNDARY_KEY].get("kind") == (
            "system"
        ):
            out.append(Repair("boundary", "", index))
    ids = {r.call_id: r for r in done}
    for index, m in enumerate(fixed):
        if m.role == "assistant" and m.tool_calls and m.tool_calls[0].id in ids:
            r = ids.pop(m.tool_calls[0].id)
            out.append(Repair("merged_calls", r.call_id, index, r.detail))
    out.extend(ids.values())  # a merged message whose first call was rekeyed: old position
    return fixed, (*sorted(out, key=lambda r: r.index), *paired)
