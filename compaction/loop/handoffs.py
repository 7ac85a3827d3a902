"""The ``new_context`` tool of the turn loop, and the handoff it asks for.

The tool only answers; the handoff itself ([`compaction.trigger.Compactor.handoff`][]) is
made before the next model call, from the history with the call's answer already in it, so
the request that follows is the handoff's and the session stores it as its view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._log import log
from ..handoff import (
    DONE,
    NEW_CONTEXT,
    NEW_CONTEXT_DESCRIPTION,
    NEW_CONTEXT_PARAMETERS,
    HandoffRefused,
)
from ..messages import Message
from .tools import Tool

__all__ = ["hand_off", "new_context_tool"]


def new_context_tool() -> Tool:
    """The ``new_context`` tool a loop offers with ``handoff=True``."""

    def new_context(note: str) -> str:
        return DONE

    return Tool(
        name=NEW_CONTEXT,
        function=new_context,
        description=NEW_CONTEXT_DESCRIPTION,
        parameters=dict(NEW_CONTEXT_PARAMETERS),
    )


def hand_off(compactor: Any, messages: Sequence[Message], handed: set[str], agent: str) -> None:
    """Hand off when the newest step is a ``new_context`` call not handed off yet (``handed``
    holds the ids of those that were: a retried turn must not hand off twice)."""
    step = next((m for m in reversed(messages) if m.role == "assistant"), None)
    call = next((c for c in step.tool_calls if c.name == NEW_CONTEXT), None) if step else None
    if call is None or call.id in handed:
        return
    handed.add(call.id)
    try:
        compactor.handoff(messages)
    except HandoffRefused as exc:
        # The model called it beside other tools: the turn goes on in the same window.
        log.warning("loop.handoff_refused", agent=agent, reason=str(exc))
