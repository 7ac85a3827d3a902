"""pydantic-ai: a capability (and a history processor) that compacts each model request.

::

    from pydantic_ai import Agent
    from compaction.integrations.pydantic_ai import Compaction

    agent = Agent("openai:gpt-5", capabilities=[Compaction(window=128_000)])

[`Compaction`][] works in ``prepare_model_request``, the hook pydantic-ai gives compaction
and context-window fitting: it runs once per attempt with the model that will serve it, and
what it changes (``request_context.messages``) shapes that request only. So the run's history
(``result.all_messages()``) keeps every message, while the model is sent the compacted view:
the library's [`Compactor`][compaction.trigger.Compactor] compacts at ``compact_at`` of the window
down to ``compact_to`` and sends the same compacted prefix until the next compaction, so the
provider's prompt cache stays warm. A failing ladder never fails the run: the request then
goes out as it came. The window defaults to the model profile's ``context_window``; the
instructions and the tool definitions are counted into the budget; the provider's reported
input tokens anchor the next estimate (``observe_usage``).

[`compaction_processor`][] is the same as a history processor for
``ProcessHistory(processor)``; pydantic-ai writes what a processor answers back into the run's
history, so with it the history itself is compacted (use it when that is what you want).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._extra import missing_extra

try:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.tools import RunContext
except ModuleNotFoundError as exc:  # the extra is missing: say which one
    raise missing_extra(__name__, "pydantic-ai", exc) from exc

from .. import events
from .._log import log
from .._trigger_view import AppendLog
from ..adapters.person import IsPerson, mark_authors
from ..messages import Message
from ..pipeline import CompactionPipeline
from ..tokens import TokenCounter
from ..trigger import Compactor, default_pipeline
from . import context_tools, recall_tools
from ._compactor import MissingWindowError
from ._conversations import Conversations
from ._incremental import common_prefix
from ._written import WrittenView
from .pydantic_ai_messages import from_pydantic_ai, pydantic_ai_units, to_pydantic_ai

__all__ = [
    "Compaction",
    "MissingWindowError",
    "compaction_processor",
    "from_pydantic_ai",
    "to_pydantic_ai",
]

#: ``meta`` key of the message that stands for the request's instructions while counting.
_INSTRUCTIONS: str = "pydantic_ai_instructions"


class _Conversation:
    """One conversation: its compactor, and the messages converted so far (by source)."""

    __slots__ = ("compactor", "ends", "flat", "instructions", "sources", "written")

    def __init__(self, compactor: Compactor) -> None:
        self.compactor = compactor
        self.sources: list[ModelMessage] = []
        self.ends: list[int] = []  # len(flat) after each source
        # An AppendLog: the compactor reads only its new tail (convert checks the whole
        # framework list first).
        self.flat: AppendLog = AppendLog()
        self.instructions: Message | None = None
        # The compacted view as written back: a call between compactions writes only the
        # steps appended since.
        self.written = WrittenView(pydantic_ai_units)

    def convert(
        self,
        messages: Sequence[ModelMessage],
        instructions: str,
        prompt: Any = None,
        is_person: IsPerson | None = None,
    ) -> AppendLog:
        # The first message stands for the instructions (a system block, counted and kept),
        # the same object while they do not change, so the compactor sees the same prefix.
        if (self.instructions.content if self.instructions else "") != instructions:
            self.instructions = (
                Message("system", instructions, meta={_INSTRUCTIONS: True})
                if instructions
                else None
            )
            self.sources, self.ends = [], []
            self.flat.cut(0)
            if self.instructions:
                self.flat.append(self.instructions)
        head = 1 if self.instructions else 0
        # The whole list is compared with what was converted (identity first, in C): a
        # conversation is followed only while it really extends what was mapped. pydantic-ai
        # gives no append-only identity to lean on instead: a run's history is appended to,
        # but history processors and message_history= hand in rebuilt lists, and
        # conversation_id is None unless the caller sets one.
        keep = common_prefix(self.sources, messages)
        del self.sources[keep:], self.ends[keep:]
        base = self.ends[-1] if self.ends else head
        new: list[Message] = []
        own = prompt if isinstance(prompt, str) else None
        for source in messages[keep:]:
            read = from_pydantic_ai([source], prompt=own)
            new.extend(mark_authors(read, is_person) if is_person is not None else read)
            self.sources.append(source)
            self.ends.append(base + len(new))
        self.flat.put_tail(base, new)
        return self.flat


def _tool_schemas(parameters: Any) -> list[dict[str, Any]]:
    tools = [
        *(getattr(parameters, "function_tools", None) or ()),
        *(getattr(parameters, "output_tools", None) or ()),
    ]
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description or "",
                "parameters": t.parameters_json_schema,
            },
        }
        for t in tools
    ]


def _instructions(parameters: Any) -> str:
    parts = getattr(parameters, "instruction_parts", None) or ()
    return "\n\n".join(str(p.content) for p in parts if getattr(p, "content", None))


class _Engine:
    """What the capability and the processor share: settings and one compactor per
    conversation."""

    def __init__(
        self,
        pipeline: CompactionPipeline | None,
        window: int | None,
        compact_at: float,
        compact_to: float,
        min_saving: float,
        counter: TokenCounter | None,
        labels: Mapping[str, Any] | None,
        max_conversations: int,
        is_person: IsPerson | None = None,
        handoff: bool = False,
    ) -> None:
        self.handoff = handoff
        if is_person is not None and not callable(is_person):
            raise TypeError(f"is_person must be callable, got {type(is_person).__name__}")
        self.is_person = is_person
        if window is not None and (
            isinstance(window, bool) or not isinstance(window, int) or window <= 0
        ):
            raise ValueError(f"window must be a positive int (tokens), got {window!r}")
        self.pipeline = pipeline if pipeline is not None else default_pipeline(counter=counter)
        self.window = window
        self.compact_at, self.compact_to, self.min_saving = compact_at, compact_to, min_saving
        self.counter = counter
        self.labels = dict(labels or {})
        self.conversations: Conversations[_Conversation] = Conversations(max_conversations)
        if window is not None:  # fail now on settings the compactor refuses
            Compactor(self.pipeline, window, compact_at, compact_to, counter, min_saving=min_saving)

    def conversation(self, key: Any, model: Any, parameters: Any) -> _Conversation:
        def create() -> _Conversation:
            window = self.window
            if window is None:
                profile = getattr(model, "profile", None)
                # A profile is a TypedDict (a plain dict) in pydantic-ai.
                window = (
                    profile.get("context_window")
                    if isinstance(profile, Mapping)
                    else getattr(profile, "context_window", None)
                )
                if not isinstance(window, int) or window <= 0:
                    raise MissingWindowError()
            compactor = Compactor(
                self.pipeline,
                window,
                self.compact_at,
                self.compact_to,
                self.counter,
                _tool_schemas(parameters),
                labels={**self.labels, "conversation_id": key},
                min_saving=self.min_saving,
            )
            return _Conversation(compactor)

        return self.conversations.get_or_create(key, create)

    async def compact(
        self, ctx: Any, messages: list[ModelMessage], model: Any, parameters: Any
    ) -> list[ModelMessage]:
        """``messages`` compacted when they need it (the same list when not)."""
        # Outside the try: a missing window is the caller's to fix, and running the whole
        # agent uncompacted with a warning per call would hide it until the provider refuses.
        state = self.conversation(getattr(ctx, "conversation_id", None), model, parameters)
        try:
            ours = state.convert(
                messages, _instructions(parameters), getattr(ctx, "prompt", None), self.is_person
            )
            if self.handoff:
                context_tools.hand_off_if_asked(state.compactor, ours)
            sent = await state.compactor.abefore_call(ours)
            if sent is ours:
                return messages
            if sent and sent[0].meta.get(_INSTRUCTIONS):
                sent = sent[1:]  # the instructions travel on their own
            return state.written.write(sent)
        except Exception as exc:
            # Compaction never fails the run: the request goes out as it came.
            log.error("pydantic_ai.compaction_failed", error=exc, labels=self.labels)
            events.failed.send(
                self, name="pydantic_ai", error=exc, stage="adapter", labels=self.labels
            )
            return messages


class Compaction(AbstractCapability[Any]):
    """A pydantic-ai capability that compacts each model request (not the run's history).

    ``pipeline`` is the ladder (default
    [`compaction.default_pipeline`][compaction.ladder.default_pipeline], offline: the free
    layers, the extractive summary, then the last resort ``Fit``); ``window`` the model's
    context window in tokens (default: the model profile's ``context_window``; with neither, the
    first model request raises
    ``MissingWindowError``, a
    ``ValueError``, rather than run the agent uncompacted);
    ``compact_at``, ``compact_to``, ``min_saving``, ``counter`` and ``labels`` are
    [`Compactor`][compaction.trigger.Compactor]'s; ``observe_usage`` anchors the estimate on the
    input tokens the provider reports (a count far below the local one, such as
    ``FunctionModel``'s word count, is ignored anyway); ``max_conversations`` bounds how many
    conversations (``conversation_id``) are followed at once; ``recall=True`` contributes a
    ``recall`` tool that gives the model back any message a placeholder or note names,
    ``search=True`` a ``search`` tool that finds earlier messages by their words (both from
    ``RunContext.messages``), ``handoff=True`` a ``new_context`` tool: after the model calls
    it, the next request is a fresh window (the instructions, the task, the ledger with the
    person's rules verbatim, the model's note; see [`compaction.handoff`][]).

    Only the person's words are kept as theirs (their rules and limits outlive a compaction
    verbatim): a user prompt sent beside tool returns (a tool's ``ToolReturn.content``) is the
    tool's data, and ``is_person`` (called with each remaining user
    [`Message`][compaction.messages.Message], its pydantic-ai part under ``meta["pydantic_ai"]``)
    may take more away: answer False for text the person did not write.
    """

    def __init__(
        self,
        pipeline: CompactionPipeline | None = None,
        *,
        window: int | None = None,
        compact_at: float = 0.7,
        compact_to: float = 0.4,
        min_saving: float = 0.05,
        counter: TokenCounter | None = None,
        labels: Mapping[str, Any] | None = None,
        observe_usage: bool = True,
        max_conversations: int = 256,
        recall: bool = False,
        is_person: IsPerson | None = None,
        search: bool = False,
        handoff: bool = False,
    ) -> None:
        # recall=True: a ``recall`` tool answering from the run's messages (search=True and
        # handoff=True add theirs to the same toolset).
        self._recall = recall_tools.pydantic_ai_recall_toolset() if recall else None
        more = context_tools.pydantic_ai_tools(search=search, handoff=handoff)
        if more:
            from pydantic_ai.toolsets import FunctionToolset

            self._recall = self._recall or FunctionToolset([])
            for tool in more:
                self._recall.add_tool(tool)
        self._engine = _Engine(
            pipeline,
            window,
            compact_at,
            compact_to,
            min_saving,
            counter,
            labels,
            max_conversations,
            is_person,
            handoff,
        )
        self.observe_usage = observe_usage

    def get_toolset(self) -> Any:
        return self._recall

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a pipeline: not part of a serialisable agent spec

    def compactor(self, conversation_id: Any = None) -> Compactor | None:
        """The compactor following ``conversation_id`` (None before its first request)."""
        state = self._engine.conversations.get(conversation_id)
        return state.compactor if state else None

    async def prepare_model_request(self, ctx: Any, request_context: Any) -> Any:
        messages = request_context.messages
        sent = await self._engine.compact(
            ctx, messages, request_context.model, request_context.model_request_parameters
        )
        if sent is not messages:
            request_context.messages = sent
        return request_context

    async def after_model_request(
        self, ctx: Any, *, request_context: Any, response: ModelResponse
    ) -> ModelResponse:
        if self.observe_usage:
            state = self._engine.conversations.get(getattr(ctx, "conversation_id", None))
            tokens = getattr(getattr(response, "usage", None), "input_tokens", 0)
            if state is not None and isinstance(tokens, int):
                state.compactor.observe(tokens)
        return response


def compaction_processor(
    pipeline: CompactionPipeline | None = None,
    *,
    window: int,
    compact_at: float = 0.7,
    compact_to: float = 0.4,
    min_saving: float = 0.05,
    counter: TokenCounter | None = None,
    labels: Mapping[str, Any] | None = None,
    max_conversations: int = 256,
    is_person: IsPerson | None = None,
) -> Any:
    """A history processor (``ProcessHistory(compaction_processor(window=...))``).

    pydantic-ai writes what it answers back into the run's history, so the history itself is
    compacted; prefer [`Compaction`][] to keep the history whole.
    """
    engine = _Engine(
        pipeline,
        window,
        compact_at,
        compact_to,
        min_saving,
        counter,
        labels,
        max_conversations,
        is_person,
    )

    async def process(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        return await engine.compact(ctx, messages, None, None)

    def compactor(conversation_id: Any = None) -> Compactor | None:
        state = engine.conversations.get(conversation_id)
        return state.compactor if state else None

    process.compactor = compactor  # type: ignore[attr-defined]
    return process
