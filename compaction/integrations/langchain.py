"""LangChain v1: a middleware for ``create_agent`` that compacts each model request.

::

    from langchain.agents import create_agent
    from compaction.integrations.langchain import CompactionMiddleware

    agent = create_agent(model, tools, middleware=[CompactionMiddleware(window=128_000)])

Why it compacts the *request* (``wrap_model_call``, ``request.override(messages=...)``) and not
the state, as ``SummarizationMiddleware`` does in ``before_model``:

- the graph state keeps the full history, so nothing the agent did is ever lost (a checkpoint
  holds everything; another middleware, a human reviewer or a resumed run still sees it);
- it calls the library's [`Compactor`][compaction.trigger.Compactor], which compacts at
  ``compact_at`` of the window down to ``compact_to`` and remembers the compacted prefix, so
  between compactions every request extends the previous one and the provider's prompt cache
  stays warm; a minimum saving and a back-off keep it from rewriting the prompt for a few
  tokens or paying a summariser again and again for nothing;
- the ladder (by default ``ToolResults -> SlidingWindow -> Summary -> Fit`` with the offline
  extractive summariser) keeps tool call/result pairs whole and the task in view, and a
  failing ladder never fails the model call: the request then goes out as it came.

The system message (``request.system_message``) is counted and protected as the system block;
the tool schemas (``request.tools``) are counted into the budget. The provider's reported
``usage_metadata["input_tokens"]`` anchors the next estimate. One compactor per LangGraph
thread (``thread_id``), since hysteresis is per conversation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

from ._extra import missing_extra

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import (
        AgentState,
        ExtendedModelResponse,
        PrivateStateAttr,
    )
    from langchain_core.messages import AIMessage, SystemMessage
    from langgraph.types import Command
    from typing_extensions import NotRequired
except ModuleNotFoundError as exc:  # the extra is missing: say which one
    raise missing_extra(__name__, "langchain", exc) from exc

from .. import events
from .._log import log
from .._trigger_view import AppendLog
from ..adapters.person import IsPerson
from ..memory.offered import memory_tool_names
from ..messages import Message
from ..pipeline import CompactionPipeline
from ..tokens import TokenCounter
from ..trigger import Compactor, default_pipeline
from . import context_tools, recall_tools
from ._compactor import MissingWindowError
from ._conversations import Conversations
from ._langchain_thread import _Thread
from .langchain_messages import from_langchain, to_langchain

__all__ = [
    "CompactionMiddleware",
    "CompactionState",
    "MissingWindowError",
    "default_pipeline",
    "from_langchain",
    "to_langchain",
]


#: The state key holding the call id of the thread's latest handoff.
HANDOFF_KEY = "compaction_handoff"


class CompactionState(AgentState[Any]):
    """The agent state with what the middleware keeps per thread: the ``new_context`` call
    the thread last handed off at. It lives in the graph state (checkpointed with the
    thread, private to the middleware), so a thread whose compactor was forgotten
    (``max_threads``) or a process restarted on a checkpoint makes the same handoff again
    instead of sending the whole history."""

    compaction_handoff: NotRequired[Annotated[str | None, PrivateStateAttr]]


def _tool_schema(tool: Any) -> Mapping[str, Any] | None:
    if isinstance(tool, Mapping):
        return tool
    try:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return convert_to_openai_tool(tool)
    except Exception:  # a tool LangChain cannot describe is simply not counted
        return None


class CompactionMiddleware(AgentMiddleware[CompactionState, Any]):
    """Compact the request before every model call of a LangChain v1 agent.

    ``pipeline`` is the ladder (default
    [`compaction.default_pipeline`][compaction.ladder.default_pipeline]: the free layers, the
    offline summary, then the last resort ``Fit``); ``window`` the model's context window in
    tokens (default: the chat model's ``profile["max_input_tokens"]``; with neither, the first
    model call raises ``MissingWindowError``,
    a ``ValueError``, rather than run the agent uncompacted); ``compact_at``,
    ``compact_to``, ``min_saving``, ``counter`` and ``labels`` are
    [`Compactor`][compaction.trigger.Compactor]'s; ``count_tools`` counts the tool schemas into
    the budget; ``observe_usage`` anchors the estimate on the ``input_tokens`` the model reports
    (a count far below the local one, such as a fake model's 0, is ignored anyway);
    ``max_threads`` bounds how many conversations are remembered (least recently used first
    out); ``recall=True`` adds a ``recall`` tool that gives the model back any message a
    placeholder or note names, from the graph state; ``search=True`` a ``search`` tool that
    finds earlier messages by their words, from the graph state; ``handoff=True`` a
    ``new_context`` tool: after the model calls it, the next request is a fresh window (the
    system message, the task, the ledger with the person's rules verbatim, the model's note;
    see [`compaction.handoff`][]), and the state keeps everything.

    Only the person's words are kept as theirs (their rules and limits outlive a compaction
    verbatim): a ``HumanMessage`` or a ``ChatMessage`` with the role user, not a
    ``ChatMessage`` in a tool's role ("ipython", "observation"); ``is_person`` (called with
    each remaining user [`Message`][compaction.messages.Message], the LangChain message under
    ``meta["langchain"]``) may take more away: answer False for what the person did not write.

    ``compactor(thread_id)`` answers the compactor of a thread (its ``stats`` say what it
    did); ``last_request`` the messages the last model call was sent, system message first.
    A handoff is kept in the thread's state ([`CompactionState`][]), so forgetting the
    thread's compactor does not lose it. Notes name the memory tools the request offers,
    whether or not ``count_tools`` counts their schemas.
    """

    state_schema = CompactionState

    def __init__(
        self,
        pipeline: CompactionPipeline | None = None,
        *,
        window: int | None = None,
        compact_at: float = 0.7,
        compact_to: float = 0.4,
        min_saving: float = 0.05,
        counter: TokenCounter | None = None,
        count_tools: bool = True,
        labels: Mapping[str, Any] | None = None,
        observe_usage: bool = True,
        max_threads: int = 256,
        recall: bool = False,
        is_person: IsPerson | None = None,
        search: bool = False,
        handoff: bool = False,
    ) -> None:
        super().__init__()
        if is_person is not None and not callable(is_person):
            raise TypeError(f"is_person must be callable, got {type(is_person).__name__}")
        self.is_person = is_person
        # recall=True: the model gets a ``recall`` tool answering from the graph state.
        self.tools = [recall_tools.langchain_recall_tool()] if recall else []
        if search:
            self.tools.append(context_tools.langchain_search_tool())
        self.handoff = bool(handoff)
        if handoff:
            self.tools.append(context_tools.langchain_new_context_tool())
        if window is not None and (
            isinstance(window, bool) or not isinstance(window, int) or window <= 0
        ):
            raise ValueError(f"window must be a positive int (tokens), got {window!r}")
        self.pipeline = pipeline if pipeline is not None else default_pipeline(counter=counter)
        self.window = window
        self.compact_at = compact_at
        self.compact_to = compact_to
        self.min_saving = min_saving
        self.counter = counter
        self.count_tools = count_tools
        self.labels = dict(labels or {})
        self.observe_usage = bool(observe_usage)
        self.max_threads = max_threads
        # What the last call sent, by reference: a tuple copy per call would cost O(history).
        self._last: tuple[Sequence[Message], int, int] = ((), 0, 0)
        self._threads: Conversations[_Thread] = Conversations(max_threads, "max_threads")
        # Fail now, not at the first model call, on settings the compactor refuses.
        if window is not None:
            Compactor(
                self.pipeline,
                window,
                compact_at,
                compact_to,
                counter,
                min_saving=min_saving,
            )

    @property
    def last_request(self) -> tuple[Message, ...]:
        """The messages the last model call was sent, system message first."""
        sent, n, epoch = self._last
        if getattr(sent, "epoch", 0) != epoch or len(sent) < n:
            return ()  # cut by a later call that failed before it sent anything
        return tuple(sent[:n])

    # -- per-thread state -----------------------------------------------------------------------

    def compactor(self, thread_id: Any = None) -> Compactor | None:
        """The compactor following ``thread_id`` (None until its first model call)."""
        state = self._threads.get(thread_id)
        return state.compactor if state else None

    def _window(self, request: ModelRequest) -> int:
        if self.window is not None:
            return self.window
        profile = getattr(request.model, "profile", None) or {}
        window = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
        if isinstance(window, int) and window > 0:
            return window
        raise MissingWindowError()

    def _thread(self, request: ModelRequest) -> _Thread:
        info = getattr(request.runtime, "execution_info", None)
        key = getattr(info, "thread_id", None)

        def create() -> _Thread:
            tools = [_tool_schema(t) for t in request.tools] if self.count_tools else []
            compactor = Compactor(
                self.pipeline,
                self._window(request),
                self.compact_at,
                self.compact_to,
                self.counter,
                [t for t in tools if t is not None],
                labels={**self.labels, "thread_id": key},
                min_saving=self.min_saving,
            )
            return _Thread(compactor, self.is_person)

        return self._threads.get_or_create(key, create)

    # -- the call ---------------------------------------------------------------------------------

    def _convert(self, state: _Thread, request: ModelRequest) -> tuple[AppendLog, str | None]:
        """The request's messages converted, handed off if the model asked; with the call id
        of a handoff made now (None: none)."""
        messages = state.convert(getattr(request, "system_message", None), request.messages)
        # Notes name the memory tools offered, counted or not (count_tools=False).
        named = [t if isinstance(t, Mapping) else {"name": getattr(t, "name", None)}
                 for t in request.tools or ()]  # fmt: skip
        state.compactor.memory_tools = memory_tool_names(named)
        if not self.handoff:
            return messages, None
        # A handoff the state records and this compactor never made (it was forgotten, or
        # the process restarted on a checkpoint) is made again first.
        kept = request.state.get(HANDOFF_KEY) if isinstance(request.state, Mapping) else None
        context_tools.restore_handoff(state.compactor, messages, kept)
        made = context_tools.hand_off_if_asked(state.compactor, messages)
        return messages, (made.result.tool_call_id if made is not None else None)

    @staticmethod
    def _keep(response: Any, handed: str | None) -> Any:
        """``response``, with the state update that records a handoff made now."""
        if handed is None:
            return response
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        return ExtendedModelResponse(
            model_response=response, command=Command(update={HANDOFF_KEY: handed})
        )

    def _rebuild(
        self, request: ModelRequest, state: _Thread, sent: Sequence[Message]
    ) -> ModelRequest:
        out: list[Any] = state.to_langchain(sent)
        if getattr(request, "system_message", None) is None or not isinstance(
            out[0], SystemMessage
        ):
            return request.override(messages=out)
        # The system block comes first and stays first: the first message is the system
        # message, rewritten only when the ladder had to cut it to fit.
        return request.override(messages=out[1:], system_message=out[0])

    def _failed(self, exc: Exception) -> None:
        # Compaction never fails the model call: the request goes out as it came.
        log.error("langchain.compaction_failed", error=exc, labels=self.labels)
        events.failed.send(self, name="langchain", error=exc, stage="adapter", labels=self.labels)

    def _observe(self, state: _Thread, response: Any) -> None:
        if not self.observe_usage:
            return
        result = getattr(response, "model_response", response)
        messages = getattr(result, "result", None) or [result]
        for m in reversed(messages):
            if isinstance(m, AIMessage):
                usage = m.usage_metadata
                if usage and isinstance(usage.get("input_tokens"), int):
                    # LangChain's input_tokens already includes cached input.
                    state.compactor.observe(usage["input_tokens"])
                return

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse | AIMessage | ExtendedModelResponse:
        """Send ``handler`` the request with its messages compacted (when they need it)."""
        # Outside the try: a missing window is the caller's to fix, and running the whole
        # agent uncompacted with a warning per call would hide it until the provider refuses.
        state = self._thread(request)
        handed = None
        try:
            messages, handed = self._convert(state, request)
            sent = state.compactor.before_call(messages)
            self._last = (sent, len(sent), getattr(sent, "epoch", 0))
            new = request if sent is messages else self._rebuild(request, state, sent)
        except Exception as exc:
            self._failed(exc)
            return self._keep(handler(request), handed)
        response = handler(new)
        self._observe(state, response)
        return self._keep(response, handed)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | AIMessage | ExtendedModelResponse:
        """Async twin of [`wrap_model_call`][] (awaits summarisers that do I/O)."""
        # Outside the try: a missing window is the caller's to fix, and running the whole
        # agent uncompacted with a warning per call would hide it until the provider refuses.
        state = self._thread(request)
        handed = None
        try:
            messages, handed = self._convert(state, request)
            sent = await state.compactor.abefore_call(messages)
            self._last = (sent, len(sent), getattr(sent, "epoch", 0))
            new = request if sent is messages else self._rebuild(request, state, sent)
        except Exception as exc:
            self._failed(exc)
            return self._keep(await handler(request), handed)
        response = await handler(new)
        self._observe(state, response)
        return self._keep(response, handed)
