"""``search`` and ``new_context`` as tools of each framework, beside ``recall``.

Both are opt-in, one argument each, in every drop-in (``search=True``, ``handoff=True``), and
like [`recall`][compaction.integrations.recall_tools] they need no store: each framework
already holds the whole conversation (the LangGraph state, pydantic-ai's run messages, the
input the Agents SDK runner hands the filter, the messages a LiteLLM caller keeps).

- ``search`` converts that history with the drop-in's own adapter (so every message has the
  very recall id its placeholder names), indexes it in an in-memory SQLite FTS5 index
  ([`SearchIndex`][compaction.memory.search.SearchIndex], the one sessions use) and answers
  ranked snippets with recall ids. One index per call, built from one conversation's history:
  a search can only ever answer that conversation. The query is bounded and quoted word by
  word ([`fts_queries`][compaction.memory.search.fts_queries]), so no input is FTS syntax and
  none is too long to parse. Compaction output and the memory tools' own calls and answers
  are not indexed (a search would otherwise find its earlier answers).
- ``new_context`` answers at once (refused, with why, when the history it can see shows the
  call beside another or an earlier call unanswered); the handoff itself is the drop-in's,
  before the next model call: [`hand_off_if_asked`][] finds the answered call, and the
  [`Compactor`][compaction.trigger.Compactor] makes the handoff
  ([`compaction.handoff`][]), sends ``events.handed_off`` with the rules the note left out,
  and from then on sends the handoff's view followed by what the agent appends. A drop-in
  whose tool cannot see the step (the Agents SDK's) gets the refusals the hook finds, to
  tell the model in the next request; one that keeps the handoff in its framework's state
  (LangChain's) makes it again with [`restore_handoff`][] for a compactor that lost it.

Each factory imports its framework when called, never at import time.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ..handoff import (
    DONE,
    NEW_CONTEXT,
    NEW_CONTEXT_DESCRIPTION,
    NEW_CONTEXT_PARAMETERS,
    HandoffRefused,
    handoff,
    handoff_reply,
)
from ..memory.search import MAX_HITS, SearchIndex, render_hits
from ..memory.transcript import is_compaction_output, message_ref
from ..messages import Message
from ..sessions.recall import SEARCH_DESCRIPTION, SEARCH_PARAMETERS
from ._handoffs import (
    MAX_REFUSALS,
    _newest_step,
    hand_off_at,
    hand_off_if_asked,
    newest_new_context,
    restore_handoff,
)
from .recall_tools import _converted, _MessagesTool, _openai_history

__all__ = [
    "MAX_REFUSALS",
    "SEARCH",
    "AgentsContextTools",
    "MessagesNewContext",
    "MessagesSearch",
    "hand_off_at",
    "hand_off_if_asked",
    "newest_new_context",
    "restore_handoff",
    "langchain_new_context_tool",
    "langchain_search_tool",
    "new_context_answer",
    "pydantic_ai_tools",
    "search_answer",
]

SEARCH: Final = "search"
#: The tools whose calls and answers are not searched: they only repeat what they found.
_MEMORY_TOOLS: Final = frozenset({SEARCH, "recall", NEW_CONTEXT})


# -- the answers, framework-neutral ------------------------------------------------------------


def _searchable(messages: Sequence[Message]) -> Iterable[tuple[int, Message]]:
    memory_calls = {c.id for m in messages for c in m.tool_calls if c.name in _MEMORY_TOOLS}
    for seq, m in enumerate(messages):
        if is_compaction_output(m):
            continue
        if m.role == "tool" and m.tool_call_id in memory_calls:
            continue
        mine = [c for c in m.tool_calls if c.id in memory_calls]
        if mine:
            if not m.content and len(mine) == len(m.tool_calls):
                continue
            # The step's text and other calls are found, under the step's own recall id.
            rest = tuple(c for c in m.tool_calls if c.id not in memory_calls)
            m = m.replace(tool_calls=rest, id=message_ref(m))
        yield seq, m


def search_answer(query: Any, messages: Sequence[Message], limit: Any = 5) -> str:
    """The text a model gets back for ``search(query, limit)`` over one conversation's
    ``messages``: ranked snippets with recall ids, or a sentence saying why none. Any input
    is an answer, never an exception: a query that is not a string, a huge one (cut to
    ``MAX_QUERY_CHARS``), FTS syntax (quoted)."""
    if not isinstance(query, str):
        return 'search needs a "query" argument (a string)'
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        limit = 5
    index = SearchIndex()
    try:
        index.add(_searchable(messages))
        hits = index.search(query, min(limit, MAX_HITS))
    finally:
        index.close()
    return render_hits(query, hits)


def new_context_answer(messages: Sequence[Message], call_id: str | None = None) -> str:
    """What the ``new_context`` tool answers, from the history the tool can see: refused with
    why when the newest step calls it beside another tool or an earlier call is unanswered;
    else done (the drop-in hands off before the next model call). A history that does not
    show the call (``call_id``, when the tool knows it) yet — the Agents SDK's tools see the
    input of the call, not its step — is answered done, never judged by an older step: the
    drop-in's own check refuses before anything changes, and tells the model so."""
    index = _newest_step(messages)
    if index is None or not any(
        c.name == NEW_CONTEXT and call_id in (None, c.id) for c in messages[index].tool_calls
    ):
        return DONE
    try:
        handoff(messages[: index + 1])
    except HandoffRefused as exc:
        return handoff_reply(False, str(exc))
    return DONE


def _arguments(arguments: Any) -> Mapping[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError):
            return {}
    return arguments if isinstance(arguments, Mapping) else {}


# -- LangChain ---------------------------------------------------------------------------------


def _langchain_history(runtime: Any) -> list[Message]:
    from .langchain_messages import message_from_langchain

    def convert(items: Sequence[Any]) -> list[Message]:
        return [message_from_langchain(m, i) for i, m in enumerate(items)]

    state = runtime.state
    history = state.get("messages", []) if isinstance(state, Mapping) else []
    return _converted(convert, list(history))


def langchain_search_tool() -> Any:
    """A LangChain ``BaseTool`` named ``search`` over the agent's graph state."""
    from langchain.tools import ToolRuntime, tool

    def search(query: str, runtime: ToolRuntime, limit: int = 5) -> str:
        """Search earlier messages by their words."""
        return search_answer(query, _langchain_history(runtime), limit)

    search.__annotations__ = {"query": str, "runtime": ToolRuntime, "limit": int, "return": str}
    return tool(SEARCH, description=SEARCH_DESCRIPTION)(search)


def langchain_new_context_tool() -> Any:
    """A LangChain ``BaseTool`` named ``new_context`` (the middleware hands off)."""
    from langchain.tools import ToolRuntime, tool

    def new_context(note: str, runtime: ToolRuntime) -> str:
        """Start a fresh context window."""
        return new_context_answer(_langchain_history(runtime))

    new_context.__annotations__ = {"note": str, "runtime": ToolRuntime, "return": str}
    return tool(NEW_CONTEXT, description=NEW_CONTEXT_DESCRIPTION)(new_context)


# -- pydantic-ai -------------------------------------------------------------------------------


def pydantic_ai_tools(
    *, search: bool, handoff: bool, history: Callable[[Any], Sequence[Message]] | None = None
) -> list[Any]:
    """pydantic-ai ``Tool``s for ``search`` and ``new_context``, reading ``RunContext.messages``
    (or ``history(ctx)``, for a drop-in that keeps what the run's messages lost)."""
    if not (search or handoff):
        return []
    from pydantic_ai import RunContext, Tool

    from .pydantic_ai_messages import from_pydantic_ai

    def run_messages(ctx: RunContext[Any]) -> Sequence[Message]:
        return _converted(from_pydantic_ai, list(ctx.messages))

    read = run_messages if history is None else history

    def search_tool(ctx: RunContext[Any], query: str, limit: int = 5) -> str:
        """Search earlier messages by their words."""
        return search_answer(query, read(ctx), limit)

    def new_context(ctx: RunContext[Any], note: str) -> str:
        """Start a fresh context window."""
        return new_context_answer(read(ctx))

    search_tool.__annotations__ = {"ctx": RunContext[Any], "query": str, "limit": int}
    search_tool.__annotations__["return"] = str
    new_context.__annotations__ = {"ctx": RunContext[Any], "note": str, "return": str}
    tools = []
    if search:
        tools.append(Tool(search_tool, takes_ctx=True, name=SEARCH, description=SEARCH_DESCRIPTION))
    if handoff:
        tools.append(
            Tool(new_context, takes_ctx=True, name=NEW_CONTEXT, description=NEW_CONTEXT_DESCRIPTION)
        )
    return tools


# -- the OpenAI Agents SDK ---------------------------------------------------------------------


class AgentsContextTools:
    """``search`` and ``new_context`` (and, for a session, ``recall``) as Agents SDK function
    tools over the history ``items()`` answers (a list, or an awaitable of one): an
    [`AgentsRecall`][compaction.integrations.recall_tools.AgentsRecall]'s ``items`` (the
    filter's input, kept per run), or a session's stored items. ``done`` is what
    ``new_context`` answers when it is not refused (a session hands off only at its next
    read)."""

    def __init__(self, items: Callable[[], Any], done: str = DONE) -> None:
        self._items = items
        self._done = done
        self._tools: dict[str, Any] = {}

    async def history(self) -> list[Message]:
        from ..adapters.responses import from_responses

        items = self._items()
        if inspect.isawaitable(items):
            items = await items
        return _converted(from_responses, list(items or ()))

    def _tool(self, name: str, description: str, answer: Any, annotations: Any) -> Any:
        if name not in self._tools:
            from agents import function_tool

            answer.__annotations__ = annotations
            self._tools[name] = function_tool(
                answer, name_override=name, description_override=description
            )
        return self._tools[name]

    @property
    def search_tool(self) -> Any:
        """An Agents SDK ``FunctionTool`` named ``search``."""
        history = self.history

        async def search(query: str, limit: int = 5) -> str:
            return search_answer(query, await history(), limit)

        return self._tool(
            SEARCH, SEARCH_DESCRIPTION, search, {"query": str, "limit": int, "return": str}
        )

    @property
    def new_context_tool(self) -> Any:
        """An Agents SDK ``FunctionTool`` named ``new_context`` (the drop-in hands off)."""
        from agents.tool_context import ToolContext

        history, done = self.history, self._done

        async def new_context(ctx: ToolContext[Any], note: str) -> str:
            # Its own call, by id: an older step that called new_context is not this call.
            call_id = getattr(ctx, "tool_call_id", None)
            mine = call_id if isinstance(call_id, str) else ""
            answer = new_context_answer(await history(), mine)
            return done if answer == DONE else answer

        hints = {"ctx": ToolContext[Any], "note": str, "return": str}
        return self._tool(NEW_CONTEXT, NEW_CONTEXT_DESCRIPTION, new_context, hints)

    @property
    def recall_tool(self) -> Any:
        """An Agents SDK ``FunctionTool`` named ``recall``."""
        from ..sessions.recall import DESCRIPTION
        from .recall_tools import recall_answer

        history = self.history

        async def recall(id: str) -> str:
            return recall_answer(id, await history())

        return self._tool("recall", DESCRIPTION, recall, {"id": str, "return": str})


# -- LiteLLM and any chat-completions loop -----------------------------------------------------


class MessagesSearch(_MessagesTool):
    """``search`` for a loop that keeps its own OpenAI-format ``messages`` (LiteLLM): put
    ``spec`` in ``tools``, answer the model's calls with ``handle(tool_call, messages)``."""

    name = SEARCH
    description = SEARCH_DESCRIPTION
    parameters = SEARCH_PARAMETERS

    def answer(self, arguments: Any, messages: Sequence[Any]) -> str:
        """The result text for a call's ``arguments`` (JSON text or mapping) over ``messages``."""
        args = _arguments(arguments)
        return search_answer(args.get("query"), _openai_history(messages), args.get("limit", 5))


class MessagesNewContext(_MessagesTool):
    """``new_context`` for a loop that keeps its own OpenAI-format ``messages`` (LiteLLM):
    put ``spec`` in ``tools`` and answer the call with ``handle(tool_call, messages)`` (the
    list holding the assistant message that called it); the hook hands off on the next call."""

    name = NEW_CONTEXT
    description = NEW_CONTEXT_DESCRIPTION
    parameters = NEW_CONTEXT_PARAMETERS

    def answer(self, arguments: Any, messages: Sequence[Any]) -> str:
        """``new_context``'s answer over ``messages`` (see [`new_context_answer`][])."""
        return new_context_answer(_openai_history(messages))
