"""Which memory tools the model has, so the text a compaction leaves can say so in one line.

A note names the messages it stands for by recall id. Whether the model can do anything with
those ids depends on what the request offers it: ``recall`` (a message back by id) and
``search`` (earlier messages by their words). A note that points at a tool the model does not
have would send it calling for nothing, so the line is written only while the tools are
offered: the [`Compactor`][compaction.trigger.Compactor] reads their names from the tool schemas
it counts (what the request really carries) and sets them around each run of its ladder with
[`offering`][]. Outside such a run nothing is known, and nothing is said.

A context variable rather than an argument: the line is one sentence of the note, and the
note is written deep inside the strategies, which take the same arguments with or without it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

__all__ = ["MEMORY_TOOLS", "memory_tool_names", "offered", "offering", "tools_line"]

#: The tools a note may mention, in the order it names them.
MEMORY_TOOLS: Final = ("search", "recall")

_OFFERED: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "compaction_memory_tools", default=None
)


def _name(schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return None
    function = schema.get("function")
    if isinstance(function, Mapping):  # chat completions: {"type": "function", "function": {...}}
        return function.get("name")
    return schema.get("name")  # Responses, Anthropic and neutral specs


def memory_tool_names(schemas: Iterable[Any]) -> tuple[str, ...]:
    """The memory tools among ``schemas`` (tool specs in any provider's shape)."""
    names = {_name(s) for s in schemas}
    return tuple(n for n in MEMORY_TOOLS if n in names)


def offered() -> tuple[str, ...] | None:
    """The memory tools of the run in progress (None: not known here)."""
    return _OFFERED.get()


@contextmanager
def offering(names: Iterable[str]) -> Iterator[None]:
    """Within the block, notes say the model has ``names`` (and only those)."""
    token = _OFFERED.set(tuple(names))
    try:
        yield
    finally:
        _OFFERED.reset(token)


def tools_line(names: Iterable[str] | None) -> str:
    """The sentence a note ends its recall ids with: ``""`` when no tool is offered."""
    shown = [n for n in MEMORY_TOOLS if n in set(names or ())]
    if not shown:
        return ""
    verb = "reach" if len(shown) > 1 else "reaches"
    return f"The {' and '.join(shown)} tool{'s' if len(shown) > 1 else ''} {verb} them."
