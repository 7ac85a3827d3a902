"""``recall`` as a tool of each framework, answered from that framework's own full history.

Placeholders, cut markers and notes name the messages they stand for by recall id
(``compaction.memory.transcript.message_ref``: a message's own id, else a ``sha1:``
fingerprint of its content). A [`Session`][compaction.sessions.session.Session] can look
those ids up; the drop-ins keep no store of their own, and need none: each framework
already holds the whole history (the LangGraph state, pydantic-ai's run messages, the input
the Agents SDK runner hands the filter, the messages a LiteLLM caller sends). So the tool
converts that history with the same adapter the drop-in compacts with, which gives every
message the very id its placeholder names, and answers the original text.

Each factory imports its framework when called, never at import time:

- [`langchain_recall_tool`][]: a LangChain tool reading the graph state (``ToolRuntime``);
  ``CompactionMiddleware(recall=True)`` adds it to the agent.
- [`pydantic_ai_recall_toolset`][]: a toolset reading ``RunContext.messages``;
  ``Compaction(recall=True)`` contributes it.
- [`AgentsRecall`][]: remembers, per run, the last input the runner gave
  ``CompactionFilter`` and offers an Agents SDK function tool answering from the run that
  calls it; ``CompactionFilter(recall=True).recall_tool``.
- [`MessagesRecall`][]: an OpenAI-format tool spec plus a handler over the caller's own
  ``messages`` list, for LiteLLM (or any chat-completions loop).

The conversion runs only when the model calls ``recall``, never on an ordinary model call. A
note shows the first and last of the ids it stands for; recalling its range as shown
(``"sha1:… … sha1:…"``) lists them all, so every one is within the model's reach.
"""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ..memory.transcript import is_compaction_output, message_ref
from ..messages import Message
from ..sessions.recall import (
    DESCRIPTION,
    MAX_ID_CHARS,
    PARAMETERS,
    id_problem,
    parse_arguments,
    render_recalled,
)

__all__ = [
    "MAX_ID_CHARS",
    "AgentsRecall",
    "MessagesRecall",
    "find_original",
    "langchain_recall_tool",
    "pydantic_ai_recall_toolset",
    "recall_answer",
]

NAME: Final = "recall"

#: A note's range as it shows it: "first … last" (an ellipsis, or two or three dots).
_RANGE: Final = re.compile(r"\s*(\S+?)\s*(?:…|\.{2,3})\s*(\S+)\s*")
#: At most this many messages are listed for a range (the rest are counted).
MAX_LISTED: Final = 200
#: Each listed message shows this much of its text.
_HEAD_CHARS: Final = 100


def find_original(ref: str, messages: Iterable[Message]) -> Message | None:
    """The original message of ``messages`` that recall id ``ref`` names, or None.

    Compaction output (a note, a summary, a placeholder) is never answered: it is not the
    original, and the model already holds it.
    """
    for message in messages:
        if not is_compaction_output(message) and _names(ref, message):
            return message
    return None


def _head(message: Message) -> str:
    what = message.role + (f" {message.name}" if message.name else "")
    calls = ", ".join(f"{c.name}({c.arguments[:60]})" for c in message.tool_calls)
    text = " ".join(message.content[:_HEAD_CHARS].split())
    more = "…" if len(message.content) > _HEAD_CHARS else ""
    return f"{message_ref(message)} ({what}): {text}{more}" + (f" [calls {calls}]" if calls else "")


def _range_answer(first: str, last: str, messages: Iterable[Message]) -> str:
    originals = [m for m in messages if not is_compaction_output(m)]
    start = next((i for i, m in enumerate(originals) if _names(first, m)), None)
    if start is None:
        return f"no message with id {first!r} in this conversation's history"
    end = next((i for i in range(start, len(originals)) if _names(last, originals[i])), None)
    if end is None:
        return f"no message with id {last!r} at or after {first!r} in this conversation's history"
    span = originals[start : end + 1]
    lines = [_head(m) for m in span[:MAX_LISTED]]
    if len(span) > MAX_LISTED:
        lines.append(f"… and {len(span) - MAX_LISTED} more: recall a narrower range")
    header = f"{len(span)} messages from {first} to {last}; recall any id for its full text:"
    return "\n".join([header, *lines])


def _names(ref: str, message: Message) -> bool:
    if message.id == ref:
        return True
    # A fingerprint names a message by its content (as a Session's lookup does): also a
    # message that has an id by now but was fingerprinted before it had one.
    return ref.startswith("sha1:") and message_ref(message.replace(id=None)) == ref


def recall_answer(ref: Any, messages: Iterable[Message]) -> str:
    """The text the model gets back for ``ref``: the original, or a sentence saying why not.

    A note's range as it shows it (``"sha1:… … sha1:…"``) answers the list of every message
    from the first to the last (id, role, the head of its text), so each id a note stands
    for can be reached, though the note shows only two.
    """
    problem = id_problem(ref)
    if problem is not None:
        return problem
    messages = list(messages)
    found = find_original(ref, messages)
    span = _RANGE.fullmatch(ref) if found is None else None
    if span is not None:
        return _range_answer(span.group(1), span.group(2), messages)
    if found is None:
        return f"no message with id {ref!r} in this conversation's history"
    return render_recalled(found)


def _arguments_id(arguments: Any) -> Any:
    # A tool call's arguments, as JSON text or a mapping, to the id they name (or None).
    return parse_arguments(arguments)[0]


def _converted(convert: Callable[[Any], Sequence[Message]], items: Sequence[Any]) -> list[Message]:
    # The whole history in one call keeps tool results next to their calls (ids and all); a
    # history the adapter refuses as a whole is read item by item, keeping what it can read,
    # so one odd message does not make every other one unrecallable.
    try:
        return list(convert(items))
    except Exception:
        out: list[Message] = []
        for item in items:
            try:
                out.extend(convert([item]))
            except Exception:  # an unreadable item holds no recallable text
                continue
        return out


# -- LangChain ---------------------------------------------------------------------------------


def langchain_recall_tool() -> Any:
    """A LangChain ``BaseTool`` named ``recall`` that answers from the agent's graph state."""
    from langchain.tools import ToolRuntime, tool

    from .langchain_messages import message_from_langchain

    def convert(items: Sequence[Any]) -> list[Message]:
        return [message_from_langchain(m, i) for i, m in enumerate(items)]

    def recall(id: str, runtime: ToolRuntime) -> str:
        """Look up an earlier message by its recall id."""
        state = runtime.state
        history = state.get("messages", []) if isinstance(state, Mapping) else []
        return recall_answer(id, _converted(convert, list(history)))

    # The frameworks read the signature's types; under ``from __future__ import annotations``
    # they are strings naming names local to this function, so they are given as objects.
    recall.__annotations__ = {"id": str, "runtime": ToolRuntime, "return": str}
    return tool(NAME, description=DESCRIPTION)(recall)


# -- pydantic-ai -------------------------------------------------------------------------------


def pydantic_ai_recall_toolset(history: Callable[[Any], Sequence[Message]] | None = None) -> Any:
    """A pydantic-ai ``FunctionToolset`` with ``recall``, answering from the run's messages
    (or from ``history(ctx)``, for a drop-in that keeps what the run's messages lost)."""
    from pydantic_ai import RunContext, Tool
    from pydantic_ai.toolsets import FunctionToolset

    from .pydantic_ai_messages import from_pydantic_ai

    def recall(ctx: RunContext[Any], id: str) -> str:
        """Look up an earlier message by its recall id."""
        if history is not None:
            return recall_answer(id, history(ctx))
        return recall_answer(id, _converted(from_pydantic_ai, list(ctx.messages)))

    recall.__annotations__ = {"ctx": RunContext[Any], "id": str, "return": str}
    return FunctionToolset([Tool(recall, takes_ctx=True, name=NAME, description=DESCRIPTION)])


# -- the OpenAI Agents SDK ---------------------------------------------------------------------


class AgentsRecall:
    """``recall`` as an Agents SDK tool, answering from the input of the run that calls it.

    The runner hands ``call_model_input_filter`` the whole input (session history, new input
    and this run's items) before every model call, so the latest one holds every message the
    model could have seen a recall id for. It is kept per run, in a context variable: the
    runner calls the filter and the run's tools in that run's own context, so one agent and
    one filter serving several users at once answer each user from their own run, never from
    whichever run called the filter last. Only a reference is kept (no copy, so the per-call
    cost stays flat however long the run); it is converted when the model calls ``recall``.
    """

    def __init__(self) -> None:
        self._items: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
            f"compaction_recall_{id(self)}", default=None
        )
        self._tool: Any = None

    @property
    def items(self) -> list[Any]:
        """The input of the run in this context (empty outside a run the filter saw)."""
        return self._items.get() or []

    def remember(self, items: Any) -> None:
        """Keep ``items`` (the runner's model input) as this run's history to answer from."""
        if isinstance(items, list):
            self._items.set(items)

    def answer(self, ref: Any) -> str:
        from ..adapters.responses import from_responses

        items = self._items.get()
        if items is None:
            return (
                "recall has no history for this run: the agent's run needs the same "
                "CompactionFilter as its call_model_input_filter"
            )
        return recall_answer(ref, _converted(from_responses, items))

    @property
    def tool(self) -> Any:
        """An Agents SDK ``FunctionTool`` named ``recall`` (add it to the agent's ``tools``)."""
        if self._tool is None:
            from agents import function_tool

            answer = self.answer

            def recall(id: str) -> str:
                return answer(id)

            recall.__annotations__ = {"id": str, "return": str}

            self._tool = function_tool(recall, name_override=NAME, description_override=DESCRIPTION)
        return self._tool


# -- LiteLLM and any chat-completions loop -----------------------------------------------------


class _MessagesTool:
    """A tool answered over the caller's own OpenAI-format ``messages``: a subclass names it
    (``name``, ``description``, ``parameters``) and answers ``answer``; the spec and the tool
    message are the same for every such tool."""

    name: str = ""
    description: str = ""
    parameters: Mapping[str, Any] = {}

    @property
    def spec(self) -> dict[str, Any]:
        """The OpenAI chat-completions ``tools`` entry."""
        parameters = json.loads(json.dumps(self.parameters))
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    def answer(self, arguments: Any, messages: Sequence[Any]) -> str:
        raise NotImplementedError

    def handle(self, tool_call: Any, messages: Sequence[Any]) -> dict[str, Any]:
        """The ``{"role": "tool", ...}`` message answering ``tool_call`` (an SDK object or a
        dict with ``id`` and ``function.arguments``) over the caller's whole ``messages``."""
        if isinstance(tool_call, Mapping):
            call_id, function = tool_call.get("id"), tool_call.get("function") or {}
            arguments = function.get("arguments") if isinstance(function, Mapping) else None
        else:
            call_id = getattr(tool_call, "id", None)
            arguments = getattr(getattr(tool_call, "function", None), "arguments", None)
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "content": self.answer(arguments, messages),
        }


def _openai_history(messages: Sequence[Any]) -> list[Message]:
    from ..adapters.openai import from_openai

    return _converted(from_openai, list(messages))


class MessagesRecall(_MessagesTool):
    """``recall`` for a loop that keeps its own OpenAI-format ``messages`` list (LiteLLM).

    ``spec`` goes into the request's ``tools``; when the model calls it,
    ``handle(tool_call, messages)`` answers the tool message to append, from the full list
    the caller keeps (the hook compacts only what is sent, so that list is whole).
    """

    name = NAME
    description = DESCRIPTION
    parameters = PARAMETERS

    def answer(self, arguments: Any, messages: Sequence[Any]) -> str:
        """The result text for a call's ``arguments`` (JSON text or mapping) over ``messages``."""
        return recall_answer(_arguments_id(arguments), _openai_history(messages))
