"""A clean handoff to a fresh context window, at a task boundary the model chooses.

Compaction shrinks a conversation the agent keeps working in. A long-horizon agent sometimes
knows better: one task is done, the next needs none of the last hour's tool output. It calls
``new_context`` with a short note of where things stand, and the next request starts over
with only what must carry across:

1. the system prompt;
2. the original task, as the person wrote it;
3. the ledger of everything else, model-free (``compaction.memory.ledger``): the
   person's rules and limits first, verbatim, then their facts, goals, files edited, failing
   tests, errors, the commands run — with the recall ids of every message set aside;
4. the model's own ``new_context`` call (its note, in its own voice) and the tool result
   that confirms the handoff.

**The library checks the note.** A model writing its own handoff tends to drop what it thinks
it no longer needs, and a rule the person set (``never push to main``, ``the budget cap is
$500``) is exactly what it must not drop. Every rule or limit the ledger holds that the note
does not carry verbatim is restored from the ledger (shown under "Still in force") and listed
in ``Handoff.restored``, so a caller or the ``compacted`` event can see what the model left
out. Everything set aside stays in the raw history: ``search`` and ``recall`` reach it.

A handoff is refused (the tool answers why, nothing changes) while any other tool call is
still waiting for its result: the call and its result would be split across windows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import attrs

from .memory.ledger import ledger_of
from .memory.note import MAX_NOTE_CHARS, ledger_text
from .memory.offered import MEMORY_TOOLS, offered, offering, tools_line
from .memory.transcript import PROVENANCE_KEY, parse
from .messages import Message

__all__ = [
    "NEW_CONTEXT",
    "take_handoff",
    "NEW_CONTEXT_SPEC",
    "Handoff",
    "HandoffRefused",
    "handoff",
    "handoff_reply",
]

NEW_CONTEXT: Final = "new_context"
NEW_CONTEXT_DESCRIPTION: Final = (
    "Start a fresh context window at a task boundary. Pass a short note of where things "
    "stand (what is done, what is next, anything you will need). The next request keeps "
    "the system prompt, the task, the person's rules and a record of the work; earlier "
    "messages stay reachable with 'search' and 'recall'."
)
NEW_CONTEXT_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"note": {"type": "string", "description": "Where things stand."}},
    "required": ["note"],
    "additionalProperties": False,
}
NEW_CONTEXT_SPEC: Final[dict[str, Any]] = {
    "name": NEW_CONTEXT,
    "description": NEW_CONTEXT_DESCRIPTION,
    "parameters": NEW_CONTEXT_PARAMETERS,
}
"""The ``new_context`` tool as a provider-neutral function spec (``name``, ``description``,
``parameters``): offer it to the model in any harness; answer its call with
[`Compactor.handoff`][compaction.trigger.Compactor.handoff]."""
#: What the ``new_context`` tool answers when the handoff was made.
DONE: Final = "New context started: earlier messages were set aside (search and recall reach them)."


class HandoffRefused(ValueError):
    """The conversation cannot be handed off now; the message says why (for the model)."""


@attrs.frozen
class Handoff:
    """A handoff made: ``messages`` the next request's start; ``replaced`` how many messages
    were set aside; ``note`` the model's note; ``restored`` the person's rules and limits the
    note did not carry, shown from the ledger instead; ``result`` the ``new_context`` call's
    tool result (the caller's own, or one made here for a caller that has not answered yet:
    append it to the agent's list)."""

    messages: tuple[Message, ...]
    replaced: int
    note: str
    restored: tuple[str, ...]
    result: Message


def _note(call: Any) -> str:
    try:
        args = json.loads(call.arguments or "{}")
    except (ValueError, RecursionError):
        return ""
    note = args.get("note") if isinstance(args, dict) else None
    return note if isinstance(note, str) else ""


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def _the_call(messages: Sequence[Message]) -> tuple[int, Any]:
    """Where the model asked for the handoff: its message index and call."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant" and message.tool_calls:
            for call in message.tool_calls:
                if call.name == NEW_CONTEXT:
                    return index, call
            break
    raise HandoffRefused(f"no {NEW_CONTEXT} call in the newest step")


def handoff(messages: Sequence[Message]) -> Handoff:
    """The next request after the model's ``new_context`` call (see the module docstring).

    ``messages`` is the conversation so far, ending with the assistant message that called
    ``new_context`` (and, if the caller already answered it, that call's result);
    [`HandoffRefused`][] when another call of that step or any earlier one is unanswered, or
    there is no such call."""
    msgs = tuple(messages)
    index, call = _the_call(msgs)
    step = msgs[index]
    if len(step.tool_calls) > 1:
        others = ", ".join(c.name for c in step.tool_calls if c is not call)
        raise HandoffRefused(f"{NEW_CONTEXT} must be the step's only call (also called: {others})")
    answered = {m.tool_call_id for m in msgs if m.role == "tool"}
    waiting = [
        c.name
        for m in msgs[:index]
        if m.role == "assistant"
        for c in m.tool_calls
        if c.id not in answered
    ]
    if waiting:
        raise HandoffRefused(
            f"tool calls still waiting for their results ({', '.join(waiting[:5])}): "
            "hand off once they are answered"
        )
    answers = [m for m in msgs[index + 1 :] if m.role == "tool" and m.tool_call_id == call.id]
    result = (
        answers[0] if answers else Message("tool", DONE, tool_call_id=call.id, name=NEW_CONTEXT)
    )
    parsed = parse(msgs[:index])
    system = msgs[: parsed.system_end]
    task: tuple[Message, ...] = ()
    if parsed.task is not None:
        group = parsed.groups[parsed.task]
        task = msgs[group.start : group.end]
    kept = {id(m) for m in (*system, *task)}
    rest = [m for m in msgs[:index] if id(m) not in kept]
    note = _note(call)
    if not rest:
        return Handoff((*system, *task, step, result), 0, note, (), result)
    ledger = ledger_of(rest)
    chars = sum(len(m.content) for m in rest)
    # The tools that reach what was set aside, named once, in the title: those offered, or
    # both when the caller did not say (a handoff made outside a compactor).
    tools = offered()
    line = tools_line(MEMORY_TOOLS if tools is None else tools)
    with offering(()):
        text = ledger_text(
            ledger,
            max(chars, 2 * MAX_NOTE_CHARS),
            messages=ledger.messages,
            title=(
                f"Context handoff: the model started a fresh window; {ledger.messages} earlier "
                "messages were set aside." + (f" {line}" if line else "")
            ),
        )
    said_note = _squash(note)
    rules = [s.text for s in ledger.said if s.kind == "rule"]
    restored = tuple(r for r in rules if _squash(r) not in said_note)
    missing = [r for r in restored if _squash(r) not in _squash(text)]
    if missing:
        text += "\nStill in force (the person's rules, verbatim):\n" + "\n".join(
            f"- {r}" for r in missing
        )
    record = {
        "strategy": "handoff",
        "kind": "note",
        "replaces": list(ledger.refs),
        "dropped": ledger.messages,
        "facts": ledger.record(),
        "ledger_chars": len(text),
        "restored": list(restored),
    }
    bridge = Message("user", text, meta={PROVENANCE_KEY: record})
    return Handoff((*system, *task, bridge, step, result), ledger.messages, note, restored, result)


def handoff_reply(done: bool, why: str = "") -> str:
    """The ``new_context`` tool's answer: done, or refused with why."""
    return DONE if done else f"No new context: {why}"


def take_handoff(compactor: Any, messages: Sequence[Message], *, announce: bool = True) -> Handoff:
    """Make the handoff the [`Compactor`][compaction.trigger.Compactor]'s view of the agent's
    list (``messages`` and the call's result after it), and send ``events.handed_off``
    (not with ``announce=False``: a handoff made again, for a compactor that lost it)."""
    from . import events
    from ._log import log
    from ._trigger_view import _Plan

    with offering(getattr(compactor, "memory_tools", MEMORY_TOOLS)):
        made = handoff(messages)
    agent = list(messages)
    if not any(m is made.result for m in agent):
        agent.append(made.result)
    counter = compactor.counter
    before = counter.count_messages(agent)
    tokens = counter.count_messages(made.messages)
    labels = {**compactor.labels, "context_size": before + compactor.tool_tokens,
              "window": compactor.window}  # fmt: skip
    plan = _Plan(
        agent, made.messages, tokens, 0, tokens + compactor.tool_tokens, False, False,
        compactor.target, labels,
    )  # fmt: skip
    compactor._anchor = None
    compactor.stats.compactions += 1
    compactor._commit(plan, made.messages, tokens)
    if not announce:
        log.info("trigger.handoff_made_again", replaced=made.replaced)
        return made
    log.info("trigger.handed_off", replaced=made.replaced, restored=len(made.restored))
    events.handed_off.send(
        compactor,
        replaced=made.replaced,
        restored=made.restored,
        before=before,
        after=tokens,
        labels=labels,
    )
    return made
