"""The turn loop: compaction before every model call, tools, a persistent context.

See [`compaction.loop`][] for what one run does; this module sequences it. The model and tool
calls (and their events) are in ``calls``, the conversation in ``history``, beside it.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from blinker import NamedSignal

from .. import events
from .._log import log
from ..messages import Message, user
from ..registry import ConfigError, UnknownStrategyError, ladder_from_config
from ..tokens import TokenCounter, default_counter
from ..trigger import Compactor
from ..validate import validate
from .answers import LOST, Recorder, answer_calls
from .approval import ApproveTool
from .calls import Step, _drive, _is_async, _signature_options, notify
from .config import LoopConfig
from .context import ContextChange, _apply, _diff
from .handoffs import hand_off, new_context_tool
from .history import History, frame
from .lease import turn_lease
from .results import LoopResult, _Turn
from .tools import Tool, _tools

__all__ = ["ReentrantRunError", "TurnLoop"]


class ReentrantRunError(RuntimeError):
    """``run``/``arun`` was called while the same loop is running a turn on its own history
    (a tool calling its own loop, or two runs at once): the nested turn would be stored in the
    middle of the outer one."""


def _prompt(prompt: str | Message) -> Message:
    if isinstance(prompt, str):
        return user(prompt)
    if isinstance(prompt, Message):
        if prompt.role != "user":
            raise ValueError(f"the prompt must be a user message, got {prompt.role!r}")
        return prompt
    raise TypeError(f"prompt must be a str or a Message, got {type(prompt).__name__}")


class TurnLoop:
    """An agent turn loop: compaction before every model call, tools, a persistent context.

    - ``model``: the model callable (see the module docstring); ``tools``: functions or
      [`Tool`][] objects.
    - ``config``: a [`LoopConfig`][], or the path of a TOML file; keyword settings
      (``max_steps``, ``history_limit``, ``max_message_chars``, ``system``, ``name``,
      ``window``, ``compact_at``, ``compact_to``) override it.
    - ``compactor``: a ready [`Compactor`][compaction.trigger.Compactor] (else one is built when a
      ``window`` is set, with the tools' schemas accounted for); ``counter`` its counter.
    - ``session``: a persistent session (anything with ``add(*messages)``, ``global_context`` and
      ``save``; ``messages`` for the history): the history is its raw history and the context
      its global context. Otherwise ``context`` (a dict you keep; default a new one) and an
      in-memory history.
    - ``approve_tool``: asked before every tool call runs; allows, denies or rewrites it
      (see [`compaction.loop.approval`][]).
    - ``memory_tools``: with a ``session``, offer the model ``recall`` (a message back by
      the id a note or placeholder names) and ``search`` (earlier messages by their words:
      what a compaction took out of view), both answered from the session's raw history.
    - ``handoff``: offer the model ``new_context`` (needs a window): at a task boundary it
      may start a fresh window with a note; the next request holds the system prompt, the
      task, the ledger (the person's rules verbatim) and the note (see
      [`compaction.handoff`][]).
    - ``**options``: model option overrides (``temperature=0.8``), recorded in the context.

    Every run reports itself through [`compaction.events`][] (``turn_started``,
    ``model_call_*``, ``tool_call_*``, ``turn_finished``), with the loop as the sender.
    """

    def __init__(
        self,
        model: Callable[..., Any],
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        config: LoopConfig | str | Path | None = None,
        compactor: Compactor | None = None,
        counter: TokenCounter | None = None,
        session: Any = None,
        context: MutableMapping[str, Any] | None = None,
        max_steps: int | None = None,
        history_limit: int | None = None,
        max_message_chars: int | None = None,
        system: str | None = None,
        name: str | None = None,
        window: int | None = None,
        compact_at: float | None = None,
        compact_to: float | None = None,
        approve_tool: ApproveTool | None = None,
        memory_tools: bool = False,
        handoff: bool = False,
        **options: Any,
    ) -> None:
        if not callable(model):
            raise TypeError(f"model must be callable, got {type(model).__name__}")
        if approve_tool is not None and not callable(approve_tool):
            raise TypeError(f"approve_tool must be callable, got {type(approve_tool).__name__}")
        if isinstance(config, str | Path):
            config = LoopConfig.from_toml(config)
        config = (config or LoopConfig()).evolve(
            max_steps=max_steps,
            history_limit=history_limit,
            max_message_chars=max_message_chars,
            system=system,
            name=name,
            window=window,
            compact_at=compact_at,
            compact_to=compact_to,
        )
        if session is not None and context is not None:
            raise ValueError(
                "pass either session= (its global context is used) or context=, not both"
            )
        if session is not None:
            missing = [a for a in ("add", "global_context") if not hasattr(session, a)]
            if missing:
                raise TypeError(f"session must have {missing} (a compaction.sessions.Session)")
        self.model = model
        self.config = config
        tools = list(tools)
        if memory_tools:
            # recall and search answered from the session's raw history: what a compaction
            # took out of view stays reachable by id and by words.
            if session is None or not hasattr(session, "search_tool"):
                raise ValueError("memory_tools=True needs session= (a compaction Session)")
            tools += [session.recall_tool(), session.search_tool()]
        if handoff:
            tools.append(new_context_tool())
        self.tools = _tools(tools)
        # new_context calls already handed off (a retried turn must not hand off twice).
        self._handed: set[str] = set()
        self.session = session
        self.context: MutableMapping[str, Any]
        if session is not None:
            self.context = session.global_context
        else:
            self.context = {} if context is None else context
        self.approve_tool = approve_tool
        self._counter = counter
        self._history = History(session)
        self._extending = threading.Lock()  # held while a run extends its own history
        self._takes_tools, self._option_names = _signature_options(model)
        self._model_async = _is_async(model)
        self._truncate = None
        if config.max_message_chars is not None:
            from ..strategies.truncate import Truncate

            self._truncate = Truncate(
                max_chars=config.max_message_chars, roles=("user", "assistant", "tool")
            )
        schemas = [t.schema for t in self.tools.values()]
        if compactor is None and config.window is not None:
            try:
                pipeline = self._pipeline(config)
            except (ConfigError, UnknownStrategyError) as exc:
                raise ConfigError(f"[compaction]: {exc}") from None
            compactor = Compactor(
                pipeline,
                config.window,
                config.compact_at,
                config.compact_to,
                counter=counter,
                tools=schemas,
                labels={"agent": config.name},
            )
        self.compactor = compactor
        if handoff and compactor is None:
            raise ValueError("handoff=True needs a window (or a compactor) to hand off in")
        self.options: dict[str, Any] = {**config.model_options, **options}
        self._check_options(self.options)
        # Overrides given when building the loop are the run's settings: recorded in the
        # shared (and, with a session, persistent) context where other agents can see them.
        self.override_changes = tuple(self._merge(options, source="override"))

    @classmethod
    def from_config(
        cls,
        path: str | Path,
        model: Callable[..., Any],
        tools: Iterable[Tool | Callable[..., Any]] = (),
        **kwargs: Any,
    ) -> TurnLoop:
        """A loop with its settings from the TOML file at ``path`` (keywords override it)."""
        return cls(model, tools, config=LoopConfig.from_toml(path), **kwargs)

    @staticmethod
    def _pipeline(config: LoopConfig) -> Any:
        # The compactor hands its counter to every run, so the pipeline needs none of its own.
        return ladder_from_config(
            dict(config.ladder or {"use": ["tool_results", "sliding_window"]})
        )

    def __repr__(self) -> str:
        return f"<TurnLoop {self.config.name!r} tools={list(self.tools)}>"

    # -- context -------------------------------------------------------------------------------

    def _merge(
        self, values: Mapping[str, Any], *, source: str, context: Any = None
    ) -> list[ContextChange]:
        target = self.context if context is None else context
        before = {k: target[k] for k in values if k in target}
        changes = _diff(before, {**before, **values}, self.config.name, source)
        _apply(target, changes)
        return changes

    def _check_options(self, options: Mapping[str, Any]) -> None:
        if self._option_names is None:
            return
        unknown = sorted(set(options) - self._option_names)
        if unknown:
            raise TypeError(
                f"the model callable takes no option(s) {unknown}; give it a **options "
                "parameter or named parameters for them"
            )

    # -- history ---------------------------------------------------------------------------------

    @property
    def history(self) -> tuple[Message, ...]:
        """The loop's conversation so far (the session's raw history with a session)."""
        return self._history.messages

    # -- running ---------------------------------------------------------------------------------

    def _emit(self, signal: NamedSignal, **fields: Any) -> None:
        agent = self.config.name
        # The exception itself: the log describes it by type unless text was asked for.
        shown = {k: v for k, v in fields.items() if k != "prompt"}
        log.debug(signal.name, agent=agent, **shown)
        notify(signal, self, agent=agent, labels={"agent": agent}, **fields)

    async def _request(
        self, messages: list[Message], usage: Any, store: bool, sync: bool
    ) -> tuple[Message, ...]:
        """What the next model call is sent: ``messages``, compacted when over the mark."""
        compactor = self.compactor
        if compactor is None:
            return tuple(messages)
        compactions = compactor.stats.compactions
        if "new_context" in self.tools:
            hand_off(compactor, messages, self._handed, self.config.name)
        if sync:
            request = tuple(compactor.before_call(messages, usage))
        else:
            request = tuple(await compactor.abefore_call(messages, usage))
        if store and self.session is not None and compactor.stats.compactions > compactions:
            self._history.store_view(request, self.config)
        return request

    def _request_counter(self) -> TokenCounter | None:
        """The counter the ``model_call_*`` events measure a request with: the compactor's (its
        cache holds these messages already), the loop's ``counter``, or, only when someone
        listens, the default one (loading an encoding nobody reads would slow every first run).
        """
        if self.compactor is not None:
            return self.compactor.counter
        if self._counter is not None:
            return self._counter
        signals = (events.model_call_started, events.model_call_finished, events.model_call_failed)
        if any(signal.receivers for signal in signals):
            return default_counter()
        return None

    async def _steps(
        self,
        turn: _Turn,
        messages: list[Message],
        shared: MutableMapping[str, Any],
        options: Mapping[str, Any],
        store: bool,
        sync: bool,
    ) -> Message:
        """Call the model, run the tools it asks for, repeat; answers the last reply."""
        kwargs = dict(options)
        if self._takes_tools:
            kwargs["tools"] = [t.schema for t in self.tools.values()] or None
        counter = self._request_counter()
        usage: Any = None
        reply: Message | None = None
        for step in range(self.config.max_steps):
            request = await self._request(messages, usage, store, sync)
            turn.requests.append(request)
            calls = Step(self, self.config.name, counter, step)
            reply, usage = await calls.call_model(self.model, request, kwargs, sync)
            reply = await answer_calls(
                reply,
                calls,
                Recorder(self._history if store else None, turn, messages, self.config.name),
                self.tools,
                self.approve_tool,
                shared,
                sync,
            )
            if not reply.tool_calls:
                turn.stopped = "answer"
                break
        assert reply is not None  # max_steps >= 1
        return reply

    async def _run(
        self,
        prompt: str | Message,
        history: Sequence[Message] | None,
        context: MutableMapping[str, Any] | None,
        options: Mapping[str, Any],
        sync: bool,
    ) -> LoopResult:
        if sync and self._model_async:
            raise TypeError("the model is async: use `await loop.arun(...)`")
        if history is not None:  # a run that stands alone records nothing: it may nest
            return await self._turn(prompt, history, context, options, sync)
        if not self._extending.acquire(blocking=False):
            raise ReentrantRunError(
                f"TurnLoop {self.config.name!r} is already running a turn on its conversation "
                "(a tool calling its own loop, or two runs at once); a nested turn would be "
                "stored inside the outer one. Give it its own conversation: "
                "run(prompt, history=[]) or another TurnLoop (with its own session)"
            )
        try:
            with turn_lease(self.session, self.config.name):  # one run at a time, everywhere
                return await self._turn(prompt, history, context, options, sync)
        finally:
            self._extending.release()

    async def _turn(
        self,
        prompt: str | Message,
        history: Sequence[Message] | None,
        context: MutableMapping[str, Any] | None,
        options: Mapping[str, Any],
        sync: bool,
    ) -> LoopResult:
        prompt_message = _prompt(prompt)
        run_options = {**self.options, **options}
        self._check_options(run_options)
        shared = self.context if context is None else context
        store = history is None
        if store:  # a run killed between two calls left them unanswered (we hold the lease)
            self._history.close({}, LOST)
        # A retried unfinished turn's prompt is stored already: go on from where it stopped.
        retried = self._history.unfinished(prompt_message) if store else None
        start = self._history.start() if history is None else history
        messages = frame(start, self.config, self._truncate)
        if retried is None:
            messages.append(prompt_message)
        validate(messages)
        if retried is None and store:
            (messages[-1],) = self._history.record(prompt_message)
        turn = _Turn(retried if retried is not None else messages[-1])
        self._emit(events.turn_started, prompt=turn.prompt, retry=retried is not None)
        started = time.monotonic()
        try:
            reply = await self._steps(turn, messages, shared, run_options, store, sync)
        except BaseException as exc:
            self._emit(
                events.turn_finished,
                steps=len(turn.requests),
                stopped="error",
                seconds=time.monotonic() - started,
                ok=False,
                error=exc,
                messages=len(turn.added),
            )
            raise
        save = getattr(self.session, "save", None)
        if store and save is not None:
            save()
        self._emit(
            events.turn_finished,
            steps=len(turn.requests),
            stopped=turn.stopped,
            seconds=time.monotonic() - started,
            ok=True,
            error=None,
            messages=len(turn.added),
        )
        return LoopResult(
            reply=reply,
            messages=(turn.prompt, *turn.added),
            requests=tuple(turn.requests),
            stopped=turn.stopped,
            context_changes=tuple(turn.changes),
            context=copy.deepcopy(dict(shared)),
        )

    def run(
        self,
        prompt: str | Message,
        *,
        history: Sequence[Message] | None = None,
        context: MutableMapping[str, Any] | None = None,
        **options: Any,
    ) -> LoopResult:
        """Run one turn: the model is called until it answers without tool calls.

        ``history``: the conversation before the prompt, for a run that stands alone (default:
        the loop's own conversation, which the run then extends). ``context``: the shared
        context for this run (default: the loop's). ``**options``: model options for this run.
        """
        return _drive(self._run(prompt, history, context, options, sync=True))

    async def arun(
        self,
        prompt: str | Message,
        *,
        history: Sequence[Message] | None = None,
        context: MutableMapping[str, Any] | None = None,
        **options: Any,
    ) -> LoopResult:
        """Async twin of [`run`][]: awaits an async model, async tools and summarisers."""
        return await self._run(prompt, history, context, options, sync=False)
