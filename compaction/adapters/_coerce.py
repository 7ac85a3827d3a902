"""Provider SDK objects as the plain dicts the adapters read.

The OpenAI and Anthropic SDKs hand back pydantic models (``ChatCompletion``,
``ChatCompletionMessage``, Anthropic ``Message`` and its content blocks). Users should not have to
convert them by hand, and ``model_dump()`` is the wrong way to do it: it writes every unset
optional field as ``null`` (``refusal``, ``audio``, ``function_call``, ``citations``...), and
those nulls would then ride along and go back out in the next request, where stricter
OpenAI-compatible servers reject fields they do not know. So an object is dumped without its
null fields, and the SDKs are never imported: anything with ``model_dump`` (any pydantic v2
model) is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["is_model", "plain", "plain_blocks"]


def is_model(value: Any) -> bool:
    """True for a pydantic-style model (an SDK object), not a plain mapping."""
    return not isinstance(value, Mapping) and callable(getattr(value, "model_dump", None))


def plain(value: Any) -> Any:
    """``value`` as plain JSON data when it is an SDK model, else ``value`` itself.

    Null fields are left out (see the module docstring); JSON mode turns nested models,
    enums and bytes into what the provider's wire format holds.
    """
    if is_model(value):
        return value.model_dump(mode="json", exclude_none=True)
    return value


def plain_blocks(content: Any) -> Any:
    """A content list whose items may be SDK block objects, as a list of dicts."""
    if isinstance(content, list) and any(is_model(b) for b in content):
        return [plain(b) for b in content]
    return content


def first_choice(value: Any) -> Any:
    """The message of a chat completion (object or dict); anything else as it is."""
    choices = (
        value.get("choices") if isinstance(value, Mapping) else getattr(value, "choices", None)
    )
    if isinstance(choices, list) and choices and not isinstance(value, list):
        choice = choices[0]
        message = (
            choice.get("message")
            if isinstance(choice, Mapping)
            else getattr(choice, "message", None)
        )
        if message is not None:
            return message
    return value
