"""The value types everything else passes around: [`Message`][] and [`ToolCall`][].

Both are frozen attrs classes. A strategy never edits a message; it builds a new one with
[`Message.replace`][], which also forgets any known token count, so a rewritten message is
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
    if type(value) is tuple:
        # What every message built by this library holds: no tuple can fail the checks on the
        # container below (and ``tuple()`` of one is itself), so only its items are checked.
        calls = value
    else:
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
    if type(value) is dict:  # the usual case, spared the abstract-class check
        return dict(value)
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
        _check_tokens(self.tokens)
        if self.id is not None and not isinstance(self.id, str):
            raise TypeError(f"Message.id must be a str, got {type(self.id).__name__}")

    def replace(self, **changes: Any) -> Message:
        """A copy with ``changes`` applied.

        A known token count describes the old text, so it is dropped unless ``tokens`` is
        passed explicitly: a rewritten message is always counted afresh.
        """
        if "tokens" not in changes:
            changes["tokens"] = None
        if _BUILDS_DIRECTLY and type(self) is Message and changes.keys() <= _TEXT_FIELDS:
            # The strategies' rewrite (a new text, a provenance record): each changed field is
            # converted and checked as the constructor would, in the constructor's order.
            # The checks of role, tool calls, call id, name and id read only fields this copy
            # keeps, which passed them when this message was built, so they are not re-run.
            content = _content(changes["content"]) if "content" in changes else self.content
            meta = _meta(changes["meta"]) if "meta" in changes else dict(self.meta)
            tokens = changes["tokens"]
            _check_tokens(tokens)
            return self._copy(content, meta, tokens)
        return attrs.evolve(self, **changes)

    def with_meta(self, **entries: Any) -> Message:
        """A copy whose ``meta`` has ``entries`` added (token count and id are kept)."""
        meta = {**self.meta, **entries}
        if _BUILDS_DIRECTLY and type(self) is Message:
            # Only ``meta`` changes, to a dict built here (so no copy of it is needed): the
            # text, the count and every checked field are this message's own.
            return self._copy(self.content, meta, self.tokens)
        return attrs.evolve(self, meta=meta)

    def _copy(self, content: str, meta: dict[str, Any], tokens: int | None) -> Message:
        """This message with ``content``, ``meta`` and ``tokens`` already converted and checked,
        built the way the attrs constructor builds one (every slot set, the hash not yet
        computed) without ``attrs.evolve`` reading and re-checking every field again."""
        new = object.__new__(Message)
        set_ = object.__setattr__
        set_(new, "role", self.role)
        set_(new, "content", content)
        set_(new, "tool_calls", self.tool_calls)
        set_(new, "tool_call_id", self.tool_call_id)
        set_(new, "name", self.name)
        set_(new, "meta", meta)
        set_(new, "tokens", tokens)
        set_(new, "id", self.id)
        set_(new, "_attrs_cached_hash", None)
        return new


#: Whether a copy can be built slot by slot: it sets the slot attrs keeps its cached hash in,
#: by the name attrs gives it; an attrs that names it otherwise gets ``attrs.evolve`` instead.
_BUILDS_DIRECTLY: Final = "_attrs_cached_hash" in getattr(Message, "__slots__", ())

#: The fields [`Message.replace`][] changes on its fast path: a rewrite's new text, meta and
#: count. None of them takes part in a check of another field.
_TEXT_FIELDS: Final = frozenset({"content", "meta", "tokens"})


def _check_tokens(tokens: Any) -> None:
    if tokens is not None and (
        not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0
    ):
        raise ValueError(f"Message.tokens must be a non-negative int, got {tokens!r}")


_attrs_eq = Message.__eq__


def _eq(self: Message, other: object) -> bool:
    # The counter's cache compares the message it is asked about with the one it stored (a
    # weak key compares referents), and on a hit they are nearly always the same object. The
    # attrs comparison would then compare all eight fields to find each equal to itself;
    # every field of a message is equal to itself (containers compare items by identity
    # first), so identity answers the same, and sooner.
    if self is other:
        return True
    return _attrs_eq(self, other)  # type: ignore[no-any-return]


Message.__eq__ = _eq  # type: ignore[method-assign,assignment]


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
