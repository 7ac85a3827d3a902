"""LiteLLM: compact every chat request to the model's window, in the SDK and in the proxy.

``pip install 'compaction-ladder[litellm]'``, then::

    litellm.callbacks = [CompactionHook(window=32_000)]

[`CompactionHook`][] is a LiteLLM ``CustomLogger`` with the two hooks LiteLLM gives a callback
to rewrite a request before it is sent:

- ``async_pre_call_deployment_hook``: LiteLLM runs it for every ``litellm.acompletion`` call
  (and every call through a ``Router``) just before the request goes to the deployment;
- ``async_pre_call_hook``: the proxy runs it for every request it receives (list the hook in
  the proxy config's ``litellm_settings.callbacks``).

LiteLLM's synchronous ``litellm.completion`` runs neither (its only callback before the request
is ``log_pre_api_call``, which sees the request after it is built and cannot change it), so
synchronous code calls [`CompactionHook.compact_messages`][] on the messages it passes. A
synchronous call big enough to need compacting warns once (``CompactionSyncWarning``), naming
that method, rather than go out uncompacted in silence.

The window is the model's own, from LiteLLM's model map (``max_input_tokens``; models added
with ``litellm.register_model`` count), else ``window`` as given. Each conversation keeps its
own [`Compactor`][compaction.trigger.Compactor], so compaction has hysteresis (compact at
``compact_at`` of the window, down to ``compact_to``) and, between compactions, each request
extends the one before, keeping the provider's prompt cache warm. A conversation is known by
``litellm_session_id`` or ``metadata["session_id"]`` when the caller sets one, else by its model
and first messages; the hook remembers at most ``max_conversations`` of them (least recently
used are forgotten). On the async path the provider's reported input tokens of each answer
anchor the next estimate (``async_post_call_success_deployment_hook``), so the window is judged
by the model's own tokenizer. A request that cannot be read or compacted is sent as it came:
the hook never fails a call.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from ._extra import missing_extra

try:
    from litellm.integrations.custom_logger import CustomLogger
except ModuleNotFoundError as exc:  # the extra is missing: say which one
    raise missing_extra(__name__, "litellm", exc) from exc

from .._log import log
from ..adapters import AdapterError
from ..adapters._coerce import plain as _plain
from ..adapters.person import IsPerson
from ..memory.offered import MEMORY_TOOLS, memory_tool_names
from ..trigger import Compactor, CompactorStats
from ._compactor import MissingWindowError, default_pipeline
from ._litellm_parts import (
    SYNC_MESSAGE,
    CompactionSyncWarning,
    LiteLLMConversation,
    model_window,
    rough_tokens,
    summed_stats,
)
from .context_tools import MessagesNewContext, MessagesSearch, hand_off_if_asked
from .recall_tools import MessagesRecall

__all__ = ["CompactionHook", "CompactionSyncWarning", "MissingWindowError"]


class CompactionHook(CustomLogger):  # type: ignore[misc]
    """A LiteLLM callback that compacts each chat request before it is sent.

    ``window`` is used for models LiteLLM has no window for (a model with neither is an
    error, raised by the call: running it uncompacted would be a silent surprise);
    ``pipeline`` is the ladder (default: tool results, sliding window, extractive summary);
    ``compact_at``, ``compact_to``, ``counter``, ``min_saving`` and ``labels`` are the
    [`Compactor`][compaction.trigger.Compactor]'s; ``observe_usage`` anchors the estimate on the
    input tokens the provider reports (a count far below the local one is ignored anyway);
    ``max_conversations`` bounds how many conversations are followed. ``recall=True`` gives
    ``recall_tool``: put its ``spec`` in ``tools`` and answer the model's ``recall`` calls
    with its ``handle(tool_call, messages)``, which gives back any message a placeholder or
    note names. ``search=True`` gives ``search_tool`` (earlier messages by their words) and
    ``handoff=True`` ``new_context_tool``, used the same way: after the model's
    ``new_context`` call, the next request is a fresh window (the system prompt, the task,
    the ledger with the person's rules verbatim, the model's note; [`compaction.handoff`][]).
    Notes name the memory tools the request's ``tools`` offer (counted or not); a request
    that does not carry ``tools`` is taken to offer those the hook was asked for.

    Only the person's words are kept as theirs (their rules and limits outlive a compaction
    verbatim). Agents that send command output as user messages (mini-swe-agent's
    ``<returncode>``, ``Observation:``, harness format errors) are recognised as the file
    readers recognise them; ``is_person`` (called with each remaining user
    [`Message`][compaction.messages.Message], the original dict under ``meta["openai"]``) may
    take more away: answer False for what the person did not write.

    ``compactor(session_id)`` answers the compactor of a conversation (its ``stats`` say what
    it did; without a session id, the one used last); ``stats`` sums them all.
    """

    def __init__(
        self,
        *,
        window: int | None = None,
        pipeline: Any = None,
        compact_at: float = 0.7,
        compact_to: float = 0.4,
        counter: Any = None,
        min_saving: float = 0.05,
        labels: Mapping[str, Any] | None = None,
        observe_usage: bool = True,
        max_conversations: int = 256,
        recall: bool = False,
        is_person: IsPerson | None = None,
        search: bool = False,
        handoff: bool = False,
    ) -> None:
        super().__init__()
        if is_person is not None and not callable(is_person):
            raise TypeError(f"is_person must be callable, got {type(is_person).__name__}")
        self.is_person = is_person
        # recall=True: a tool spec (``recall_tool.spec``) and its handler over your messages.
        self.recall_tool = MessagesRecall() if recall else None
        self.search_tool = MessagesSearch() if search else None
        self.new_context_tool = MessagesNewContext() if handoff else None
        self._offered = tuple(n for n in MEMORY_TOOLS if {"search": search, "recall": recall}[n])
        if window is not None and (
            isinstance(window, bool) or not isinstance(window, int) or window <= 0
        ):
            raise ValueError(f"window must be a positive int (tokens), got {window!r}")
        if max_conversations < 1:
            raise ValueError(f"max_conversations must be >= 1, got {max_conversations!r}")
        self.window = window
        self.pipeline = pipeline or default_pipeline()
        self.options: dict[str, Any] = {
            "compact_at": compact_at,
            "compact_to": compact_to,
            "counter": counter,
            "min_saving": min_saving,
        }
        self.labels = dict(labels or {})
        self.observe_usage = bool(observe_usage)
        self.max_conversations = max_conversations
        # Checked now, so a bad option fails here and not silently on every call.
        Compactor(self.pipeline, window or 100_000, **self.options)
        # Conversations by their own id; _by_key lists those sharing a key (without a session
        # id: one model and the same first messages, which many users can share).
        self._conversations: OrderedDict[int, LiteLLMConversation] = OrderedDict()
        self._by_key: dict[str, list[int]] = {}
        self._serial = 0
        self._last: LiteLLMConversation | None = None
        self._windows: dict[str, int | None] = {}
        # Calls sent and not yet answered: litellm_call_id -> (compactor, its call count then).
        self._sent: OrderedDict[str, tuple[Compactor, int]] = OrderedDict()
        # The message lists this hook wrote (by id, kept referenced so the id stays theirs):
        # the proxy runs the deployment hook again on a request its pre-call hook rewrote.
        self._written: OrderedDict[int, list[Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._warned_sync = False

    # -- what it did -----------------------------------------------------------------------

    def compactor(
        self, session_id: str | None = None, model: str | None = None
    ) -> Compactor | None:
        """The compactor of the conversation ``session_id`` (of ``model``, when given), or,
        without a session id, the one used last; None when there is none."""
        if session_id is None:
            return self._last.compactor if self._last else None
        with self._lock:
            for conversation in reversed(self._conversations.values()):
                key = conversation.key
                if key.startswith("session:") and (
                    key == f"session:{model}:{session_id}"
                    if model is not None
                    else key.endswith(f":{session_id}")
                ):
                    return conversation.compactor
        return None

    @property
    def stats(self) -> CompactorStats:
        """What the hook did, summed over the conversations it follows now (``last_*`` and
        ``anchored`` are those of the conversation used last)."""
        with self._lock:
            compactors = [c.compactor for c in self._conversations.values()]
        return summed_stats(compactors, self._last.compactor if self._last else None)

    # -- the work --------------------------------------------------------------------------

    def window_for(self, model: str, provider: Any = None) -> int | None:
        """The window used for ``model``: LiteLLM's, else the one given, else None."""
        key = f"{provider}/{model}"
        if key not in self._windows:
            self._windows[key] = model_window(model, provider) or self.window
        return self._windows[key]

    def _key(self, model: str, messages: Sequence[Any], request: Mapping[str, Any]) -> str:
        metadata = request.get("metadata") or request.get("litellm_metadata") or {}
        session = request.get("litellm_session_id") or (
            metadata.get("session_id") if isinstance(metadata, Mapping) else None
        )
        if session:
            return f"session:{model}:{session}"
        # Without an id, the first messages narrow the search; which conversation a request
        # continues is decided by its whole converted prefix (_conversation), since many users
        # share a system prompt and a greeting.
        head = json.dumps([_plain(m) for m in messages[:2]], sort_keys=True, default=str)
        return f"head:{model}:" + hashlib.sha256(head.encode()).hexdigest()

    def _conversation(
        self, key: str, messages: Sequence[Any], window: int, tools: Any
    ) -> LiteLLMConversation:
        with self._lock:
            found = None
            for serial in self._by_key.get(key, ()):
                conversation = self._conversations[serial]
                if conversation.compactor.window == window and (
                    key.startswith("session:") or conversation.history.extends(messages)
                ):
                    found = conversation
                    break
            if found is None:
                self._serial += 1
                found = LiteLLMConversation(
                    key,
                    self._serial,
                    Compactor(
                        self.pipeline,
                        window,
                        tools=tools if isinstance(tools, list) else None,
                        labels={**self.labels, "conversation_id": f"{key}#{self._serial}"},
                        **self.options,
                    ),
                    self.is_person,
                )
                ids = self._by_key.setdefault(key, [])
                if key.startswith("session:"):
                    for old in ids:  # a session has one conversation (a new window replaced it)
                        self._conversations.pop(old, None)
                    ids.clear()
                ids.append(self._serial)
                self._conversations[self._serial] = found
            self._conversations.move_to_end(found.serial)
            while len(self._conversations) > self.max_conversations:
                old, gone = self._conversations.popitem(last=False)
                ids = self._by_key.get(gone.key, [])
                if old in ids:
                    ids.remove(old)
                if not ids:
                    self._by_key.pop(gone.key, None)
            self._last = found
            return found

    def _prepare(
        self, model: Any, messages: Any, request: Mapping[str, Any]
    ) -> tuple[LiteLLMConversation, Any] | None:
        if not isinstance(model, str) or not isinstance(messages, list) or not messages:
            return None
        if self._written.get(id(messages)) is messages:
            return None  # a request this hook already compacted (the proxy's second hook)
        window = self.window_for(model, request.get("custom_llm_provider"))
        if window is None:
            # Fail fast: a request the hook cannot size would go out uncompacted, and an
            # agent would only learn it when the provider refuses an over-window request.
            raise MissingWindowError(model)
        try:
            conversation = self._conversation(
                self._key(model, messages, request), messages, window, request.get("tools")
            )
            converted = conversation.history.convert(messages)
            tools = request.get("tools")  # notes name the memory tools offered (see above)
            offered = memory_tool_names(tools) if isinstance(tools, list) else self._offered
            conversation.compactor.memory_tools = offered
            if self.new_context_tool is not None:
                hand_off_if_asked(conversation.compactor, converted)
        except (AdapterError, TypeError, ValueError) as exc:
            log.warning("litellm.unreadable_request", model=model, error=exc)
            return None
        return conversation, converted

    def _written_list(self, conversation: LiteLLMConversation, sent: Sequence[Any]) -> list[Any]:
        out = conversation.written.write(sent)
        with self._lock:
            self._written[id(out)] = out
            while len(self._written) > self.max_conversations:
                self._written.popitem(last=False)
        return out

    def compact_messages(self, model: str, messages: list[Any], **request: Any) -> list[Any]:
        """``messages`` for ``model``, compacted when the window is filling (else as given).

        ``request`` may carry the call's other arguments (``tools``, ``litellm_session_id``,
        ``metadata``) so the tool schemas are counted and the conversation is known.
        """
        prepared = self._prepare(model, messages, request)
        if prepared is None:
            return messages
        conversation, converted = prepared
        compactor = conversation.compactor
        sent = compactor.before_call(converted)
        return messages if not compactor.compacted else self._written_list(conversation, sent)

    async def acompact_messages(self, model: str, messages: list[Any], **request: Any) -> list[Any]:
        """Async twin of [`compact_messages`][] (awaits summarisers that do I/O)."""
        prepared = self._prepare(model, messages, request)
        if prepared is None:
            return messages
        conversation, converted = prepared
        compactor = conversation.compactor
        sent = await compactor.abefore_call(converted)
        return messages if not compactor.compacted else self._written_list(conversation, sent)

    async def _rewrite(self, data: Any) -> Any:
        if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
            return None
        messages = data["messages"]
        prepared = self._prepare(data.get("model"), messages, data)
        if prepared is None:
            return None
        conversation, converted = prepared
        compactor = conversation.compactor
        sent = await compactor.abefore_call(converted)
        call_id = data.get("litellm_call_id")
        if isinstance(call_id, str):
            self._remember(call_id, compactor)
        if not compactor.compacted:
            return None
        out = self._written_list(conversation, sent)
        # What is logged is what is sent: LiteLLM's logging object took the messages when the
        # call began, before this hook; its own update_messages is the way a pre-call hook
        # tells it (its success and failure callbacks, spend logs and integrations read it).
        logging_obj = data.get("litellm_logging_obj")
        update = getattr(logging_obj, "update_messages", None)
        if callable(update):
            with contextlib.suppress(Exception):
                update(out)
        return {**data, "messages": out}

    def _remember(self, call_id: str, compactor: Compactor) -> None:
        with self._lock:
            self._sent[call_id] = (compactor, compactor.stats.calls)
            while len(self._sent) > self.max_conversations:
                self._sent.popitem(last=False)

    def _observe(self, kwargs: Any, response: Any) -> None:
        if not self.observe_usage:
            return
        call_id = kwargs.get("litellm_call_id") if isinstance(kwargs, Mapping) else None
        with self._lock:
            entry = self._sent.pop(call_id, None) if isinstance(call_id, str) else None
        if entry is None:
            return
        compactor, calls = entry
        if compactor.stats.calls != calls:
            return  # another request of this conversation went out since: not its answer
        # The provider's own count of the request anchors the next estimate, so the window is
        # judged by the model's tokenizer, not ours (a count far below ours is set aside by the
        # compactor). A usage it cannot read anchors nothing.
        with contextlib.suppress(TypeError, ValueError):
            compactor.observe(getattr(response, "usage", None))

    # -- LiteLLM's hooks -------------------------------------------------------------------

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
        """A synchronous ``litellm.completion`` big enough to need compacting went out as it
        came (no hook may change it): say so, once per hook. A request that is small, or that
        the caller compacted with ``compact_messages``, needs nothing said."""
        params = kwargs.get("litellm_params") if isinstance(kwargs, Mapping) else None
        if self._warned_sync or not isinstance(params, Mapping) or not isinstance(model, str):
            return
        if params.get("acompletion") is not False or not isinstance(messages, list):
            return
        window = self.window_for(model, params.get("custom_llm_provider"))
        if window is not None and rough_tokens(messages) > self.options["compact_at"] * window:
            self._warned_sync = True
            log.warning("litellm.sync_not_compacted", model=model, window=window)
            warnings.warn(SYNC_MESSAGE, CompactionSyncWarning, stacklevel=2)

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """``litellm.acompletion`` and Router calls: the request with compacted messages."""
        return await self._rewrite(kwargs)  # type: ignore[no-any-return]

    async def async_post_call_success_deployment_hook(
        self, request_data: dict[str, Any], response: Any, call_type: Any
    ) -> None:
        """Reads the provider's input token count of a call the hook prepared (the response
        itself is left as it is). LiteLLM runs it before ``acompletion`` returns, so the count
        anchors the very next request of the conversation."""
        self._observe(request_data, response)

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        """The proxy: the request with compacted messages (as it came when nothing to do)."""
        rewritten = await self._rewrite(data)
        return data if rewritten is None else rewritten
