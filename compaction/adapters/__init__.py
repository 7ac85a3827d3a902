"""Provider message shapes in and out: OpenAI chat completions and Anthropic messages.

Each adapter turns a provider's list of message dicts into
[`Message`][compaction.messages.Message] tuples and back. What we do not model (content parts,
thinking blocks, provider-only fields) rides along in ``meta`` under the adapter's own key
(``"openai"`` or ``"anthropic"``), so a message nothing rewrote goes back out exactly as it came
in, and a message a strategy rewrote goes back out with its new text. Neither adapter imports
the provider SDKs.
"""

from __future__ import annotations

__all__ = ["AdapterError"]


class AdapterError(ValueError):
    """A provider message the adapter cannot convert.

    ``index`` is the position of the offending message in the list given, ``field`` the field
    at fault (``None`` when the whole message is), so the caller can point at it precisely.
    """

    def __init__(self, index: int | None, field: str | None, reason: str) -> None:
        self.index = index
        self.field = field
        self.reason = reason
        where = []
        if index is not None:
            where.append(f"message {index}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {reason}" if where else reason)
