"""Continue sessions (``~/.continue/sessions/<sessionId>.json``), from the IDE extensions and
the ``cn`` CLI alike.

The file is one object, ``{"sessionId", "title", "workspaceDirectory", "history": [...],
"mode"?, "chatModelTitle"?, "usage"?}``, rewritten whole on every save. Each ``history`` item
is ``{"message": {"role", "content", ...}, "contextItems": [...], "toolCallStates"?,
"conversationSummary"?, ...}``. The conversation is rebuilt the way Continue builds what it
sends (``constructMessages`` in the extension, ``convertFromUnifiedHistory`` in the CLI):

- a ``user`` item's ``content`` (text, or ``text`` / ``imageUrl`` parts) is what the person
  typed; its ``contextItems`` are what the IDE attached (open file, selection, @-mentions,
  rules): Continue sends them before the person's words in the same message. They are the
  harness's, so they become a synthetic user message of their own just before the person's;
- an ``assistant`` item's ``message.toolCalls`` (``id``, ``function.name``,
  ``function.arguments``) are its calls, and its ``toolCallStates`` (one per call:
  ``toolCallId``, ``status``, ``output`` context items) their results, placed right after it:
  the output's ``content`` joined, or Continue's own text for a ``canceled`` or ``errored``
  call without output. A call with neither (the session ended first) gets the visible
  ``no_result``. The extension also keeps each result as a ``tool`` item; a tool item is read
  only for a call its state did not answer;
- ``thinking`` items are the model's reasoning before an assistant turn: kept in that turn's
  ``meta``, as ``reasoning`` is;
- ``system`` items are the extension's and CLI's own notices; neither sends them (the CLI drops
  them when it saves), so they are skipped and counted;
- ``conversationSummary`` on an item is Continue's own compaction: what came before and with
  that item is no longer sent, the summary is. It is kept there as a native compaction. The
  CLI makes the summary an assistant item of its own (its content is the summary): that item
  is the summary;
- ``message.usage`` (``prompt_tokens``, ``prompt_tokens_details.cached_tokens`` as the CLI
  stores it, or Continue's own ``promptTokens``...) is the recorded call. Continue's Anthropic
  adapters count ``prompt_tokens`` without the cache reads and mark it by writing
  ``cache_read_tokens`` / ``cacheWriteTokens`` too; otherwise the OpenAI rule holds (the
  cached tokens are part of the prompt). Continue records no time per message. ``usage`` on
  the session is the whole session's total: kept in ``Loaded.extra``, never passed off as a
  call's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import args_text, count, done, text_id
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, native_compaction, recorded
from .registry import Reader

__all__ = ["FORMAT", "READERS", "read_continue", "sniff_continue"]

FORMAT: Final = "continue"
SOURCE_KEY: Final = "continue"

_ROLES: Final = frozenset({"user", "assistant", "thinking", "system", "tool"})
#: Continue's own results for a call without output (``core/tools/constants.ts``).
_CANCELLED: Final = "The user cancelled this tool call."
_ERRORED: Final = "There was an error calling the tool."
#: The one tool whose result Continue writes with each output item's status after it.
_WITH_STATUS: Final = "run_terminal_command"


def _is_item(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("message"), Mapping)


def sniff_continue(doc: Document, path: str | Path = "") -> bool:
    """A Continue session: one object with ``sessionId``, ``workspaceDirectory`` and a
    ``history`` list whose items hold a ``message``."""
    value = doc.value
    if doc.records is not None or not isinstance(value, Mapping):
        return False
    history = value.get("history")
    return (
        isinstance(history, list)
        and "sessionId" in value
        and "workspaceDirectory" in value
        and all(_is_item(item) for item in history[:8])
    )


def _text(content: Any, where: str, path: str | Path) -> str:
    """A message's ``content`` as text: a string, or its parts (an image named, not lost)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise FormatError(path, f"{where}.content: expected text or a list of parts")
    out = []
    for part in content:
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif isinstance(part, Mapping) and part.get("type") == "imageUrl":
            out.append("[image]")
        elif isinstance(part, str):
            out.append(part)
    return "\n".join(out)


def _usage(usage: Any) -> dict[str, int]:
    if not isinstance(usage, Mapping):
        return {}
    snake = "prompt_tokens" in usage
    prompt = count(usage.get("prompt_tokens" if snake else "promptTokens"))
    output = count(usage.get("completion_tokens" if snake else "completionTokens"))
    details = usage.get("prompt_tokens_details" if snake else "promptTokensDetails")
    details = details if isinstance(details, Mapping) else {}
    cached = count(details.get("cached_tokens" if snake else "cachedTokens"))
    written = count(details.get("cache_write_tokens" if snake else "cacheWriteTokens"))
    if not snake and "promptTokens" not in usage:
        return {}
    # Only Continue's Anthropic adapters write these keys, and they leave the cache out of
    # the prompt count; every other provider's prompt count includes its cached tokens.
    apart = ("cache_read_tokens" if snake else "cacheWriteTokens") in details
    if apart:
        return dict(uncached=prompt, cache_read=cached, cache_write=written, output=output)
    cached = min(cached, prompt)
    return dict(uncached=prompt - cached, cache_read=cached, output=output)


def _calls(item: Mapping[str, Any], where: str, path: str | Path) -> list[ToolCall]:
    """The item's calls: ``message.toolCalls``, and any only its ``toolCallStates`` name."""
    listed = item["message"].get("toolCalls")
    states = item.get("toolCallStates")
    found = [*(listed if isinstance(listed, list) else ())]
    for state in states if isinstance(states, list) else ():
        if isinstance(state, Mapping) and isinstance(state.get("toolCall"), Mapping):
            found.append(state["toolCall"])
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for index, call in enumerate(found):
        if not isinstance(call, Mapping):
            raise FormatError(path, f"{where}.message.toolCalls[{index}]: expected an object")
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        cid = text_id(call.get("id")) or f"{where}-call-{index}"
        if cid in seen:
            continue
        seen.add(cid)
        name = function.get("name")
        name = name if isinstance(name, str) and name else "tool"
        calls.append(ToolCall(cid, name, args_text(function.get("arguments"))))
    return calls


def _states(item: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The item's ``toolCallStates`` by the id of the call each is for."""
    states = item.get("toolCallStates")
    found: dict[str, Mapping[str, Any]] = {}
    for state in states if isinstance(states, list) else ():
        if not isinstance(state, Mapping):
            continue
        call = state.get("toolCall")
        key = text_id(state.get("toolCallId"))
        if key is None and isinstance(call, Mapping):
            key = text_id(call.get("id"))
        if key is not None:
            found.setdefault(key, state)
    return found


def _output(state: Mapping[str, Any], name: str) -> str | None:
    """What Continue sends back for one call state (None: it has no result yet)."""
    output = state.get("output")
    items = [o for o in output if isinstance(o, Mapping)] if isinstance(output, list) else []
    if state.get("status") == "canceled":
        return _CANCELLED
    if items:
        texts = []
        for o in items:
            content = o.get("content")
            text = content if isinstance(content, str) else ""
            if name == _WITH_STATUS and o.get("status"):
                text += f"\n[Status: {o['status']}]"
            texts.append(text)
        return "\n\n".join(texts)
    if state.get("status") == "errored":
        return _ERRORED
    return None


class _Reader:
    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.messages: list[Message] = []
        self.skipped: Counter[str] = Counter()
        self.thinking: list[Any] = []
        self.open: set[str] = set()  # calls of the last assistant message still unanswered
        self.answered: set[str] = set()  # calls already given a result
        self.since = 0
        self.pending: tuple[Mapping[str, Any], str] | None = None  # a summary, after results

    def user(self, item: Mapping[str, Any], where: str) -> None:
        text = _text(item["message"].get("content"), f"{where}.message", self.path)
        context = item.get("contextItems")
        context = (
            [c for c in context if isinstance(c, Mapping)] if isinstance(context, list) else []
        )
        attached = [c.get("content") for c in context if isinstance(c.get("content"), str)]
        source = {"item": where}
        if any(a.strip() for a in attached):
            names = [c.get("name") for c in context if isinstance(c.get("name"), str)]
            meta = {SOURCE_KEY: {**source, "contextItems": names}, SYNTHETIC_KEY: True}
            self.messages.append(Message("user", "\n".join(attached), meta=meta))
        if text.strip():
            self.messages.append(Message("user", text, meta={SOURCE_KEY: source}))
        elif not any(a.strip() for a in attached):
            self.skipped["empty user item"] += 1

    def assistant(self, item: Mapping[str, Any], where: str) -> None:
        message = item["message"]
        text = _text(message.get("content"), f"{where}.message", self.path)
        calls = _calls(item, where, self.path)
        source: dict[str, Any] = {"item": where}
        reasoning = item.get("reasoning")
        if isinstance(reasoning, Mapping) and reasoning.get("text"):
            self.thinking.append(reasoning["text"])
        if self.thinking:
            source["thinking"], self.thinking = self.thinking, []
        if isinstance(message.get("metadata"), Mapping):
            source["metadata"] = message["metadata"]
        usage = _usage(message.get("usage"))
        meta: dict[str, Any] = {SOURCE_KEY: source}
        if usage:
            meta[RECORDED_KEY] = recorded(
                timestamp=None, model=None, raw_usage=message["usage"], **usage
            )
        if not text.strip() and not calls:
            self.skipped["assistant item without text or calls"] += 1
            return
        self.messages.append(Message("assistant", text, tool_calls=calls, meta=meta))
        self.open = {c.id for c in calls}
        by_id = _states(item)
        for call in calls:
            state = by_id.get(call.id)
            result = _output(state, call.name) if state is not None else None
            if state is None or result is None:
                continue  # a tool item may answer it; if not, the repair makes it visible
            status = state.get("status")
            meta = {SOURCE_KEY: {"item": where, "status": status}}
            self.messages.append(
                Message("tool", result, tool_call_id=call.id, name=call.name, meta=meta)
            )
            self.open.discard(call.id)
            self.answered.add(call.id)

    def tool(self, item: Mapping[str, Any], where: str) -> None:
        cid = text_id(item["message"].get("toolCallId")) or "unknown"
        if cid in self.answered:
            self.skipped["tool item its call's state already answered"] += 1
            return
        # Its call's result, or (no such call open) an orphan the repair keeps visible.
        self.open.discard(cid)
        self.answered.add(cid)
        content = _text(item["message"].get("content"), f"{where}.message", self.path)
        self.messages.append(
            Message("tool", content, tool_call_id=cid, meta={SOURCE_KEY: {"item": where}})
        )

    def summary(self, item: Mapping[str, Any], where: str) -> None:
        text = item["conversationSummary"]
        message = item["message"]
        own = (
            message.get("role") == "assistant"
            and _text(message.get("content"), where, self.path).strip() == text.strip()
            and self.messages
            and self.messages[-1].role == "assistant"
            and self.messages[-1].meta.get(SOURCE_KEY, {}).get("item") == where
        )
        if own:  # the CLI's summary item: the summary is that assistant message
            summary = self.messages.pop()
        else:
            summary = Message("user", text, meta={SOURCE_KEY: {"item": where}})
        replaces = self.messages[self.since :]
        self.messages.append(native_compaction(summary, agent=FORMAT, replaces=replaces))
        self.since = len(self.messages)

    def read(self, history: list[Any]) -> None:
        for index, item in enumerate(history):
            where = f"history[{index}]"
            if not _is_item(item):
                raise FormatError(self.path, f"{where}: expected an object with a 'message'")
            role = item["message"].get("role")
            if not isinstance(role, str) or role not in _ROLES:
                raise FormatError(
                    self.path,
                    f"{where}.message.role {role!r}: expected user, assistant, thinking, "
                    "tool or system",
                )
            if role != "tool" and self.pending is not None:
                self.summary(*self.pending)  # after the results of the item it is on
                self.pending = None
            if role in ("user", "system"):
                self.open = set()
            if role == "user":
                self.user(item, where)
            elif role == "assistant":
                self.assistant(item, where)
            elif role == "thinking":
                self.thinking.append(_text(item["message"].get("content"), where, self.path))
            elif role == "tool":
                self.tool(item, where)
            else:
                self.skipped["system item (Continue does not send it)"] += 1
            summary = item.get("conversationSummary")
            if isinstance(summary, str) and summary.strip():
                self.pending = (item, where)
        if self.pending is not None:
            self.summary(*self.pending)
        if self.thinking:
            self.skipped["thinking item with no assistant turn after it"] += len(self.thinking)


def read_continue(doc: Document, path: str | Path) -> Loaded:
    """Read a Continue session (see the module docstring)."""
    value = doc.value
    if doc.records is not None or not isinstance(value, Mapping):
        raise FormatError(path, "read as continue: expected one JSON object with a 'history' list")
    history = value.get("history")
    if not isinstance(history, list):
        raise FormatError(path, "'history': expected a list of items")
    reader = _Reader(path)
    reader.read(history)
    loaded = done(reader.messages, FORMAT, path, skipped=reader.skipped, container="object")
    session = {
        k: value[k]
        for k in ("sessionId", "title", "workspaceDirectory", "mode", "chatModelTitle", "usage")
        if k in value
    }
    return attrs.evolve(loaded, extra={"session": session})


READERS = (
    Reader(
        name=FORMAT,
        title="Continue session (~/.continue/sessions/<id>.json)",
        shape='{"sessionId", "workspaceDirectory", "history": [{"message": {"role", "content", '
        '"toolCalls"}, "contextItems", "toolCallStates"}]}',
        sniff=sniff_continue,
        read=read_continue,
        output="openai",
        priority=30,
    ),
)
