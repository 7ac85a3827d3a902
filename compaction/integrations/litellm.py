"""LiteLLM: compact every chat request to the model's window, in the SDK and in the proxy.

``pip install 'compaction[litellm]'``, then::

    litellm.callbacks = [CompactionHook(window=32_000)]

:class:`CompactionHook` is a LiteLLM ``CustomLogger`` with the two hooks LiteLLM gives a callback
to rewrite a request before it is sent:

- ``async_pre_call_deployment_hook``: LiteLLM runs it for every ``litellm.acompletion`` call
  (and every call through a ``Router``) just before the request goes to the deployment;
- ``async_pre_call_hook``: the proxy runs it for every request it receives (list the hook in
  the proxy config's ``litellm_settings.callbacks``).

LiteLLM's synchronous ``litellm.completion`` runs neither (its only callback before the request
is ``log_pre_api_call``, which sees the request after it is built and cannot change it), so
synchronous code calls :meth:`CompactionHook.compact_messages` on the messages it passes.

The window is the model's own, from LiteLLM's model map (``max_input_tokens``; models added
with ``litellm.register_model`` count), else ``window`` as given. Each conversation keeps its
own :class:`~compaction.trigger.Compactor`, so compaction has hysteresis (compact at
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
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from .._log import log
from ..adapters import AdapterError
from ..adapters.openai import from_openai, to_openai
from ..trigger import Compactor
from ._compactor import default_pipeline
from .recall_tools import MessagesRecall

__all__ = ["CompactionHook"]


def _model_window(model: str, provider: Any = None) -> int | None:
    import litellm

    for name, kwargs in ((model, {"custom_llm_provider": provider}), (model, {})):
        try:
            info = litellm.get_model_info(name, **{k: v for k, v in kwargs.items() if v})
        except Exception:  # unknown model: LiteLLM raises
            continue
        window = info.get("max_input_tokens") or info.get("max_tokens")
        if isinstance(window, int) and window > 0:
            return window
    return None


class CompactionHook(CustomLogger):  # type: ignore[misc]
    """A LiteLLM callback that compacts each chat request before it is sent.

    ``window`` is used for models LiteLLM has no window for; ``pipeline`` is the ladder
    (default: tool results, sliding window, extractive summary); ``compact_at``,
    ``compact_to``, ``counter``, ``min_saving`` and ``labels`` are the
    :class:`~compaction.trigger.Compactor`'s. ``recall=True`` gives :attr:`recall_tool`: put
    its ``spec`` in ``tools`` and answer the model's ``recall`` calls with its
    ``handle(tool_call, messages)``, which gives back any message a placeholder or note names.
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
        max_conversations: int = 256,
        recall: bool = False,
    ) -> None:
        super().__init__()
        # recall=True: a tool spec (``recall_tool.spec``) and its handler over your messages.
        self.recall_tool = MessagesRecall() if recall else None
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
        self.max_conversations = max_conversations
        # Checked now, so a bad option fails here and not silently on every call.
        Compactor(self.pipeline, window or 100_000, **self.options)
        self._compactors: OrderedDict[str, Compactor] = OrderedDict()
        self._windows: dict[str, int | None] = {}
        # Calls sent and not yet answered: litellm_call_id -> (compactor, its call count then).
        self._sent: OrderedDict[str, tuple[Compactor, int]] = OrderedDict()
        self._lock = threading.Lock()

    # -- the work --------------------------------------------------------------------------

    def window_for(self, model: str, provider: Any = None) -> int | None:
        """The window used for ``model``: LiteLLM's, else the one given, else None."""
        key = f"{provider}/{model}"
        if key not in self._windows:
            self._windows[key] = _model_window(model, provider) or self.window
        return self._windows[key]

    def _key(self, model: str, messages: Sequence[Any], request: Mapping[str, Any]) -> str:
        metadata = request.get("metadata") or request.get("litellm_metadata") or {}
        session = request.get("litellm_session_id") or (
            metadata.get("session_id") if isinstance(metadata, Mapping) else None
        )
        if session:
            return f"session:{model}:{session}"
        # The system prompt and the opening request identify a conversation well enough; a
        # wrong match costs nothing but a recount (the compactor restarts on a list that does
        # not extend what it saw).
        head = json.dumps(list(messages[:2]), sort_keys=True, default=str)
        return f"head:{model}:" + hashlib.sha256(head.encode()).hexdigest()

    def _compactor(self, key: str, window: int, tools: Any) -> Compactor:
        with self._lock:
            compactor = self._compactors.get(key)
            if compactor is None or compactor.window != window:
                compactor = Compactor(
                    self.pipeline,
                    window,
                    tools=tools if isinstance(tools, list) else None,
                    labels={**self.labels, "conversation_id": key},
                    **self.options,
                )
                self._compactors[key] = compactor
            self._compactors.move_to_end(key)
            while len(self._compactors) > self.max_conversations:
                self._compactors.popitem(last=False)
            return compactor

    def _prepare(
        self, model: Any, messages: Any, request: Mapping[str, Any]
    ) -> tuple[Compactor, Any] | None:
        if not isinstance(model, str) or not isinstance(messages, list) or not messages:
            return None
        window = self.window_for(model, request.get("custom_llm_provider"))
        if window is None:
            log.warning("litellm.no_window", model=model)
            return None
        try:
            converted = from_openai(messages)
            compactor = self._compactor(
                self._key(model, messages, request), window, request.get("tools")
            )
        except (AdapterError, TypeError, ValueError) as exc:
            log.warning("litellm.unreadable_request", model=model, error=str(exc))
            return None
        return compactor, converted

    def compact_messages(self, model: str, messages: list[Any], **request: Any) -> list[Any]:
        """``messages`` for ``model``, compacted when the window is filling (else as given).

        ``request`` may carry the call's other arguments (``tools``, ``litellm_session_id``,
        ``metadata``) so the tool schemas are counted and the conversation is known.
        """
        prepared = self._prepare(model, messages, request)
        if prepared is None:
            return messages
        compactor, converted = prepared
        sent = compactor.before_call(converted)
        return messages if not compactor.compacted else to_openai(sent)

    async def acompact_messages(self, model: str, messages: list[Any], **request: Any) -> list[Any]:
        """Async twin of :meth:`compact_messages` (awaits summarisers that do I/O)."""
        prepared = self._prepare(model, messages, request)
        if prepared is None:
            return messages
        compactor, converted = prepared
        sent = await compactor.abefore_call(converted)
        return messages if not compactor.compacted else to_openai(sent)

    async def _rewrite(self, data: Any) -> Any:
        if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
            return None
        messages = data["messages"]
        prepared = self._prepare(data.get("model"), messages, data)
        if prepared is None:
            return None
        compactor, converted = prepared
        sent = await compactor.abefore_call(converted)
        call_id = data.get("litellm_call_id")
        if isinstance(call_id, str):
            self._remember(call_id, compactor)
        if not compactor.compacted:
            return None
        return {**data, "messages": to_openai(sent)}

    def _remember(self, call_id: str, compactor: Compactor) -> None:
        with self._lock:
            self._sent[call_id] = (compactor, compactor.stats.calls)
            while len(self._sent) > self.max_conversations:
                self._sent.popitem(last=False)

    def _observe(self, kwargs: Any, response: Any) -> None:
        call_id = kwargs.get("litellm_call_id") if isinstance(kwargs, Mapping) else None
        with self._lock:
            entry = self._sent.pop(call_id, None) if isinstance(call_id, str) else None
        if entry is None:
            return
        compactor, calls = entry
        if compactor.stats.calls != calls:
            return  # another request of this conversation went out since: not its answer
        # The provider's own count of the request anchors the next estimate, so the window is
        # judged by the model's tokenizer, not ours. A usage it cannot read anchors nothing.
        with contextlib.suppress(TypeError, ValueError):
            compactor.observe(getattr(response, "usage", None))

    # -- LiteLLM's hooks -------------------------------------------------------------------

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
