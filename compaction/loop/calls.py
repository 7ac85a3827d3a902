"""One model call and one tool call, each timed and reported through the loop's events.

A [`Step`][] holds what both need from the loop (the sender of the events, the agent's
name, the counter the request is measured with), so the turn loop itself only sequences calls.
"""

from __future__ import annotations

import copy
import inspect
import json
import time
import typing
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import attrs
from blinker import NamedSignal

from .. import events
from .._log import log
from ..messages import Message, ToolCall
from ..tokens import TokenCounter
from .approval import ApproveTool, decide
from .context import ContextChange, _apply_all, _diff
from .replies import _reply_message
from .tools import Tool, _result_text

__all__ = ["ToolCallError", "notify"]


def notify(signal: NamedSignal, sender: Any, **fields: Any) -> None:
    """Send ``signal`` to each receiver in turn, isolating the ones that raise.

    A subscriber observes the loop; it must not change what the agent does. blinker's ``send``
    stops at the first receiver that raises and raises out of the loop: a metrics backend
    that is down would then end a turn between two tool calls, after side effects it cannot
    undo. A receiver's exception is logged (by its type, see ``compaction._redact``) and
    the other receivers and the turn go on. Ctrl-C and exits still pass through.
    """
    for receiver in signal.receivers_for(sender):
        try:
            receiver(sender, **fields)
        except Exception as exc:
            log.warning(
                "loop.subscriber_failed",
                signal=signal.name,
                receiver=getattr(receiver, "__qualname__", type(receiver).__name__),
                error=exc,
            )


class ToolCallError(ValueError):
    """A tool call the loop could not run as asked (unknown tool, unreadable arguments); the
    model gets the message as the call's result. Sent as ``error`` of ``tool_call_failed``."""


@attrs.define(slots=True)
class Step:
    """One model call and the tool calls it asked for."""

    sender: Any
    agent: str
    counter: TokenCounter | None  # None: nobody measures the requests (see TurnLoop)
    step: int
    # The call whose tool function is executing: if the turn stops now, that call may have
    # had (part of) its effect, unlike the calls after it (see TurnLoop._close).
    running: str | None = None

    def emit(self, signal: NamedSignal, **fields: Any) -> None:
        labels = {"agent": self.agent}
        log.debug(signal.name, agent=self.agent, step=self.step, **_loggable(fields))
        notify(signal, self.sender, agent=self.agent, step=self.step, labels=labels, **fields)

    # -- the model -------------------------------------------------------------------------------

    async def call_model(
        self,
        model: Callable[..., Any],
        request: tuple[Message, ...],
        kwargs: Mapping[str, Any],
        sync: bool,
    ) -> tuple[Message, Any]:
        """Call ``model`` with ``request``; answers the reply as a Message and its usage."""
        tokens = None if self.counter is None else self.counter.count_messages(request)
        self.emit(events.model_call_started, tokens=tokens, messages=len(request))
        started = time.monotonic()
        try:
            reply = model(request, **kwargs)
            if inspect.isawaitable(reply):
                if sync:
                    close = getattr(reply, "close", None)
                    if close is not None:
                        close()
                    raise TypeError("the model is async: use `await loop.arun(...)`")
                reply = await reply
            message, usage = _reply_message(reply, self.step)
        except BaseException as exc:
            self.emit(
                events.model_call_failed,
                tokens=tokens,
                seconds=time.monotonic() - started,
                error=exc,
            )
            raise
        self.emit(
            events.model_call_finished,
            tokens=tokens,
            seconds=time.monotonic() - started,
            usage=usage,
            tool_calls=len(message.tool_calls),
        )
        return message, usage

    # -- a tool ----------------------------------------------------------------------------------

    def _refused(self, call: ToolCall, arguments: Any, text: str) -> str:
        self.emit(
            events.tool_call_failed,
            call=call,
            name=call.name,
            arguments=arguments,
            seconds=0.0,
            error=ToolCallError(text),
            stage="arguments",
        )
        return text

    async def call_tool(
        self,
        tools: Mapping[str, Tool],
        approve: ApproveTool | None,
        call: ToolCall,
        context: MutableMapping[str, Any],
        changes: list[ContextChange],
        sync: bool,
    ) -> str:
        """Run ``call`` and answer the text the model gets as its result (an error or a
        refusal included: a tool call always gets an answer, or the conversation is invalid)."""
        found = tools.get(call.name)
        if found is None:
            text = f"error: no tool named {call.name!r}; available: {sorted(tools)}"
            return self._refused(call, None, text)
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            text = f"error: the arguments of {call.name!r} are not valid JSON: {exc}"
            return self._refused(call, None, text)
        if not isinstance(arguments, dict):
            text = f"error: the arguments of {call.name!r} must be a JSON object"
            return self._refused(call, None, text)
        if "context" in arguments:
            text = "error: 'context' is not an argument the model may set"
            return self._refused(call, arguments, text)
        decision = await decide(approve, call, arguments, sync)
        if decision.refusal is not None:
            log.info("loop.tool_denied", tool=call.name, agent=self.agent)
            self.emit(events.tool_call_denied, call=call, name=call.name, reason=decision.refusal)
            return decision.refusal
        arguments = decision.arguments
        shown = copy.deepcopy(arguments)
        self.emit(
            events.tool_call_started,
            call=call,
            name=call.name,
            arguments=shown,
            rewritten=decision.rewritten,
        )
        started = time.monotonic()
        work: dict[str, Any] | None = None
        if found.takes_context:
            # A copy: a tool that raises halfway leaves the shared context as it was.
            work = copy.deepcopy(dict(context))
            arguments = {**arguments, "context": work}
        self.running = call.id
        try:
            value = found.function(**arguments)
            if inspect.isawaitable(value):
                if sync:
                    close = getattr(value, "close", None)
                    if close is not None:
                        close()
                    raise TypeError(f"tool {call.name!r} is async: use `await loop.arun(...)`")
                value = await value
        except BaseException as exc:
            if isinstance(exc, Exception):
                self.running = None
            log.warning("loop.tool_failed", tool=call.name, error=exc)
            self._failed(call, shown, started, exc, "run")
            if not isinstance(exc, Exception):  # Ctrl-C, exit: reported, then let through
                raise
            return f"error: {call.name} raised {type(exc).__name__}: {exc}"
        self.running = None
        if work is not None:
            before = {k: context[k] for k in context}
            made = _diff(before, work, self.agent, call.name)
            try:
                _apply_all(context, made)
            except (TypeError, ValueError) as exc:
                # A value the context cannot hold (a session's context keeps JSON only): the
                # tool's changes are dropped, as when it raises, and the model is told.
                log.warning("loop.context_refused", tool=call.name, error=exc)
                self._failed(call, shown, started, exc, "context")
                return f"error: {call.name} changed the context in a way it cannot keep: {exc}"
            changes.extend(made)
        text = _result_text(value)
        self.emit(
            events.tool_call_finished,
            call=call,
            name=call.name,
            arguments=shown,
            seconds=time.monotonic() - started,
            result=text,
        )
        return text

    def _failed(
        self, call: ToolCall, arguments: Any, started: float, error: BaseException, stage: str
    ) -> None:
        self.emit(
            events.tool_call_failed,
            call=call,
            name=call.name,
            arguments=arguments,
            seconds=time.monotonic() - started,
            error=error,
            stage=stage,
        )


def _signature_options(model: Callable[..., Any]) -> tuple[bool, frozenset[str] | None]:
    """Whether ``model`` takes ``tools=``, and which keyword options (None: any)."""
    try:
        signature = inspect.signature(model)
    except (TypeError, ValueError):  # some builtins and C callables: assume messages only
        return False, frozenset()
    params = signature.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return True, None
    names = frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    return "tools" in names, names - {"tools"}


def _is_async(function: Callable[..., Any]) -> bool:
    # A callable object (such as an async client wrapper) is async through its __call__.
    call = type(function).__call__ if not inspect.isroutine(function) else None
    return inspect.iscoroutinefunction(function) or (
        call is not None and inspect.iscoroutinefunction(call)
    )


def _drive(coroutine: Awaitable[Any]) -> Any:
    """Run a coroutine that never suspends, without an event loop.

    The loop is written once, as a coroutine; with a sync model and sync tools nothing in it
    ever waits, so the sync [`TurnLoop.run`][] can drive it to the end in one step and works
    inside a running event loop too (where ``asyncio.run`` would refuse).
    """
    coro = typing.cast(Any, coroutine)
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError(
        "the model or a tool waited on I/O in the sync run(); use `await loop.arun(...)`"
    )


def _loggable(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields worth a log line: no message bodies or tool results (they can be huge)."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key in ("result", "arguments", "prompt"):
            continue
        if isinstance(value, ToolCall):
            value = value.id
        out[key] = value  # an exception stays one: the log describes it (compaction._redact)
    return out
