"""The Agents SDK drop-ins' shared parts, and [`CompactionSession`][].

A function tool of the Agents SDK sees its own call (``ToolContext.tool_call_id``) and the
run's context, never the model response it belongs to: ``new_context`` cannot know whether
the model called another tool in the same step, which refuses the handoff. So the refusal is
told where the model reads the answer: the next model input, which passes through the drop-in
(the filter's next call, the session's next read). There the ``new_context`` call's output
says why no new context was started ([`tell_refusals`][]), in every later input too, while
the raw items keep what the tool answered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from .._log import log
from ..adapters import AdapterError
from ..adapters._coerce import plain
from ..adapters.person import IsPerson
from ..adapters.responses import to_responses
from ..memory.offered import MEMORY_TOOLS
from ..messages import Message
from ..trigger import Compactor
from ._compactor import build_compactor
from ._incremental import ResponsesHistory
from .context_tools import AgentsContextTools, hand_off_at, newest_new_context

if TYPE_CHECKING:
    from ..pipeline import CompactionPipeline

__all__ = ["CompactionSession", "SESSION_DONE", "offer_memory_tools", "tell_refusals"]

#: What a session's ``new_context`` answers: the handoff happens at the session's next read.
SESSION_DONE: Final = (
    "New context requested: the next run starts in a fresh window (earlier messages set "
    "aside; search and recall reach them)."
)


def read_items(
    history: ResponsesHistory, items: Any, lead: tuple[Message, ...] = ()
) -> Sequence[Message] | None:
    """``items`` converted; None (logged) when the adapter cannot read them."""
    # An item the adapter cannot read (a new SDK item kind, a malformed one) is no reason to
    # end the run: the input goes to the model as it is, and the log says why.
    try:
        return history.convert(items, lead)
    except (AdapterError, TypeError, ValueError) as exc:
        log.warning("openai_agents.unreadable_input", error=exc)
        return None


def checked(is_person: IsPerson | None) -> IsPerson | None:
    """``is_person`` when callable (or None); a TypeError otherwise."""
    if is_person is not None and not callable(is_person):
        raise TypeError(f"is_person must be callable, got {type(is_person).__name__}")
    return is_person


def offer_memory_tools(compactor: Compactor, names: Any) -> None:
    """Notes name the memory tools among ``names`` (the tools the model is offered), counted
    into the budget or not."""
    shown = set(names)
    offered = tuple(n for n in MEMORY_TOOLS if n in shown)
    if offered != compactor.memory_tools:
        compactor.memory_tools = offered


def _output_of(item: Any, call_id: str) -> Mapping[str, Any] | None:
    item = plain(item)
    if (
        isinstance(item, Mapping)
        and item.get("type") == "function_call_output"
        and item.get("call_id") == call_id
    ):
        return item
    return None


def tell_refusals(items: Any, refusals: dict[str, str], where: dict[str, int]) -> Any:
    """``items`` with each refused ``new_context`` call's output saying why (``refusals``:
    call id -> the refusal); the list and those items are copies, every other item the same
    object. ``where`` remembers each output's index, so a call costs a look per refusal; a
    refusal whose call is no longer in the input is forgotten."""
    if not refusals or not isinstance(items, list):
        return items
    out: list[Any] | None = None
    for call_id, text in list(refusals.items()):
        index = where.get(call_id, -1)
        item = _output_of(items[index], call_id) if 0 <= index < len(items) else None
        if item is None:
            index = next((i for i, x in enumerate(items) if _output_of(x, call_id)), -1)
            if index < 0:
                del refusals[call_id]
                where.pop(call_id, None)
                continue
            where[call_id] = index
            item = _output_of(items[index], call_id)
        if item is None or item.get("output") == text:
            continue
        out = list(items) if out is None else out
        out[index] = {**item, "output": text}
    return items if out is None else out


class CompactionSession:
    """Any Agents SDK ``Session``, handing the runner its history compacted.

    ``session`` is the session that stores the items (it keeps them all, raw); the other
    arguments (``is_person`` included) are those of
    [`CompactionFilter`][compaction.integrations.openai_agents.CompactionFilter].
    ``recall=True``, ``search=True`` and ``handoff=True`` offer ``recall_tool``,
    ``search_tool`` and ``new_context_tool`` for the agent's ``tools``, answering from the
    items the wrapped session stores. A session is read once per run, so a handoff takes
    effect at the next run (the tool says so): that run starts with the instructions, the
    task, the ledger with the person's rules verbatim and the model's note, then what came
    after the call; a handoff the session refuses (the model called another tool beside it)
    is said in place of the tool's answer in that run's input. Attributes the wrapper does
    not define (``close()``, a store's own methods) are the wrapped session's.
    """

    def __init__(
        self,
        session: Any,
        compactor: Compactor | None = None,
        *,
        window: int | None = None,
        pipeline: CompactionPipeline | None = None,
        is_person: IsPerson | None = None,
        recall: bool = False,
        search: bool = False,
        handoff: bool = False,
        **options: Any,
    ) -> None:
        for method in ("get_items", "add_items", "pop_item", "clear_session"):
            if not callable(getattr(session, method, None)):
                raise TypeError(
                    f"session must be an Agents SDK Session (it has no {method}()), got "
                    f"{type(session).__name__}"
                )
        self.session = session
        self.compactor = build_compactor(compactor, window, pipeline, options)
        self._history = ResponsesHistory(checked(is_person))
        self._offered = {"recall": bool(recall), "search": bool(search)}
        self.handoff = bool(handoff)
        self._tools = AgentsContextTools(session.get_items, SESSION_DONE)
        names = [n for n, on in self._offered.items() if on]
        offer_memory_tools(self.compactor, [*names, *self.compactor.memory_tools])
        self._refused: dict[str, str] = {}
        self._where: dict[str, int] = {}
        self._scanned = 0  # messages before this index hold no new_context call not handed

    def _need(self, on: bool, what: str) -> None:
        if not on:
            raise ValueError(f"{what}_tool needs CompactionSession(..., {what}=True)")

    @property
    def recall_tool(self) -> Any:
        """The ``recall`` function tool for the agent's ``tools`` (needs ``recall=True``)."""
        self._need(self._offered["recall"], "recall")
        return self._tools.recall_tool

    @property
    def search_tool(self) -> Any:
        """The ``search`` function tool for the agent's ``tools`` (needs ``search=True``)."""
        self._need(self._offered["search"], "search")
        return self._tools.search_tool

    @property
    def new_context_tool(self) -> Any:
        """The ``new_context`` function tool (needs ``handoff=True``)."""
        if not self.handoff:
            raise ValueError("new_context_tool needs CompactionSession(..., handoff=True)")
        return self._tools.new_context_tool

    @property
    def session_id(self) -> str:
        """The wrapped session's id."""
        return str(self.session.session_id)

    @property
    def session_settings(self) -> Any:
        """The wrapped session's settings (``SessionSettings`` or None)."""
        return getattr(self.session, "session_settings", None)

    def _hand_off(self, items: list[Any], messages: Sequence[Message]) -> list[Any] | None:
        """Hand off at the newest ``new_context`` call not handed off yet; the items told of
        a refusal found now (None: nothing to tell)."""
        if len(messages) < self._scanned:
            self._scanned = 0
        index = newest_new_context(messages, self._scanned)
        # Scanned again from a call only while nothing follows it (not answered yet).
        self._scanned = index if index == len(messages) - 1 else len(messages)
        if index is None:
            return None
        before = len(self._refused)
        hand_off_at(self.compactor, messages, index, self._refused)
        if len(self._refused) == before:
            return None
        told: list[Any] = tell_refusals(items, self._refused, self._where)
        return told

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The history, compacted; with ``limit``, the wrapped session's raw latest items."""
        items = await self.session.get_items(limit) if limit is not None else None
        if items is not None:
            return list(items)
        items = tell_refusals(list(await self.session.get_items()), self._refused, self._where)
        messages = read_items(self._history, items)
        if messages is None:
            return items
        if self.handoff:
            told = self._hand_off(items, messages)
            if told is not None:
                items, messages = told, read_items(self._history, told)
                if messages is None:
                    return items
        request = await self.compactor.abefore_call(messages)
        if not self.compactor.compacted:
            return items
        return to_responses(request)

    async def add_items(self, items: list[Any]) -> None:
        """Stored, raw, in the wrapped session."""
        await self.session.add_items(items)

    async def pop_item(self) -> Any:
        """The wrapped session's latest item, removed from it."""
        item = await self.session.pop_item()
        # The stored history no longer extends what the compactor mapped.
        self.compactor.reset()
        self._scanned = 0
        return item

    async def clear_session(self) -> None:
        """Clear the wrapped session (and forget its compacted view)."""
        await self.session.clear_session()
        self.compactor.reset()
        self._scanned = 0

    def __getattr__(self, name: str) -> Any:
        # Only public names: the runner probes private hooks (_get_items_with_generation...)
        # that would bypass the compacted read if they were passed through.
        if name.startswith("_") or name == "session":
            raise AttributeError(name)
        return getattr(self.session, name)

    def __repr__(self) -> str:
        return f"CompactionSession({self.session!r}, {self.compactor!r})"
