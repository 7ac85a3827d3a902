"""The value types everything else passes around: :class:`Message` and :class:`ToolCall`.

Both are frozen attrs classes. A strategy never edits a message; it builds a new one with
:meth:`Message.replace`, which also forgets any known token count, so a rewritten message is
always counted afresh.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import attrs

__all__ = [
    "ROLES",
    "Message",
    "Role",
    "ToolCall",
    "assistant",
    "system",
    "tool",
    "user",
]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: Final[frozenset[str]] = frozenset({"system", "user", "assistant", "tool"})


def _arguments(value: Any) -> str:
    # Providers disagree on the shape of arguments: OpenAI sends JSON text, Anthropic a dict.
    # We keep the text form, since that is what is counted and what OpenAI gets back verbatim.
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False)
    raise TypeError(
        f"ToolCall.arguments must be JSON text or a mapping, got {type(value).__name__}"
    )


def _check_str(field: str, value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"ToolCall.{field} must be a str, got {type(value).__name__}")


@attrs.frozen(slots=True, cache_hash=True)
class ToolCall:
    """One function call an assistant message asks for.

    ``arguments`` is the JSON text of the arguments (a mapping is accepted and dumped).
    """

    id: str
    name: str
    arguments: str = attrs.field(default="{}", converter=_arguments)

    def __attrs_post_init__(self) -> None:
        _check_str("id", self.id)
        _check_str("name", self.name)
        if not self.id:
            raise ValueError("ToolCall.id must not be empty: results are matched to calls by it")


def _content(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise TypeError(
        "Message.content must be text (str); got "
        f"{type(value).__name__}. Keep non-text parts (images, provider blocks) in "
        "`meta`, as the adapters in compaction.adapters do."
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _tool_calls(value: Any) -> tuple[ToolCall, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes | Mapping | ToolCall) or not isinstance(value, Iterable):
        raise TypeError(
            "Message.tool_calls must be a list of ToolCall, "
            f"got {type(value).__name__} {_short(value)}"
        )
    calls = tuple(value)
    for i, call in enumerate(calls):
        if not isinstance(call, ToolCall):
            raise TypeError(
                f"Message.tool_calls[{i}] must be a ToolCall, got {type(call).__name__}"
            )
    return calls


def _meta(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"Message.meta must be a mapping, got {type(value).__name__}")
    # A copy, so the caller's dict can change without changing a frozen message.
    return dict(value)


@attrs.frozen(slots=True, cache_hash=True)
class Message:
    """One chat message, provider-neutral.

    - ``role``: ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``.
    - ``content``: the text. Non-text parts live in ``meta`` (adapters put them there).
    - ``tool_calls``: on assistant messages, the calls it asks for.
    - ``tool_call_id``: on tool messages, the call this result answers (required).
    - ``name``: the tool's name on tool messages, or a participant name.
    - ``meta``: anything else: provider fields we do not model, provenance written by
      strategies (``meta["compaction"]``), a caller's own fields (``score``, ``depth``...).
      Treat it as read-only; it is not part of the hash.
    - ``tokens``: a known token count (for example from a retrieval system), honoured by
      every counter instead of encoding the text.
    - ``id``: a stable identifier, when the source has one (sessions assign one); it is what
      provenance records and what ``recall`` looks up.
    """

    role: str
    content: str = attrs.field(default="", converter=_content)
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tool_calls)
    tool_call_id: str | None = None
    name: str | None = None
    meta: Mapping[str, Any] = attrs.field(factory=dict, converter=_meta, hash=False)
    tokens: int | None = None
    id: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.role not in ROLES:
            hint = " (map 'developer' to 'system' when reading)" if self.role == "developer" else ""
            raise ValueError(
                f"Message.role must be one of {sorted(ROLES)}, got {self.role!r}{hint}"
            )
        if self.tool_call_id is not None and not isinstance(self.tool_call_id, str):
            raise TypeError(
                "Message.tool_call_id must be a str (the id of the call a tool result "
                f"answers), got {type(self.tool_call_id).__name__} {_short(self.tool_call_id)}"
            )
        if self.role == "tool":
            if not isinstance(self.tool_call_id, str) or not self.tool_call_id:
                raise ValueError(
                    "Message.tool_call_id is required on a tool message: it names the call "
                    "this result answers"
                )
        elif self.tool_call_id is not None:
            raise ValueError(
                f"Message.tool_call_id is only allowed on tool messages, not on {self.role!r}"
            )
        if self.tool_calls and self.role != "assistant":
            raise ValueError(
                f"Message.tool_calls is only allowed on assistant messages, not on {self.role!r}"
            )
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"Message.name must be a str, got {type(self.name).__name__}")
        if self.tokens is not None and (
            not isinstance(self.tokens, int) or isinstance(self.tokens, bool) or self.tokens < 0
        ):
            raise ValueError(f"Message.tokens must be a non-negative int, got {self.tokens!r}")
        if self.id is not None and not isinstance(self.id, str):
            raise TypeError(f"Message.id must be a str, got {type(self.id).__name__}")

    def replace(self, **changes: Any) -> Message:
        """A copy with ``changes`` applied.

        A known token count describes the old text, so it is dropped unless ``tokens`` is
        passed explicitly: a rewritten message is always counted afresh.
        """
        if "tokens" not in changes:
            changes["tokens"] = None
        return attrs.evolve(self, **changes)

    def with_meta(self, **entries: Any) -> Message:
        """A copy whose ``meta`` has ``entries`` added (token count and id are kept)."""
        return attrs.evolve(self, meta={**self.meta, **entries})


def system(content: str, **kwargs: Any) -> Message:
    """A system message."""
    return Message("system", content, **kwargs)


def user(content: str, **kwargs: Any) -> Message:
    """A user message."""
    return Message("user", content, **kwargs)


def assistant(
    content: str = "", tool_calls: tuple[ToolCall, ...] | list[ToolCall] = (), **kwargs: Any
) -> Message:
    """An assistant message, optionally asking for tool calls."""
    return Message("assistant", content, tool_calls=tuple(tool_calls), **kwargs)


def tool(tool_call_id: str, content: str, name: str | None = None, **kwargs: Any) -> Message:
    """A tool result answering the call ``tool_call_id``."""
    return Message("tool", content, tool_call_id=tool_call_id, name=name, **kwargs)
