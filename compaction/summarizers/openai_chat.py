"""A summariser for any OpenAI-compatible chat-completions endpoint.

OpenAI itself, vLLM, Ollama, the llama.cpp server, LiteLLM: they all speak the same wire
format, so one client through the official ``openai`` package serves them all. The package is
an optional extra (``pip install 'compaction[openai]'``), imported only when this class is
built, so the core never depends on it.

The model is sent the standard instructions as the system message and the rendered transcript
(never raw messages: no half tool pair can reach the provider) as the user message, fenced so
it reads as data.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["OpenAIChatSummarizer"]

_INSTALL = "OpenAIChatSummarizer needs the openai package: pip install 'compaction[openai]'"


def _answer(response: Any) -> str:
    # An endpoint that answers no choice, or a choice with no text (a refusal, a tool call,
    # a server that cut off), gives "": the Summary strategy treats that as a failed round.
    choices = getattr(response, "choices", None) or []
    if not choices:
        return ""
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


class OpenAIChatSummarizer:
    """Summarises through ``POST {base_url}/chat/completions``.

    - ``model``: the model name; default ``$COMPACTION_SUMMARY_MODEL``, else ``$OPENAI_MODEL``.
    - ``base_url``: default ``$OPENAI_BASE_URL``, else OpenAI's own API.
    - ``api_key``: default ``$OPENAI_API_KEY``; a local server (``base_url`` given) needs none.
    - ``timeout``: seconds per request; ``max_tokens``: the longest summary asked for;
      ``temperature``: 0 keeps summaries as repeatable as the endpoint allows.
    - ``max_retries``: the client's own retries, 0 by default: a failed call already fails
      the round safely, and the Summary's breaker, not hidden retries, decides what to pay.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        max_retries: int = 0,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - the dev extra installs it
            raise ImportError(_INSTALL) from exc
        model = (
            model or os.environ.get("COMPACTION_SUMMARY_MODEL") or os.environ.get("OPENAI_MODEL")
        )
        if not model:
            raise ValueError(
                "OpenAIChatSummarizer needs a model: pass model= or set "
                "COMPACTION_SUMMARY_MODEL (or OPENAI_MODEL)"
            )
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if api_key is None:
            if base_url is None:
                raise ValueError(
                    "OpenAIChatSummarizer needs an API key for api.openai.com: pass api_key= "
                    "or set OPENAI_API_KEY (or point base_url= at a local server)"
                )
            api_key = "not-needed"  # local servers ignore it; the client insists on one
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"OpenAIChatSummarizer timeout must be positive, got {timeout!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(
                f"OpenAIChatSummarizer max_tokens must be a positive int, got {max_tokens!r}"
            )
        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._options: dict[str, Any] = {
            "base_url": base_url,
            "api_key": api_key,
            "timeout": self.timeout,
            "max_retries": max_retries,
        }
        self._openai = openai
        self._client: Any = None
        self._async_client: Any = None

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIChatSummarizer(model={self.model!r}{where})"

    def request(self, transcript: str, instructions: str) -> dict[str, Any]:
        """The chat-completions request body for one summary."""
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": instructions},
                {
                    "role": "user",
                    "content": f"<transcript>\n{transcript}\n</transcript>\n\n"
                    "Summarise the transcript above as instructed.",
                },
            ],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    def __call__(self, transcript: str, instructions: str) -> str:
        if self._client is None:
            self._client = self._openai.OpenAI(**self._options)
        response = self._client.chat.completions.create(**self.request(transcript, instructions))
        return _answer(response)

    async def acall(self, transcript: str, instructions: str) -> str:
        """The same call without blocking the event loop (preferred by ``acompact``)."""
        if self._async_client is None:
            self._async_client = self._openai.AsyncOpenAI(**self._options)
        response = await self._async_client.chat.completions.create(
            **self.request(transcript, instructions)
        )
        return _answer(response)

    def close(self) -> None:
        """Close the sync HTTP client (the async one is closed by :meth:`aclose`)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        if self._async_client is not None:
            await self._async_client.close()
            self._async_client = None
        self.close()
