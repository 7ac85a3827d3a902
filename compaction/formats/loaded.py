"""What [`compaction.formats.load`][] returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from ..messages import Message

__all__ = ["FORMATS", "OUTPUT_FORMAT", "Format", "Loaded", "Repair"]

Format = Literal["openai", "anthropic", "mini-swe-agent", "swe-agent", "claude-code"]

FORMATS: Final[tuple[str, ...]] = (
    "openai",
    "anthropic",
    "mini-swe-agent",
    "swe-agent",
    "claude-code",
)

#: The provider shape each input format is written back in: trajectories are OpenAI-style
#: chats, Claude Code logs are Anthropic messages.
OUTPUT_FORMAT: Final[Mapping[str, str]] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "mini-swe-agent": "openai",
    "swe-agent": "openai",
    "claude-code": "anthropic",
}


@attrs.frozen(slots=True)
class Repair:
    """One visible fix a reader made so that an agent log becomes a valid conversation.

    ``kind``: ``"no_result"`` (a call the log never answered got an explicit "no result
    recorded" tool result), ``"orphan_result"`` (a result whose call is not in the log was
    kept as a user message saying so) or ``"rekeyed"`` (a call reused an id an earlier call
    had: it and its results got a fresh id, ``detail`` names it). ``index`` is the position
    of the message added or changed in ``Loaded.messages``.
    """

    kind: Literal["no_result", "orphan_result", "rekeyed"]
    call_id: str
    index: int
    detail: str = ""

    def __str__(self) -> str:
        text = {
            "no_result": f"call {self.call_id!r} had no result; added an explicit "
            "'no result recorded' tool result",
            "orphan_result": f"result for call {self.call_id!r} answers no call in the log; "
            "kept it as a user message saying so",
            "rekeyed": f"call id {self.call_id!r} was already used by an earlier call; this "
            "call and its results were given a new id",
        }[self.kind]
        return f"message {self.index}: {text}" + (f" ({self.detail})" if self.detail else "")


@attrs.frozen(slots=True)
class Loaded:
    """A transcript read from a file.

    - ``messages``: the conversation; always passes [`compaction.validate.validate`][].
    - ``format``: one of ``FORMATS``.
    - ``path``: where it came from.
    - ``repairs``: what the reader changed to make an agent log valid (empty for most files).
    - ``skipped``: records read but not chat turns, counted by kind (Claude Code progress
      lines, snapshots...), so nothing disappears silently.
    - ``container``: ``"list"``, ``"object"`` or ``"jsonl"``: how the messages were held, so
      [`dump`][] can write the same shape back.
    - ``extra``: top-level fields of an ``{"messages": [...]}`` request besides the messages
      (``model``, ``tools``...), written back by [`dump`][].
    """

    messages: tuple[Message, ...]
    format: str
    path: str
    repairs: tuple[Repair, ...] = ()
    skipped: Mapping[str, int] = attrs.field(factory=dict)
    container: str = "list"
    extra: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def output_format(self) -> str:
        """The provider shape this transcript is written back in (``openai``/``anthropic``)."""
        return OUTPUT_FORMAT[self.format]
