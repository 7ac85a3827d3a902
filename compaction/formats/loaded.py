"""What [`compaction.formats.load`][] returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from ..messages import Message

__all__ = ["FORMATS", "OUTPUT_FORMAT", "Loaded", "Repair", "RepairKind"]

#: The formats of the first readers. Every reader, these and the newer ones, is listed by
#: [`compaction.formats.registry.readers`][] (``compaction formats`` on the command line).
FORMATS: Final[tuple[str, ...]] = (
    "openai",
    "anthropic",
    "mini-swe-agent",
    "swe-agent",
    "claude-code",
)

#: The provider shape each of ``FORMATS`` is written back in (a reader's own ``output`` says
#: it for every reader): trajectories are OpenAI-style chats, Claude Code logs are Anthropic
#: messages.
OUTPUT_FORMAT: Final[Mapping[str, str]] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "mini-swe-agent": "openai",
    "swe-agent": "openai",
    "claude-code": "anthropic",
}

RepairKind = Literal[
    "no_result", "orphan_result", "rekeyed", "merged_calls", "boundary", "skipped_line"
]


@attrs.frozen(slots=True)
class Repair:
    """One visible fix a reader made so that an agent log becomes a valid conversation.

    ``kind``: ``"no_result"`` (a call the log never answered got an explicit "no result
    recorded" tool result), ``"orphan_result"`` (a result whose call is not in the log was
    kept as a user message saying so), ``"rekeyed"`` (a call reused an id an earlier call
    had: it and its results got a fresh id, ``detail`` names it), ``"merged_calls"`` (calls
    the log split over consecutive assistant messages, one each, were put back in the one
    message that made them), ``"boundary"`` (a system message in the middle of the run, where
    a request allows none, was kept as a marked user-role boundary) or ``"skipped_line"`` (a
    truncated or undecodable line of a JSONL log was left out; ``line`` names it). ``index``
    is the position of the message added or changed in ``Loaded.messages`` (-1 for a line
    that became no message).
    """

    kind: RepairKind
    call_id: str
    index: int
    detail: str = ""
    line: int | None = None

    def __str__(self) -> str:
        text = {
            "no_result": f"call {self.call_id!r} had no result; added an explicit "
            "'no result recorded' tool result",
            "orphan_result": f"result for call {self.call_id!r} answers no call in the log; "
            "kept it as a user message saying so",
            "rekeyed": f"call id {self.call_id!r} was already used by an earlier call; this "
            "call and its results were given a new id",
            "merged_calls": "calls logged one per assistant message were merged back into "
            "the message that made them",
            "boundary": "a system message in the middle of the run was kept as a marked "
            "boundary (user role, not the person's words)",
            "skipped_line": "an unreadable line was skipped",
        }[self.kind]
        detail = f" ({self.detail})" if self.detail else ""
        if self.kind == "skipped_line":
            return f"line {self.line}: {text}{detail}"
        return f"message {self.index}: {text}{detail}"


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
    - ``output``: the provider shape to write it back in (``openai``/``anthropic``); set from
      the reader's registration when the reader leaves it ``None``.
    """

    messages: tuple[Message, ...]
    format: str
    path: str
    repairs: tuple[Repair, ...] = ()
    skipped: Mapping[str, int] = attrs.field(factory=dict)
    container: str = "list"
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    output: str | None = None

    @property
    def output_format(self) -> str:
        """The provider shape this transcript is written back in (``openai``/``anthropic``)."""
        return self.output or OUTPUT_FORMAT.get(self.format, "openai")
