"""The OpenAI Agents SDK: compact what the runner sends, keep every raw item stored.

Two drop-ins, usable together (``pip install 'compaction-ladder[openai-agents]'``):

- [`CompactionFilter`][], a ``RunConfig(call_model_input_filter=...)``. The runner calls it
  immediately before **every** model call, inside the tool loop, with the whole input (session
  history, the new input and the items of this run); it hands back a compacted input and the
  instructions unchanged. This is the one that keeps a long tool loop inside the window.
- [`CompactionSession`][], a wrapper around any ``Session`` (``SQLiteSession``, Redis,
  SQLAlchemy...). Reading the whole history (what the runner does to build a run's input)
  returns it compacted; everything else goes to the wrapped session untouched, so the raw items
  stay stored there, complete. Reads with a ``limit`` return the wrapped session's raw tail:
  the runner uses them to check what it stored, and a compacted view would not match.

Both keep their own [`Compactor`][compaction.trigger.Compactor] (one conversation each: use one
filter per run or agent, and one wrapper per session), so between compactions every request
extends the last and the provider's prompt cache stays warm. Items go through
[`compaction.adapters.responses`][]: a step (reasoning, text and its calls) is kept or dropped
whole, every call keeps its output, and items nothing rewrote are passed back as the very same
objects, as the SDK asks of input filters. The agent's instructions are counted as a system
message and never rewritten. A compaction that fails leaves the input as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..adapters.person import IsPerson
from ..adapters.responses import message_to_responses
from ..messages import Message
from ..trigger import Compactor
from ._agents_session import (
    CompactionSession,
    checked,
    offer_memory_tools,
    read_items,
    tell_refusals,
)
from ._compactor import MissingWindowError, build_compactor
from ._incremental import ResponsesHistory
from ._written import WrittenView, many_each
from .context_tools import AgentsContextTools, hand_off_if_asked
from .recall_tools import AgentsRecall

if TYPE_CHECKING:
    from ..pipeline import CompactionPipeline

__all__ = ["CompactionFilter", "CompactionSession", "MissingWindowError"]

# Marks the system message that stands for the agent's instructions while compacting.
_INSTRUCTIONS = "openai_agents_instructions"


class _Instructions:
    """The agent's instructions as one system message, the same object while they do not
    change, so the compactor sees the same prefix on every call."""

    def __init__(self) -> None:
        self.lead: tuple[Message, ...] = ()

    def __call__(self, instructions: str | None) -> tuple[Message, ...]:
        text = instructions or ""
        if (self.lead[0].content if self.lead else "") != text:
            self.lead = (Message("system", text, meta={_INSTRUCTIONS: True}),) if text else ()
        return self.lead


class CompactionFilter:
    """A ``call_model_input_filter`` that compacts the model input before every call.

    Give it a ready [`Compactor`][compaction.trigger.Compactor], or ``window`` (the model's context
    window in tokens) with an optional ``pipeline`` (default: tool results, sliding window,
    extractive summary) and any other [`Compactor`][compaction.trigger.Compactor] option
    (``compact_at``, ``compact_to``, ``counter``, ``tools``, ``labels``, ``min_saving``).
    Without ``tools``, the function tools of the agent being run are counted (their schemas
    travel with every request). ``observe_usage`` (default True) lets [`observe`][] and
    [`run_hooks`][] anchor the estimate on the provider's input tokens (a count far below
    the local one, such as the SDK's default ``Usage()`` of 0, is ignored anyway).
    ``recall=True`` offers [`recall_tool`][], a ``recall`` function tool for the agent
    that gives the model back any message a placeholder or note names, from the input of the
    run that calls it; ``search=True`` offers [`search_tool`][] (earlier messages by their
    words, from the same input); ``handoff=True`` offers [`new_context_tool`][]: after the
    model calls it, the next request is a fresh window (the instructions, the task, the
    ledger with the person's rules verbatim, the model's note; see [`compaction.handoff`][]).
    A function tool cannot see the model's step, so a handoff refused only once the step is
    known (the model called another tool beside ``new_context``) is told in the next input:
    the call's output there says why, in place of the tool's answer. Notes name the memory
    tools the agent offers, counted or not. Without a window (or a compactor) it raises
    ``MissingWindowError``.

    Only the person's words are kept as theirs (their rules and limits outlive a compaction
    verbatim): a user message that opens like command output or a harness's reply is not;
    ``is_person`` (called with each remaining user [`Message`][compaction.messages.Message],
    the input item under ``meta["responses"]``) may take more away.
    """

    def __init__(
        self,
        compactor: Compactor | None = None,
        *,
        window: int | None = None,
        pipeline: CompactionPipeline | None = None,
        observe_usage: bool = True,
        recall: bool = False,
        is_person: IsPerson | None = None,
        search: bool = False,
        handoff: bool = False,
        **options: Any,
    ) -> None:
        self.compactor = build_compactor(compactor, window, pipeline, options)
        self.observe_usage = bool(observe_usage)
        # The items converted so far: a call converts only what the runner appended.
        self._history = ResponsesHistory(checked(is_person))
        self._lead = _Instructions()
        # The compacted view as written back: a call between compactions writes only the
        # items appended since.
        self._written = WrittenView(many_each(message_to_responses))
        # recall=True: ``recall_tool`` answers from the last input the runner gave us in the
        # run that calls it.
        memory = AgentsRecall() if recall or search or handoff else None
        self.recall = memory if recall else None
        self._memory = memory
        self._tools: AgentsContextTools | None = None
        if memory is not None:
            held = memory
            self._tools = AgentsContextTools(lambda: held.items)
        self._search, self.handoff = bool(search), bool(handoff)
        # Handoffs refused after the tool answered (it cannot see the model's step): call id
        # -> the refusal, told to the model in every later input (see _agents_session).
        self._refused: dict[str, str] = {}
        self._where: dict[str, int] = {}
        # Without tools= the agent's own function tools are counted, as the runner sends their
        # schemas with every request: known only at the first call.
        self._learn_tools = compactor is None and "tools" not in options

    def _with_agent_tools(self, agent: Any) -> None:
        self._learn_tools = False
        schemas = [
            {
                "type": "function",
                "name": tool.name,
                "description": getattr(tool, "description", "") or "",
                "parameters": tool.params_json_schema,
            }
            for tool in getattr(agent, "tools", None) or ()
            if isinstance(getattr(tool, "params_json_schema", None), Mapping)
        ]
        if schemas:
            old = self.compactor
            self.compactor = Compactor(
                old.pipeline,
                old.window,
                old.compact_at,
                old.compact_to,
                old.counter,
                schemas,
                labels=old.labels,
                min_saving=old.min_saving,
            )

    async def __call__(self, data: Any) -> Any:
        """Called by the runner with a ``CallModelData``; returns a ``ModelInputData``."""
        from agents.run_config import ModelInputData

        if self._learn_tools:
            self._with_agent_tools(data.agent)
        model_data = data.model_data
        if self._memory is not None:
            self._memory.remember(model_data.input)
        # Notes name the memory tools the agent offers, whether or not their schemas are
        # counted (a ready compactor= counts only the tools it was given).
        offer_memory_tools(
            self.compactor,
            [getattr(t, "name", None) for t in getattr(data.agent, "tools", None) or ()],
        )
        instructions = model_data.instructions
        lead = self._lead(instructions)
        items = tell_refusals(model_data.input, self._refused, self._where)
        messages = read_items(self._history, items, lead)
        if messages is None:
            return model_data
        if self.handoff:
            before = len(self._refused)
            hand_off_if_asked(self.compactor, messages, self._refused)
            if len(self._refused) > before:  # refused now: the model is told in this input
                items = tell_refusals(items, self._refused, self._where)
                messages = read_items(self._history, items, lead)
                if messages is None:
                    return model_data
        request = await self.compactor.abefore_call(messages)
        if not self.compactor.compacted:
            if items is model_data.input:
                return model_data
            return ModelInputData(input=items, instructions=instructions)
        # The instructions travel on their own; they can only be the first message (the
        # ladder keeps the system block first).
        kept = request[1:] if request and request[0].meta.get(_INSTRUCTIONS) else request
        return ModelInputData(input=self._written.write(kept), instructions=instructions)

    @property
    def recall_tool(self) -> Any:
        """The ``recall`` function tool for the agent's ``tools`` (needs ``recall=True``)."""
        if self.recall is None:
            raise ValueError("recall_tool needs CompactionFilter(..., recall=True)")
        return self.recall.tool

    @property
    def search_tool(self) -> Any:
        """The ``search`` function tool for the agent's ``tools`` (needs ``search=True``)."""
        if self._tools is None or not self._search:
            raise ValueError("search_tool needs CompactionFilter(..., search=True)")
        return self._tools.search_tool

    @property
    def new_context_tool(self) -> Any:
        """The ``new_context`` function tool for the agent's ``tools`` (needs
        ``handoff=True``)."""
        if self._tools is None or not self.handoff:
            raise ValueError("new_context_tool needs CompactionFilter(..., handoff=True)")
        return self._tools.new_context_tool

    def observe(self, usage: Any) -> None:
        """Anchor the next estimate on the provider's count of the request last sent (a usage
        object or dict with ``input_tokens``, or an int); a usage it cannot read is ignored,
        and so is every usage with ``observe_usage=False``."""
        if not self.observe_usage:
            return
        with contextlib.suppress(TypeError, ValueError):
            self.compactor.observe(usage)

    def run_hooks(self) -> Any:
        """``RunHooks`` for ``Runner.run(..., hooks=...)`` that pass each model response's
        usage to [`observe`][], so the window is judged by the model's own tokenizer. (With
        hooks of your own, call ``observe(response.usage)`` from their ``on_llm_end``.)"""
        from agents.lifecycle import RunHooks

        observe = self.observe

        class _Observe(RunHooks):  # type: ignore[misc]
            async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
                observe(getattr(response, "usage", None))

        return _Observe()
