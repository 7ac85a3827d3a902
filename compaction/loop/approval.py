"""The approve-tool hook: asked before each tool call runs; allows, denies or rewrites it.

The hook is any callable ``approve(call, arguments)`` (sync, or async under ``arun``): ``call``
is the [`ToolCall`][compaction.messages.ToolCall] the model made, ``arguments`` a copy of its
decoded arguments. It answers:

- ``True`` or ``None``: run the call as the model made it;
- ``False``, or [`Deny`][] (with a reason for the model): do not run it; the model gets a
  refusal as the call's result, so the conversation stays valid and it can try something else;
- a mapping: run the call with these arguments instead (the conversation keeps the call the
  model made; the ``tool_call_started``/``tool_call_finished`` events carry what ran).

A hook that raises stops the turn (a guard that fails must not let a call through).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from ..messages import ToolCall

__all__ = ["ApproveTool", "Decision", "Deny"]


@attrs.frozen(slots=True)
class Deny:
    """The hook's answer for a call that must not run; ``reason`` is told to the model."""

    reason: str = ""


Answer = bool | None | Deny | Mapping[str, Any]
ApproveTool = Callable[[ToolCall, dict[str, Any]], Answer | Awaitable[Answer]]


@attrs.frozen(slots=True)
class Decision:
    """What the loop does with one call: run it with ``arguments``, or refuse with ``refusal``."""

    arguments: dict[str, Any]
    refusal: str | None = None
    rewritten: bool = False

    @property
    def allowed(self) -> bool:
        return self.refusal is None


def refusal_text(name: str, reason: str) -> str:
    """The tool result a denied call gets: says plainly that nothing ran, and why."""
    text = f"refused: the call to {name!r} was not approved and did not run"
    return f"{text}: {reason}" if reason else text


async def decide(
    approve: ApproveTool | None, call: ToolCall, arguments: dict[str, Any], sync: bool
) -> Decision:
    """Ask ``approve`` about ``call`` and read its answer (see the module docstring)."""
    if approve is None:
        return Decision(arguments)
    # A deep copy: a hook that edits what it was given in place must not change the call.
    answer: Any = approve(call, copy.deepcopy(arguments))
    if inspect.isawaitable(answer):
        if sync:
            close = getattr(answer, "close", None)
            if close is not None:
                close()
            raise TypeError("the approve_tool hook is async: use `await loop.arun(...)`")
        answer = await answer
    if answer is None or answer is True:
        return Decision(arguments)
    if answer is False:
        return Decision(arguments, refusal_text(call.name, ""))
    if isinstance(answer, Deny):
        return Decision(arguments, refusal_text(call.name, answer.reason))
    if isinstance(answer, Mapping):
        new = dict(answer)
        if "context" in new:
            raise ValueError("approve_tool may not set 'context': the loop passes it")
        return Decision(new, rewritten=new != arguments)
    raise TypeError(
        "approve_tool must answer True/None (allow), False or Deny(reason) (deny), or a "
        f"mapping of new arguments; it answered {type(answer).__name__} {answer!r}"
    )
