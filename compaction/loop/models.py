"""Model callables for [`TurnLoop`][compaction.loop.turn.TurnLoop] over an OpenAI-compatible server.

Needs the ``openai`` extra (``pip install 'compaction-ladder[openai]'``), imported only when a model
is built. Any server speaking the chat-completions wire format works (OpenAI, vLLM, llama.cpp,
Ollama, LiteLLM ...): pass its ``base_url``.

    model = OpenAIChatModel("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key="-")
    loop = TurnLoop(model, tools=[...], window=128_000)

``deadline=`` bounds a whole call in seconds (the client's own ``timeout`` is per read, which a
server trickling a byte at a time never trips); a late reply is dropped with TimeoutError.

The reply is a [`Message`][compaction.messages.Message] read with the OpenAI adapter; the usage
the server reported rides in ``meta["usage"]``, where the loop finds it to anchor the
compactor's next estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..adapters.openai import message_from_openai, to_openai
from ..messages import Message
from ..summarizers.deadline import await_with_deadline, call_with_deadline, check_timeout

__all__ = ["AsyncOpenAIChatModel", "OpenAIChatModel"]


def _import_openai() -> Any:
    try:
        import openai
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "OpenAIChatModel needs the 'openai' package: pip install 'compaction-ladder[openai]'"
        ) from None
    return openai


def _request(
    model: str,
    defaults: Mapping[str, Any],
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, **defaults, **options}
    body["messages"] = to_openai(messages)
    if tools:
        body["tools"] = list(tools)
    return body


def _deadline(owner: str, value: Any) -> float | None:
    return None if value is None else check_timeout(f"{owner} deadline", value)


def _reply(completion: Any) -> Message:
    if not getattr(completion, "choices", None):
        raise ValueError("the server answered a completion with no choices")
    raw = completion.choices[0].message
    data = raw.model_dump(exclude_none=True) if hasattr(raw, "model_dump") else dict(raw)
    data.setdefault("role", "assistant")
    message = message_from_openai(data)
    usage = getattr(completion, "usage", None)
    if usage is not None:
        dumped = usage.model_dump(exclude_none=True) if hasattr(usage, "model_dump") else usage
        message = message.with_meta(usage=dict(dumped))
    return message


class OpenAIChatModel:
    """A sync chat-completions model: ``model(messages, tools=None, **options) -> Message``.

    ``model`` is the model name (an option ``model=`` overrides it per call); ``client`` a
    ready ``openai.OpenAI`` client, else one is built from ``base_url``/``api_key`` and
    ``client_options`` (timeouts, retries); ``deadline`` the seconds a whole call may take
    (None: no deadline); ``**defaults`` are request fields sent on every call
    (``temperature``, ``max_tokens`` ...).
    """

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        client_options: Mapping[str, Any] | None = None,
        deadline: float | None = None,
        **defaults: Any,
    ) -> None:
        self.deadline = _deadline(type(self).__name__, deadline)
        if client is None:
            openai = _import_openai()
            client = openai.OpenAI(base_url=base_url, api_key=api_key, **dict(client_options or {}))
        self.client = client
        self.model = model
        self.defaults = defaults

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> Message:
        model = options.pop("model", self.model)
        body = _request(model, self.defaults, messages, tools, options)
        if self.deadline is None:
            return _reply(self.client.chat.completions.create(**body))

        def ask() -> Message:
            return _reply(self.client.chat.completions.create(**body))

        return call_with_deadline(ask, (), self.deadline, f"model {model}")

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model!r})"


class AsyncOpenAIChatModel:
    """The async twin of [`OpenAIChatModel`][] (``openai.AsyncOpenAI``), for
    [`arun`][compaction.loop.turn.TurnLoop.arun]."""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        client_options: Mapping[str, Any] | None = None,
        deadline: float | None = None,
        **defaults: Any,
    ) -> None:
        self.deadline = _deadline(type(self).__name__, deadline)
        if client is None:
            openai = _import_openai()
            client = openai.AsyncOpenAI(
                base_url=base_url, api_key=api_key, **dict(client_options or {})
            )
        self.client = client
        self.model = model
        self.defaults = defaults

    async def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> Message:
        model = options.pop("model", self.model)
        body = _request(model, self.defaults, messages, tools, options)
        if self.deadline is None:
            return _reply(await self.client.chat.completions.create(**body))
        completion = await await_with_deadline(
            self.client.chat.completions.create(**body), self.deadline, f"model {model}"
        )
        return _reply(completion)

    def __repr__(self) -> str:
        return f"AsyncOpenAIChatModel({self.model!r})"
