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

from collections.abc import Mapping
from typing import Any

from ._extra import missing_extra

try:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.tools import RunContext
except ModuleNotFoundError as exc:  # the extra is missing: say which one
    raise missing_extra(__name__, "pydantic-ai", exc) from exc

from ..adapters.person import IsPerson
from ..pipeline import CompactionPipeline
from ..tokens import TokenCounter
from ..trigger import Compactor
from ._compactor import MissingWindowError
from ._pydantic_ai_engine import _Engine, stamp
from .pydantic_ai_messages import from_pydantic_ai, to_pydantic_ai

__all__ = [
    "Compaction",
    "MissingWindowError",
    "compaction_processor",
    "from_pydantic_ai",
    "to_pydantic_ai",
]


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
    person's rules verbatim, the model's note; see [`compaction.handoff`][]). The handoff is
    stamped on the response to that request (``metadata["compaction_handoff"]``, which the
    run's history keeps and the model never sees), so a conversation whose compactor was
    forgotten (``max_conversations``) makes it again instead of sending the whole history.

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
        self._engine = _Engine(
            pipeline,
            window=window,
            compact_at=compact_at,
            compact_to=compact_to,
            min_saving=min_saving,
            counter=counter,
            labels=labels,
            max_conversations=max_conversations,
            is_person=is_person,
            recall=recall,
            search=search,
            handoff=handoff,
        )
        self.observe_usage = observe_usage

    def get_toolset(self) -> Any:
        return self._engine.toolset

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
        state = self._engine.conversations.get(getattr(ctx, "conversation_id", None))
        if self.observe_usage:
            tokens = getattr(getattr(response, "usage", None), "input_tokens", 0)
            if state is not None and isinstance(tokens, int):
                state.compactor.observe(tokens)
        # A handoff made for this request is stamped on its response (the run's history keeps
        # it), so a compactor that never saw it (max_conversations) makes it again.
        return stamp(state, response)


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
    recall: bool = False,
    is_person: IsPerson | None = None,
    search: bool = False,
    handoff: bool = False,
) -> Any:
    """A history processor (``ProcessHistory(compaction_processor(window=...))``).

    pydantic-ai writes what it answers back into the run's history, so the history itself is
    compacted; prefer [`Compaction`][] to keep the history whole. The options are
    [`Compaction`][]'s (the same construction). ``recall``, ``search`` and ``handoff`` make
    ``process.toolset`` (None without them): give it to the agent
    (``Agent(..., toolsets=[process.toolset])``). Its tools answer from the originals the
    processor saw in each conversation (kept, bounded by ``max_conversations``), since the
    run's history no longer holds what a compaction or a handoff set aside.
    ``process.compactor(conversation_id)`` answers a conversation's compactor.
    """
    engine = Compaction(
        pipeline,
        window=window,
        compact_at=compact_at,
        compact_to=compact_to,
        min_saving=min_saving,
        counter=counter,
        labels=labels,
        max_conversations=max_conversations,
        recall=recall,
        is_person=is_person,
        search=search,
        handoff=handoff,
    )._engine
    engine.keep_originals = True  # the run's history will lose what a compaction sets aside

    async def process(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        return await engine.compact(ctx, messages, getattr(ctx, "model", None), None)

    def compactor(conversation_id: Any = None) -> Compactor | None:
        state = engine.conversations.get(conversation_id)
        return state.compactor if state else None

    process.compactor = compactor  # type: ignore[attr-defined]
    process.toolset = engine.toolset  # type: ignore[attr-defined]
    return process
