"""The framework's own model as the summariser: LangChain, pydantic-ai, the Agents SDK, LiteLLM.

An agent built on a framework already has a configured model (keys, base URL, retries,
tracing). Summarising through that same object needs no second client and no second set of
credentials::

    Summary(model_summarizer(chat_model))          # a LangChain chat model
    Summary(model_summarizer(pydantic_ai_model))   # a pydantic-ai Model
    Summary(model_summarizer(agents_model))        # an Agents SDK Model
    Summary(model_summarizer("openai/gpt-5-mini")) # a LiteLLM model name

Each is shown what
[`OpenAIChatSummarizer`][compaction.summarizers.openai_chat.OpenAIChatSummarizer] is shown (the
instructions as the system message, the rendered transcript fenced as data as the user message)
and keeps the same limits:

- ``timeout``: a deadline for the whole call (the work runs in a daemon thread, or a task
  that is cancelled and not waited for), so a model that hangs or trickles cannot hold the
  compaction; a late answer is dropped.
- ``max_chars``: the longest answer used. The framework has already read the answer when it
  hands it over, so this bounds what compaction does with it (no tokenising of a runaway
  answer), and ``max_tokens`` is asked of the model so it is not written in the first place.
- the breaker is the [`Summary`][compaction.strategies.summary.Summary] strategy's, as for every
  summariser: a failed call fails its round, and ``max_failures`` failed runs stop the calls.

``calls``, ``input_tokens`` and ``output_tokens`` add up what the model reported (when it
reports usage); the Summary strategy reports every call in ``events.summarized`` as for the
others. Each framework is imported only when its summariser is built.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Final

from .base import SummarizerError
from .base import user_prompt as prompt
from .deadline import await_with_deadline, call_with_deadline, check_timeout

__all__ = [
    "AgentsSummarizer",
    "LangChainSummarizer",
    "LiteLLMSummarizer",
    "PydanticAISummarizer",
    "model_summarizer",
]

#: The longest answer used by default: a 1024-token summary is about 4-6 kB of text.
DEFAULT_MAX_CHARS: Final = 64_000


def _positive_int(owner: str, option: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner} {option} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{owner} {option} must be >= 1, got {value}")
    return value


def _int_or_zero(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class _ModelSummarizer:
    """The shared half: options, the deadline, the size cap and the usage tally."""

    kind: str = "model"

    def __init__(self, model: Any, *, timeout: float, max_chars: int, max_tokens: int) -> None:
        owner = type(self).__name__
        self.model = model
        self.timeout = check_timeout(f"{owner} timeout", timeout)
        self.max_chars = _positive_int(owner, "max_chars", max_chars)
        self.max_tokens = _positive_int(owner, "max_tokens", max_tokens)
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        model = self.model
        label = model if isinstance(model, str) else getattr(model, "model_name", None)
        if not isinstance(label, str) or not label:
            label = getattr(model, "model", None)
        return f"{self.kind}:{label if isinstance(label, str) and label else type(model).__name__}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, timeout={self.timeout})"

    # -- what each framework answers ----------------------------------------------------------

    def _ask(self, transcript: str, instructions: str) -> Any:
        """Blocking call: (text, input tokens, output tokens)."""
        return asyncio.run(self._aask(transcript, instructions))

    async def _aask(self, transcript: str, instructions: str) -> Any:
        raise NotImplementedError

    # -- the limits ---------------------------------------------------------------------------

    def _checked(self, answer: Any) -> str:
        text, used_in, used_out = answer
        with self._lock:
            self.calls += 1
            self.input_tokens += _int_or_zero(used_in)
            self.output_tokens += _int_or_zero(used_out)
        if not isinstance(text, str):
            raise SummarizerError(f"{self.name} answered {type(text).__name__}, not text")
        if len(text) > self.max_chars:
            raise SummarizerError(
                f"the summariser's answer is larger than max_chars={self.max_chars} "
                f"({len(text)} characters); it was not used"
            )
        return text

    def __call__(self, transcript: str, instructions: str) -> str:
        what = f"summariser {self.name}"
        answer = call_with_deadline(self._ask, (transcript, instructions), self.timeout, what)
        return self._checked(answer)

    async def acall(self, transcript: str, instructions: str) -> str:
        """The same call on the event loop (preferred by ``acompact``)."""
        what = f"summariser {self.name}"
        work = self._aask(transcript, instructions)
        return self._checked(await await_with_deadline(work, self.timeout, what))


class LangChainSummarizer(_ModelSummarizer):
    """Summarises through a LangChain chat model (``invoke`` / ``ainvoke``)."""

    kind = "langchain"

    def __init__(
        self,
        model: Any,
        *,
        timeout: float = 60.0,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_tokens: int = 1024,
    ) -> None:
        from langchain_core.language_models import BaseChatModel

        if not isinstance(model, BaseChatModel):
            raise TypeError(f"LangChainSummarizer needs a chat model, got {type(model).__name__}")
        super().__init__(model, timeout=timeout, max_chars=max_chars, max_tokens=max_tokens)

    def _messages(self, transcript: str, instructions: str) -> list[Any]:
        from langchain_core.messages import HumanMessage, SystemMessage

        return [SystemMessage(instructions), HumanMessage(prompt(transcript))]

    @staticmethod
    def _read(message: Any) -> tuple[Any, int, int]:
        usage = getattr(message, "usage_metadata", None) or {}
        text = getattr(message, "text", None)
        return text, usage.get("input_tokens", 0), usage.get("output_tokens", 0)

    def _ask(self, transcript: str, instructions: str) -> Any:
        return self._read(self.model.invoke(self._messages(transcript, instructions)))

    async def _aask(self, transcript: str, instructions: str) -> Any:
        return self._read(await self.model.ainvoke(self._messages(transcript, instructions)))


class PydanticAISummarizer(_ModelSummarizer):
    """Summarises through a pydantic-ai model (a ``Model`` or a name such as
    ``"openai:gpt-5-mini"``), with ``pydantic_ai.direct.model_request``."""

    kind = "pydantic-ai"

    def __init__(
        self,
        model: Any,
        *,
        timeout: float = 60.0,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_tokens: int = 1024,
    ) -> None:
        import pydantic_ai.direct  # noqa: F401 - fail now, not at the first call

        super().__init__(model, timeout=timeout, max_chars=max_chars, max_tokens=max_tokens)

    async def _aask(self, transcript: str, instructions: str) -> Any:
        from pydantic_ai.direct import model_request
        from pydantic_ai.messages import ModelRequest, SystemPromptPart, TextPart, UserPromptPart

        request = ModelRequest([SystemPromptPart(instructions), UserPromptPart(prompt(transcript))])
        response = await model_request(
            self.model, [request], model_settings={"max_tokens": self.max_tokens}
        )
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        usage = response.usage
        return text, usage.input_tokens, usage.output_tokens


class AgentsSummarizer(_ModelSummarizer):
    """Summarises through an OpenAI Agents SDK ``Model`` (``get_response``, no tools)."""

    kind = "agents"

    def __init__(
        self,
        model: Any,
        *,
        timeout: float = 60.0,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_tokens: int = 1024,
    ) -> None:
        from agents.models.interface import Model

        if not isinstance(model, Model):
            raise TypeError(
                f"AgentsSummarizer needs an Agents SDK Model, got {type(model).__name__}"
            )
        super().__init__(model, timeout=timeout, max_chars=max_chars, max_tokens=max_tokens)

    async def _aask(self, transcript: str, instructions: str) -> Any:
        from agents import ModelSettings
        from agents.models.interface import ModelTracing

        response = await self.model.get_response(
            instructions,
            prompt(transcript),
            ModelSettings(max_tokens=self.max_tokens, temperature=0.0),
            [],
            None,
            [],
            ModelTracing.DISABLED,
            previous_response_id=None,
            conversation_id=None,
            prompt=None,
        )
        text = "".join(
            getattr(part, "text", "")
            for item in response.output
            if getattr(item, "type", None) == "message"
            for part in getattr(item, "content", ())
            if getattr(part, "type", None) == "output_text"
        )
        usage = response.usage
        return text, usage.input_tokens, usage.output_tokens


class LiteLLMSummarizer(_ModelSummarizer):
    """Summarises through ``litellm.completion`` / ``acompletion`` with a LiteLLM model name;
    ``options`` go to every call (``api_base``, ``api_key``, ...)."""

    kind = "litellm"

    def __init__(
        self,
        model: str,
        *,
        timeout: float = 60.0,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_tokens: int = 1024,
        **options: Any,
    ) -> None:
        import litellm  # noqa: F401 - fail now, not at the first call

        if not isinstance(model, str) or not model:
            raise TypeError(f"LiteLLMSummarizer needs a model name, got {model!r}")
        super().__init__(model, timeout=timeout, max_chars=max_chars, max_tokens=max_tokens)
        # The deadline is ours; LiteLLM's own retries would spend it silently.
        self.options = {"num_retries": 0, **options}

    def _request(self, transcript: str, instructions: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": instructions},
                {"role": "user", "content": prompt(transcript)},
            ],
            "max_tokens": self.max_tokens,
            "temperature": 0.0,
            # LiteLLM's own timeout lets a call left behind at our deadline end soon after;
            # it is set past the deadline so the deadline, not LiteLLM, decides the failure.
            "timeout": self.timeout + 1.0,
            **self.options,
        }

    @staticmethod
    def _read(response: Any) -> tuple[Any, int, int]:
        choices = getattr(response, "choices", None) or [None]
        message = getattr(choices[0], "message", None)
        usage = getattr(response, "usage", None)
        return (
            getattr(message, "content", None) or "",
            getattr(usage, "prompt_tokens", 0),
            getattr(usage, "completion_tokens", 0),
        )

    def _ask(self, transcript: str, instructions: str) -> Any:
        import litellm

        return self._read(litellm.completion(**self._request(transcript, instructions)))

    async def _aask(self, transcript: str, instructions: str) -> Any:
        import litellm

        return self._read(await litellm.acompletion(**self._request(transcript, instructions)))


def _from(model: Any, package: str) -> bool:
    # Which framework a model belongs to, by where its classes live: no framework is imported
    # to ask (an app using one does not have the others installed).
    return any((cls.__module__ or "").split(".")[0] == package for cls in type(model).__mro__[:-1])


def model_summarizer(model: Any, **options: Any) -> _ModelSummarizer:
    """A summariser for the framework's own ``model``, in one line.

    A ``str`` is a LiteLLM model name; otherwise a LangChain chat model, a pydantic-ai
    ``Model`` or an Agents SDK ``Model``, told apart by their classes. ``options`` are the
    summariser's (``timeout``, ``max_chars``, ``max_tokens``; LiteLLM also takes call options).
    """
    if isinstance(model, str):
        return LiteLLMSummarizer(model, **options)
    if _from(model, "langchain_core"):
        return LangChainSummarizer(model, **options)
    if _from(model, "pydantic_ai"):
        return PydanticAISummarizer(model, **options)
    if _from(model, "agents"):
        return AgentsSummarizer(model, **options)
    raise TypeError(
        "model_summarizer needs a LangChain chat model, a pydantic-ai model, an Agents SDK "
        f"model or a LiteLLM model name, got {type(model).__name__}"
    )
