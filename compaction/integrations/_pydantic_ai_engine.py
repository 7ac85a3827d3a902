"""What pydantic-ai's two entry points share: the settings, one compactor per conversation,
the memory tools, and what each conversation's history held.

[`Compaction`][compaction.integrations.pydantic_ai.Compaction] and
[`compaction_processor`][compaction.integrations.pydantic_ai.compaction_processor] both build
one `_Engine` from the same options; the engine makes the toolset (``recall``, ``search``,
``new_context``) and says which memory tools the model is offered, so a note names them
whether or not the tool schemas reach the compactor (a history processor never sees them).

A history processor's answer is written back into the run's history, so after a compaction
``RunContext.messages`` no longer holds what was set aside: for it the engine keeps each
conversation's originals (``_Conversation.archive``, by recall id, bounded with the
conversation), and the tools answer from those plus the run's messages. The capability
leaves the history whole, and its tools read the run's messages alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_ai.messages import ModelMessage

from .. import events
from .._log import log
from .._trigger_view import AppendLog
from ..adapters.person import IsPerson, mark_authors
from ..memory.offered import MEMORY_TOOLS
from ..memory.transcript import is_compaction_output, message_ref
from ..messages import Message
from ..pipeline import CompactionPipeline
from ..tokens import TokenCounter
from ..trigger import Compactor, default_pipeline
from . import context_tools, recall_tools
from ._compactor import MissingWindowError
from ._conversations import Conversations
from ._incremental import common_prefix
from ._written import WrittenView
from .pydantic_ai_messages import from_pydantic_ai, pydantic_ai_units

#: ``meta`` key of the message that stands for the request's instructions while counting.
_INSTRUCTIONS: str = "pydantic_ai_instructions"


class _Conversation:
    """One conversation: its compactor, and the messages converted so far (by source)."""

    __slots__ = (
        "archive", "compactor", "ends", "flat", "fresh", "handed", "instructions", "new",
        "sources", "written",
    )  # fmt: skip

    def __init__(self, compactor: Compactor) -> None:
        self.compactor = compactor
        # Not yet looked in the history for a handoff an earlier compactor made; the call id
        # of a handoff made for the request in flight (stamped on its response).
        self.new = True
        self.handed: str | None = None
        self.sources: list[ModelMessage] = []
        self.ends: list[int] = []  # len(flat) after each source
        # An AppendLog: the compactor reads only its new tail (convert checks the whole
        # framework list first).
        self.flat: AppendLog = AppendLog()
        self.instructions: Message | None = None
        # The compacted view as written back: a call between compactions writes only the
        # steps appended since.
        self.written = WrittenView(pydantic_ai_units)
        # Where the last convert began converting (the messages new to it start there), and
        # (kept only for a history processor) every original seen, by recall id.
        self.fresh = 0
        self.archive: dict[str, Message] | None = None

    def keep_originals(self) -> None:
        """Add what the last convert read to ``archive`` (compaction output is not an
        original: a note stands for messages the archive already holds)."""
        if self.archive is None:
            return
        for m in self.flat[self.fresh :]:
            if not is_compaction_output(m) and not m.meta.get(_INSTRUCTIONS):
                self.archive.setdefault(message_ref(m), m)

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
        self.fresh = base
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


#: The ``ModelResponse.metadata`` key naming the ``new_context`` call a handoff was made at
#: (pydantic-ai keeps it in the run's history and never sends it to the model).
HANDOFF_KEY = "compaction_handoff"


def stamped(messages: Sequence[ModelMessage]) -> str | None:
    """The call id of the newest handoff stamped on a response of ``messages``."""
    for message in reversed(messages):
        meta = getattr(message, "metadata", None) if message.kind == "response" else None
        if isinstance(meta, Mapping) and isinstance(meta.get(HANDOFF_KEY), str):
            return str(meta[HANDOFF_KEY])
    return None


def stamp(state: _Conversation | None, response: Any) -> Any:
    """``response`` stamped with the handoff made for its request, if one was."""
    if state is None or state.handed is None:
        return response
    import dataclasses

    meta = {**(getattr(response, "metadata", None) or {}), HANDOFF_KEY: state.handed}
    state.handed = None
    return dataclasses.replace(response, metadata=meta)


class _Engine:
    """What the capability and the processor share: settings, the memory tools, and one
    compactor per conversation."""

    def __init__(
        self,
        pipeline: CompactionPipeline | None,
        *,
        window: int | None,
        compact_at: float,
        compact_to: float,
        min_saving: float,
        counter: TokenCounter | None,
        labels: Mapping[str, Any] | None,
        max_conversations: int,
        is_person: IsPerson | None,
        recall: bool,
        search: bool,
        handoff: bool,
    ) -> None:
        self.handoff = bool(handoff)
        #: Keep each conversation's originals for the tools (set by the history processor,
        #: before its first call).
        self.keep_originals = False
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
        #: The memory tools this engine offers (a note names them, counted or not).
        self.offered = tuple(n for n in MEMORY_TOOLS if {"search": search, "recall": recall}[n])
        self.toolset = self._toolset(recall, search, handoff)

    def _toolset(self, recall: bool, search: bool, handoff: bool) -> Any:
        """The ``recall``, ``search`` and ``new_context`` tools asked for, in one toolset."""
        history = self.history
        toolset = recall_tools.pydantic_ai_recall_toolset(history) if recall else None
        more = context_tools.pydantic_ai_tools(search=search, handoff=handoff, history=history)
        if more:
            from pydantic_ai.toolsets import FunctionToolset

            toolset = toolset or FunctionToolset([])
            for tool in more:
                toolset.add_tool(tool)
        return toolset

    def history(self, ctx: Any) -> Sequence[Message]:
        """What the tools answer from: the conversation's originals kept so far, then those of
        the run's messages not among them (the newest step, which no request has held yet)."""
        from .recall_tools import _converted

        current = _converted(from_pydantic_ai, list(getattr(ctx, "messages", None) or ()))
        if not self.keep_originals:
            return current
        state = self.conversations.get(getattr(ctx, "conversation_id", None))
        archive = state.archive if state is not None else None
        if not archive:
            return current
        return [*archive.values(), *(m for m in current if message_ref(m) not in archive)]

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
            # A note names the memory tools the model is offered: this engine's own, and any
            # among the request's tools (the processor sees none of them).
            compactor.memory_tools = tuple(
                n for n in MEMORY_TOOLS if n in self.offered or n in compactor.memory_tools
            )
            state = _Conversation(compactor)
            if self.keep_originals:
                state.archive = {}
            return state

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
            state.keep_originals()
            if self.handoff:
                if state.new:  # a compactor that never saw this conversation: a handoff
                    # made before (its call id stamped on a response) is made again
                    context_tools.restore_handoff(state.compactor, ours, stamped(messages))
                made = context_tools.hand_off_if_asked(state.compactor, ours)
                state.handed = made.result.tool_call_id if made is not None else None
            state.new = False
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
