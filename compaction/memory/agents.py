"""Calls still waiting on their result, and the sub-agents among them, as the ledger names them.

A parent agent that starts a sub-agent (Claude Code's ``Task``/``Agent`` tool, Codex's
``spawn_agent``, any ``delegate``-style tool) or a long tool waits on a call whose result has
not come back yet. No layer of a ladder drops or cuts such a call (the base class holds it out
of every layer's reach, see [`compaction.strategy`][]); and a compaction that writes a ledger
while one is open names it there (tool name, call id, task line), sub-agents first, so a
parent that compacted mid-run still knows what it is waiting for.

The calls are not carried from one ledger to the next: each compaction names the calls open
in the conversation it compacts (set by the ladder for the length of a layer's rewrite,
[`waiting`][]), so a call answered since is never still listed as open.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import attrs

from ..messages import ToolCall

__all__ = [
    "AGENT_TOOLS",
    "MAX_TASK_LINE",
    "Waiting",
    "is_agent_call",
    "task_line",
    "waiting",
    "waiting_on",
]

#: Tool names that start a sub-agent (compared lowercased): Claude Code's ``Task`` (and its
#: later name ``Agent``), Codex's ``spawn_agent``, and the common ``delegate``/``dispatch``
#: spellings of other harnesses.
AGENT_TOOLS: Final = frozenset(
    {
        "task",
        "agent",
        "spawn_agent",
        "spawn_subagent",
        "subagent",
        "run_subagent",
        "dispatch_agent",
        "delegate",
        "delegate_task",
        "create_agent",
    }
)
#: Argument keys that name a sub-agent's kind: a call carrying one starts a sub-agent,
#: whatever the tool is called.
_AGENT_KEYS: Final = ("subagent_type", "agent_type", "agent_name")
#: Where a call's task is said, most telling first: a short description, then the task or
#: prompt itself, then what a plain tool does (its command or query).
_TASK_KEYS: Final = (
    "description",
    "task",
    "prompt",
    "message",
    "instructions",
    "goal",
    "query",
    "command",
    "cmd",
)
#: A task line is the first line of what the call asks, at most this many characters.
MAX_TASK_LINE: Final = 120
#: Arguments are read up to here (a sub-agent's prompt can be pages long; its first line is
#: what names it).
_MAX_ARGS_SCAN: Final = 100_000


@attrs.frozen(slots=True)
class Waiting:
    """One call whose result has not come back yet: ``name`` (the tool), ``call_id``, ``task``
    (its task line) and ``agent`` (it started a sub-agent)."""

    call_id: str
    name: str
    task: str
    agent: bool

    def line(self) -> str:
        """How the ledger shows it: ``Task explore (call toolu_1): Find the bug``."""
        head = f"{self.name} (call {self.call_id})"
        return f"{head}: {self.task}" if self.task else head


def _arguments(arguments: str) -> Mapping[str, Any] | None:
    if len(arguments) > _MAX_ARGS_SCAN:
        return None
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, Mapping) else None


def _first_line(text: str) -> str:
    for line in text[: MAX_TASK_LINE * 40].splitlines():
        words = " ".join(line.split())
        if words:
            return words if len(words) <= MAX_TASK_LINE else words[: MAX_TASK_LINE - 1] + "…"
    return ""


def is_agent_call(call: ToolCall) -> bool:
    """Whether ``call`` starts a sub-agent: a tool named for it (``AGENT_TOOLS``) or one whose
    arguments name a sub-agent's kind (``subagent_type``)."""
    if call.name.lower() in AGENT_TOOLS:
        return True
    args = _arguments(call.arguments)
    return args is not None and any(isinstance(args.get(k), str) for k in _AGENT_KEYS)


def task_line(call: ToolCall) -> str:
    """The first line of what ``call`` asks (its description, task or prompt; a plain tool's
    command or query; else its first text argument), whitespace collapsed, at most
    ``MAX_TASK_LINE`` characters; ``""`` when it asks nothing in words."""
    args = _arguments(call.arguments)
    if args is None:
        return _first_line(call.arguments) if not call.arguments.startswith("{") else ""
    kind = next((args[k] for k in _AGENT_KEYS if isinstance(args.get(k), str)), None)
    line = ""
    for key in _TASK_KEYS:
        value = args.get(key)
        if isinstance(value, str) and (line := _first_line(value)):
            break
    else:
        for value in args.values():
            if isinstance(value, str) and (line := _first_line(value)):
                break
    if kind and line:
        return _first_line(f"{line} ({kind})")
    return line or (_first_line(kind) if kind else "")


def waiting_on(calls: Sequence[ToolCall]) -> tuple[Waiting, ...]:
    """``calls`` as the ledger names them: sub-agents first, each kind oldest first."""
    found = [Waiting(c.id, c.name, task_line(c), is_agent_call(c)) for c in calls]
    return tuple(sorted(found, key=lambda w: not w.agent))


_WAITING: ContextVar[tuple[Waiting, ...]] = ContextVar("compaction_waiting", default=())


def waiting() -> tuple[Waiting, ...]:
    """The calls the conversation being compacted still waits on: what a ledger written now
    names (empty outside a layer's rewrite, or when none is open)."""
    return _WAITING.get()


@contextmanager
def open_calls(calls: tuple[Waiting, ...]) -> Iterator[None]:
    """Within the block, [`waiting`][] answers ``calls`` (the ladder sets it around a layer's
    rewrite)."""
    token = _WAITING.set(calls)
    try:
        yield
    finally:
        _WAITING.reset(token)
