"""Truncate: a single message too long to keep whole is cut to a limit.

Some messages are too big on their own: a 600-character reply where 500 will do (seed 001), a
pasted log, a tool dump. Cutting them keeps the conversation's shape (every call still
answered, nothing dropped) at the price of their middle or end. The cut is said in the text, so
the model knows something is missing, and recorded in ``meta["compaction"]`` (kind
``"truncated"``, with ``original_chars`` and ``kept``), so code knows without parsing text.

A message that carries more than text (images, documents, audio: the parts and blocks the
adapters keep in ``meta``) is never cut: its content is only the text of those parts, and a
rewritten message is written back from its new text, so cutting it would silently drop the
image. Such messages are left whole for the other layers.

As a ladder layer it works oldest first and stops at target, and never touches system messages
(unless ``"system"`` is in ``roles``) or the task anchor, the newest real user message (unless
``include_anchor``): those are what the model is working from. As a plain per-message limit,
whatever the target, use [`Truncate.truncate_message`][] or [`Truncate.limit`][].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final, Literal

from ..checks import check_format
from ..memory.trace import original_chars
from ..memory.transcript import is_note, mark, parse, provenance
from ..messages import ROLES, Message
from ..strategy import Capabilities, Strategy
from ..tokens import ApproximateCounter, TokenCounter
from ..validate import validate

__all__ = ["DEFAULT_MARKER", "Truncate"]

Keep = Literal["head", "tail", "both"]
_KEEPS: Final = ("head", "tail", "both")

#: Where text was cut. ``{cut}`` is the number of characters cut (``{cut:,}`` groups digits).
DEFAULT_MARKER: Final = "\n[… {cut:,} characters cut …]\n"

#: The largest cut a marker is sized for when checking, at construction, that it fits the
#: limit at all (a cut of a gigabyte of text).
_LARGE_CUT: Final = 10**9


#: Part and block types that are text, or that the adapters write back beside a rewritten text
#: (tool calls and results are modelled; thinking stays with its turn). Any other part (an
#: image, a document, audio, a file) would be lost if the message's text were cut.
_CARRIED: Final = frozenset({"text", "tool_use", "tool_result", "thinking", "redacted_thinking"})


def _parts(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _has_non_text_parts(message: Message) -> bool:
    """True when ``message`` carries parts that are not text (read from the provider records
    in its ``meta``: OpenAI content ``parts``, Anthropic ``blocks`` and tool-result ``block``)."""
    for record in message.meta.values():
        if not isinstance(record, Mapping):
            continue
        parts = _parts(record.get("parts")) + _parts(record.get("blocks"))
        block = record.get("block")
        if isinstance(block, Mapping):
            parts += _parts(block.get("content"))
        if any(isinstance(p, Mapping) and p.get("type") not in _CARRIED for p in parts):
            return True
    return False


class Truncate(Strategy):
    """Cuts single messages that are too long to keep whole, marking the cut."""

    name: ClassVar[str] = "truncate"
    capabilities: ClassVar[Capabilities] = Capabilities(model_call=False, lossless=False)

    def __init__(
        self,
        *,
        max_chars: int | None = None,
        max_tokens: int | None = None,
        roles: Iterable[str] = ("user", "assistant", "tool"),
        keep: Keep = "head",
        include_anchor: bool = False,
        marker: str = DEFAULT_MARKER,
    ) -> None:
        """
        - ``max_chars`` or ``max_tokens`` (exactly one, positive): the most a message's content
          may take, marker included. ``max_tokens`` is the message's whole cost by the run's
          counter (envelope and tool calls too); only its content is cut.
        - ``roles``: the roles whose messages may be cut. System messages only when
          ``"system"`` is listed: they are the instructions everything else depends on.
        - ``keep``: ``"head"`` (the start; replies and requests lead with the point),
          ``"tail"`` (the end; where logs and test runs put the error) or ``"both"``.
        - ``include_anchor``: whether the task anchor (the newest real user message) may be cut.
        - ``marker``: the text put where the cut was, a format string with ``{cut}``.
        """
        if (max_chars is None) == (max_tokens is None):
            raise ValueError(
                "Truncate needs exactly one limit: max_chars=... or max_tokens=..., "
                f"got max_chars={max_chars!r}, max_tokens={max_tokens!r}"
            )
        for option, value in (("max_chars", max_chars), ("max_tokens", max_tokens)):
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"Truncate {option} must be an int, got {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"Truncate {option} must be positive, got {value}")
        if isinstance(roles, str):
            roles = (roles,)
        if isinstance(roles, Mapping) or not isinstance(roles, Iterable):
            raise TypeError(
                "Truncate roles must be a role or a list of roles (of "
                f"{sorted(ROLES)}), got {type(roles).__name__} {roles!r}"
            )
        role_set = frozenset(roles)
        unknown = sorted(role_set - ROLES)
        if unknown:
            raise ValueError(f"Truncate roles must be among {sorted(ROLES)}, got unknown {unknown}")
        if not role_set:
            raise ValueError("Truncate roles must name at least one role, or it cuts nothing")
        if keep not in _KEEPS:
            raise ValueError(f"Truncate keep must be one of {list(_KEEPS)}, got {keep!r}")
        # Bounded in width too: a config's "{cut:99999999999}" must fail here, not allocate.
        large = check_format("Truncate marker", marker, {"cut": _LARGE_CUT}).format(cut=_LARGE_CUT)
        if max_chars is not None and len(large) >= max_chars:
            raise ValueError(
                f"Truncate max_chars={max_chars} leaves no room for text beside the marker "
                f"({len(large)} characters); raise max_chars or pass a shorter marker"
            )
        self.max_chars = max_chars
        self.max_tokens = max_tokens
        self.roles: frozenset[str] = role_set
        self.keep: Keep = keep
        self.include_anchor = bool(include_anchor)
        self.marker = marker
        self._counter: TokenCounter | None = None

    # -- the seed-000 protocol -------------------------------------------------------------

    def explain(self) -> str:
        limit = (
            f"{self.max_chars} characters"
            if self.max_chars is not None
            else f"{self.max_tokens} tokens"
        )
        anchor = "" if self.include_anchor else ", never the task anchor"
        return (
            f"Truncates single {'/'.join(sorted(self.roles))} messages longer than {limit}, "
            f"oldest first until the conversation is under target, keeping the {self.keep} "
            f"of each and marking the cut{anchor}."
        )

    def can_handle(self, messages: Sequence[Message]) -> float:
        """1.0 when some message it may touch is over the limit, else 0.0 (``max_tokens`` is
        judged with an approximate counter here; the run's counter decides in a ladder)."""
        msgs = tuple(messages)
        counter = self._default_counter()
        for i in self._candidates(msgs):
            m = msgs[i]
            if self.max_chars is not None:
                if len(m.content) > self.max_chars:
                    return 1.0
            elif m.content and counter.count(m) > (self.max_tokens or 0):
                return 1.0
        return 0.0

    # -- cutting one message ---------------------------------------------------------------

    def _cut(self, text: str, kept: int) -> str:
        """``text`` with only ``kept`` characters of it left, and the marker where the rest was."""
        marker = self.marker.format(cut=len(text) - kept)
        if self.keep == "head":
            return text[:kept] + marker.rstrip("\n")
        if self.keep == "tail":
            return marker.lstrip("\n") + text[len(text) - kept :]
        head = kept - kept // 2
        tail = kept // 2
        return text[:head] + marker + text[len(text) - tail :]

    def _fit_chars(self, text: str, limit: int) -> int | None:
        """How much of ``text`` to keep so that, marker included, it is at most ``limit``."""
        n = len(text)
        if n <= limit:
            return None
        # The marker is longest for the largest cut, so this first guess always fits ...
        kept = max(limit - len(self._cut(text, 0)), 0)
        # ... and a smaller cut can only shorten the marker: keep more while it still fits.
        while kept + 1 < n and len(self._cut(text, kept + 1)) <= limit:
            kept += 1
        if kept <= 0 or len(self._cut(text, kept)) > limit:
            return None
        return kept

    def _fit_tokens(self, message: Message, counter: TokenCounter) -> int | None:
        """A cut of ``message``'s content that brings its cost to at most ``max_tokens``."""
        limit = self.max_tokens
        assert limit is not None
        text = message.content
        total = counter.count(message)
        if total <= limit or not text:
            return None
        text_tokens = counter.count_text(text)
        overhead = total - text_tokens  # envelope, name and tool calls: not ours to cut
        room = limit - overhead - counter.count_text(self.marker.format(cut=len(text)))
        if room <= 0 or text_tokens <= 0:
            return None
        # Tokens are not characters: estimate from this text's own density, then check and
        # tighten. Each try encodes only the (shorter) candidate, and a few tries suffice.
        kept = min(len(text) - 1, len(text) * room // text_tokens)
        for _ in range(8):
            if kept <= 0:
                return None
            candidate = self._cut(text, kept)
            cost = overhead + counter.count_text(candidate)
            if cost <= limit:
                return kept
            kept = kept * limit // cost - 1
        return None

    def _shortened(self, message: Message, counter: TokenCounter) -> Message | None:
        """``message`` cut to the limit, or None when it fits (or cannot be cut to fit)."""
        if _has_non_text_parts(message):
            return None  # cutting its text would drop its images: left whole
        if self.max_chars is not None:
            kept = self._fit_chars(message.content, self.max_chars)
        else:
            kept = self._fit_tokens(message, counter)
        if kept is None:
            return None
        # Cut twice (a tighter limit later): the record still tells the original size.
        original = original_chars(message)
        return mark(
            message.replace(content=self._cut(message.content, kept)),
            strategy=self.name,
            kind="truncated",
            replaces=[message],
            original_chars=original,
            kept=self.keep,
            kept_chars=kept,
        )

    def truncate_message(self, message: Message, *, counter: TokenCounter | None = None) -> Message:
        """``message`` cut to the limit, or ``message`` itself when it fits (or carries parts
        that are not text, which cutting would drop).

        A plain per-message limit, whatever the target ("truncate the assistant's response to
        500 characters"): it applies to the message given, whatever its role. ``counter``
        matters only with ``max_tokens`` (default: an [`ApproximateCounter`][]).
        """
        if not isinstance(message, Message):
            raise TypeError(f"truncate_message takes a Message, got {type(message).__name__}")
        return self._shortened(message, counter or self._default_counter()) or message

    def limit(
        self, messages: Sequence[Message], *, counter: TokenCounter | None = None
    ) -> tuple[Message, ...]:
        """Every message this strategy may touch cut to the limit, whatever the target.

        Roles and the anchor rule hold as in a ladder. Invalid input raises
        [`InvalidConversationError`][compaction.validate.InvalidConversationError].
        """
        msgs = tuple(messages)
        validate(msgs)
        counter = counter or self._default_counter()
        out = list(msgs)
        for i in self._candidates(msgs):
            new = self._shortened(msgs[i], counter)
            if new is not None:
                out[i] = new
        return tuple(out)

    def _default_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = ApproximateCounter()
        return self._counter

    def _candidates(self, messages: tuple[Message, ...]) -> Iterable[int]:
        """Indices of messages this strategy may cut, oldest first."""
        transcript = parse(messages)
        anchor = (
            transcript.groups[transcript.anchor].start
            if transcript.anchor is not None and not self.include_anchor
            else -1
        )
        for i, m in enumerate(messages):
            if i == anchor or m.role not in self.roles:
                continue
            record = provenance(m)
            # Notes and summaries are already as short as their writer made them, and a
            # placeholder is a few words: cutting them loses what they exist to say.
            if is_note(m) or (record is not None and record.get("kind") == "placeholder"):
                continue
            if _has_non_text_parts(m):
                continue
            yield i

    # -- the ladder layer ------------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        validate(messages)
        total = counter.count_messages(messages)
        if total <= target:
            return None
        out: list[Message] | None = None
        for i in self._candidates(messages):
            if total <= target:
                break
            old = messages[i]
            new = self._shortened(old, counter)
            if new is None:
                continue
            old_tokens, new_tokens = counter.count(old), counter.count(new)
            if new_tokens >= old_tokens:  # a marker denser than the text it replaced
                continue
            if out is None:
                out = list(messages)
            out[i] = new
            total += new_tokens - old_tokens
        return out
