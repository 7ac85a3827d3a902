"""A summariser for any OpenAI-compatible chat-completions endpoint.

OpenAI itself, vLLM, Ollama, the llama.cpp server, LiteLLM: they all speak the same wire
format, so one client through the official ``openai`` package serves them all. The package is
an optional extra (``pip install 'compaction-ladder[openai]'``), imported only when this class is
built, so the core never depends on it.

The model is sent the standard instructions as the system message and the rendered transcript
(never raw messages: no half tool pair can reach the provider) as the user message, fenced so
it reads as data.

The answer is read as raw bytes, not through the client's parser: ``timeout`` is a deadline for
the whole call (the client's own timeout is per read, which a server trickling a byte at a time
never trips), and at most ``max_bytes`` are read before anything is parsed.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from .base import SummarizerError, user_prompt
from .deadline import await_with_deadline, call_with_deadline, check_timeout

__all__ = ["DEFAULT_MAX_BYTES", "OpenAIChatSummarizer"]

_INSTALL = "OpenAIChatSummarizer needs the openai package: pip install 'compaction-ladder[openai]'"

#: The largest answer read by default: a summary of ``max_tokens`` tokens is a few kilobytes
#: of JSON; a server that sends more is broken or hostile, and is not read on (a 50 MB answer
#: once took 76 s and 2.5 GB to parse).
DEFAULT_MAX_BYTES = 1 << 20

_NO_KEY = (
    "OpenAIChatSummarizer needs an API key for api.openai.com: set OPENAI_API_KEY or pass "
    "api_key= (or point base_url= at a local server, which needs none)"
)


def _answer(body: Any) -> str:
    # An endpoint that answers no choice, or a choice with no text (a refusal, a tool call,
    # a server that cut off), gives "": the Summary strategy treats that as a failed round.
    # ``body`` is the decoded JSON of the answer, whatever shape the server gave it.
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def _optional_str(option: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"OpenAIChatSummarizer {option} must be a str, got {type(value).__name__}")


def _int_at_least(option: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"OpenAIChatSummarizer {option} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"OpenAIChatSummarizer {option} must be >= {minimum}, got {value}")
    return value


class _Reader:
    """Reads one answer's bytes, refusing it past ``max_bytes`` or past the deadline."""

    def __init__(self, max_bytes: int, deadline: float, timeout: float) -> None:
        self.max_bytes, self.deadline, self.timeout = max_bytes, deadline, timeout
        self.data = bytearray()

    def start(self, headers: Any) -> None:
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            self._too_big(int(declared))

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.max_bytes:
            self._too_big(None)
        if time.monotonic() > self.deadline:
            # Also ends a worker the caller stopped waiting for, at its next byte.
            raise TimeoutError(f"summariser did not answer within {self.timeout}s")

    def _too_big(self, declared: int | None) -> None:
        size = f"{declared} bytes" if declared is not None else "more than that"
        raise SummarizerError(
            f"the summariser's answer is larger than max_bytes={self.max_bytes} ({size}); "
            "it was not read on"
        )

    def answer(self) -> str:
        try:
            body = json.loads(bytes(self.data))
        except (ValueError, RecursionError) as exc:  # RecursionError: nested past the stack
            raise SummarizerError(f"the summariser's answer is not JSON: {exc}") from None
        return _answer(body)


class OpenAIChatSummarizer:
    """Summarises through ``POST {base_url}/chat/completions``.

    - ``model``: the model name; default ``$COMPACTION_SUMMARY_MODEL``, else ``$OPENAI_MODEL``.
    - ``base_url``: default ``$OPENAI_BASE_URL``, else OpenAI's own API.
    - ``api_key``: default ``$OPENAI_API_KEY``; a local server (``base_url`` given) needs none.
      OpenAI's API without a key fails at the first call (a failed round saying what to set),
      not when the summariser is built.
    - ``timeout``: seconds the whole call may take, from sending the request to the last
      byte of the answer (a deadline, not a per-read limit); a late answer is dropped.
    - ``max_bytes``: the largest answer read; a bigger one fails the round unread.
    - ``max_tokens``: the longest summary asked for; ``temperature``: 0 keeps summaries as
      repeatable as the endpoint allows.
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
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - the dev extra installs it
            raise ImportError(_INSTALL) from exc
        for option, value in (("model", model), ("base_url", base_url), ("api_key", api_key)):
            _optional_str(option, value)
        model = (
            model or os.environ.get("COMPACTION_SUMMARY_MODEL") or os.environ.get("OPENAI_MODEL")
        )
        if not model:
            raise ValueError(
                "OpenAIChatSummarizer needs a model: pass model= or set "
                "COMPACTION_SUMMARY_MODEL (or OPENAI_MODEL)"
            )
        self.timeout = check_timeout("OpenAIChatSummarizer timeout", timeout)
        self.max_tokens = _int_at_least("max_tokens", max_tokens, 1)
        self.max_retries = _int_at_least("max_retries", max_retries, 0)
        self.max_bytes = _int_at_least("max_bytes", max_bytes, 1)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
            raise TypeError(
                f"OpenAIChatSummarizer temperature must be a number, got "
                f"{type(temperature).__name__}"
            )
        if not (math.isfinite(temperature) and temperature >= 0):
            raise ValueError(
                f"OpenAIChatSummarizer temperature must be a finite number >= 0, "
                f"got {temperature!r}"
            )
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.temperature = temperature
        self._api_key = api_key
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
                {"role": "user", "content": user_prompt(transcript)},
            ],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    def _client_options(self) -> dict[str, Any]:
        # Read at the first call, not at construction: building a Summary must not need a
        # key (the README's own example builds one), and a key set since then is used.
        api_key = self._api_key or os.environ.get("OPENAI_API_KEY") or None
        if api_key is None:
            if self.base_url is None:
                raise SummarizerError(_NO_KEY)
            api_key = "not-needed"  # local servers ignore it; the client insists on one
        return {
            "base_url": self.base_url,
            "api_key": api_key,
            # Per read and per connect; the deadline over the whole call is ours.
            "timeout": self.timeout,
            "max_retries": self.max_retries,
        }

    def __call__(self, transcript: str, instructions: str) -> str:
        deadline = time.monotonic() + self.timeout
        if self._client is None:
            self._client = self._openai.OpenAI(**self._client_options())
        body = self.request(transcript, instructions)
        return call_with_deadline(self._fetch, (body, deadline), self.timeout, "summariser")

    def _fetch(self, body: dict[str, Any], deadline: float) -> str:
        reader = _Reader(self.max_bytes, deadline, self.timeout)
        with self._client.chat.completions.with_streaming_response.create(**body) as response:
            reader.start(response.headers)
            chunks: Iterator[bytes] = response.iter_bytes()
            for chunk in chunks:
                reader.add(chunk)
        return reader.answer()

    async def acall(self, transcript: str, instructions: str) -> str:
        """The same call without blocking the event loop (preferred by ``acompact``)."""
        deadline = time.monotonic() + self.timeout
        if self._async_client is None:
            self._async_client = self._openai.AsyncOpenAI(**self._client_options())
        body = self.request(transcript, instructions)
        return await await_with_deadline(self._afetch(body, deadline), self.timeout, "summariser")

    async def _afetch(self, body: dict[str, Any], deadline: float) -> str:
        reader = _Reader(self.max_bytes, deadline, self.timeout)
        create = self._async_client.chat.completions.with_streaming_response.create
        async with create(**body) as response:
            reader.start(response.headers)
            chunks: AsyncIterator[bytes] = response.iter_bytes()
            async for chunk in chunks:
                reader.add(chunk)
        return reader.answer()

    def close(self) -> None:
        """Close the sync HTTP client (the async one is closed by ``aclose``)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        if self._async_client is not None:
            await self._async_client.close()
            self._async_client = None
        self.close()
