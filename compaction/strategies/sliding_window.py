"""SlidingWindow ("sliding_window"): keep the newest part of a conversation, drop the oldest.

Two jobs, one rule of order:

- **a budget-driven ladder layer** (``window_size=None``, the default): drop just enough of the
  oldest conversation to get under the target, and leave a note where it went;
- **a fixed window** (seed 000): ``window_size`` messages (``window_mode="messages"``) or tokens
  (``window_mode="tokens"``) of the non-system conversation are kept, newest first; the system
  block is always kept, outside the window. In a ladder the window is a cap applied while the
  conversation is over target (rule 1 holds for every layer: a ladder asks a layer only while
  over target); on its own (``apply``), or with ``always_apply=True`` in a ladder, it applies
  whatever the budget, as seed 000 has it.

In both, the budget is enforced after the window, and what may be dropped is decided the same
way (the protection policy in the README: what the model needs to keep working is never
dropped):

1. never the system block, the original task (the first person-written user message), the
   newest person-written user message, a pinned message (``meta["pinned"]``), or the newest
   ``keep_steps`` steps of the current request;
2. the finest grain that keeps a call with its results: one group (a step: an assistant
   message and every tool result answering it) at a time, oldest first, so no more is dropped
   than needed; harness-written (synthetic) user text goes with the history around it;
3. then the current request's own oldest steps.

The person's newest messages are protected within their share of the target (see
[`compaction.memory.transcript.parse`][]); older ones go with the history, and the ledger carries
what they said, verbatim sentence by sentence. A fixed window protects no words (it is the
caller's contract on what stays) and gives person-written messages up last.

What went is named by one note where the first dropped message was (the files, commands, error
names and recall ids, see [`compaction.memory.trace`][]); an older note among the dropped messages
is
folded into it, so notes never pile up.

How much to drop is integer arithmetic on per-message cached counts: each message is counted
once, each candidate cut is one addition (no recounting per candidate, the O(n²) of the Ruby
reference and of LangChain).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from ..budget import Budget
from ..memory.trace import cut_message
from ..memory.transcript import Transcript, parse
from ..messages import Message
from ..result import CompactionResult
from ..strategy import Capabilities, Run, Strategy
from ..tokens import TokenCounter
from ..validate import validate
from ._window_chunks import build, drop_order
from ._window_notes import Chunk, WindowNotes

__all__ = ["SlidingWindow", "WindowMode"]

#: The least of a message worth keeping in part (tokens): below it, the message goes whole.
_MIN_PART = 64

WindowMode = Literal["messages", "tokens"]
_MODES: tuple[str, ...] = ("messages", "tokens")


class SlidingWindow(Strategy):
    """Sliding window: keeps the newest messages and drops the oldest, step by step.

    Options:

    - ``window_size``: the fixed window, a positive int, or None (the default) for no fixed
      window: then the strategy is purely budget-driven, a ladder layer that drops just enough
      to get under target. ``.use(SlidingWindow)`` with no options is that layer.
    - ``window_mode``: ``"messages"`` counts the non-system messages kept, ``"tokens"`` their
      tokens. The system block is outside the window.
    - ``keep_steps`` (>= 1, default 2): the newest steps of the current task are never dropped,
      not even by the window: the model has not acted on them yet.
    - ``note``: whether a note stands where messages went, naming what was dropped (a
      user-role message for the model; its provenance is in ``meta["compaction"]``). The
      default (None) writes one only without a fixed window. A fixed window is a contract on
      exactly what stays (a window of 2 returns 2 messages), so by default it writes
      none; pass ``note=True`` to have one anyway (it then sits outside the window, like the
      system block, but its tokens count against the budget). A new note absorbs an older
      one (its count includes what the older note stood for), and swapping one note for
      another is never a rewrite: if a note is all that would change, the strategy declines.
    - ``always_apply``: in a ladder, apply the fixed window even under target. By
      default a window in a ladder is a cap applied while over target, so rule 1 holds for
      every layer; on its own (``apply``/``compact``) the window always applies.

    The window and the protections together: the window never overrides rule 1 of the module
    docstring (except that a fixed window may drop the original task, which is the caller's
    explicit contract on what stays); when the protected part alone exceeds the window, as
    much as may go goes.
    """

    name: ClassVar[str] = "sliding_window"
    capabilities: ClassVar[Capabilities] = Capabilities(
        model_call=False, lossless=False, keeps_tool_pairs=True, deterministic=True
    )

    def __init__(
        self,
        window_size: int | None = None,
        window_mode: WindowMode = "messages",
        *,
        keep_steps: int = 2,
        note: bool | None = None,
        always_apply: bool = False,
    ) -> None:
        if window_size is not None and (
            isinstance(window_size, bool) or not isinstance(window_size, int) or window_size <= 0
        ):
            raise ValueError(
                f"SlidingWindow window_size must be a positive int or None, got {window_size!r}"
            )
        if window_mode not in _MODES:
            raise ValueError(
                f"SlidingWindow window_mode must be 'messages' or 'tokens', got {window_mode!r}"
            )
        if isinstance(keep_steps, bool) or not isinstance(keep_steps, int) or keep_steps < 1:
            raise ValueError(
                f"SlidingWindow keep_steps must be an int >= 1 (the newest steps are what the "
                f"model acts on next), got {keep_steps!r}"
            )
        if note is not None and not isinstance(note, bool):
            raise ValueError(f"SlidingWindow note must be True, False or None, got {note!r}")
        self.window_size = window_size
        self.window_mode: WindowMode = window_mode
        self.keep_steps = keep_steps
        self.note = note
        self.always_apply = bool(always_apply)

    @property
    def writes_note(self) -> bool:
        """Whether a note stands where messages went (see ``note``)."""
        return self.window_size is None if self.note is None else self.note

    # -- the seed-000 protocol -----------------------------------------------------------------

    def explain(self) -> str:
        if self.window_size is None:
            window = "no fixed window (drops only what the budget needs)"
        else:
            cap = "whatever the budget" if self.always_apply else "while over the budget"
            window = f"a window of the newest {self.window_size} {self.window_mode} ({cap})"
        return (
            f"sliding window: {window}, window_mode={self.window_mode!r}; the system block, "
            f"the task anchor, the newest request, pinned messages and the newest "
            f"{self.keep_steps} steps are always kept; the oldest steps go first, tool calls "
            "with their results, older requests last"
            + ("; a note names what was dropped" if self.writes_note else "")
        )

    def can_handle(self, messages: Sequence[Message]) -> float:
        """1.0 when something may be dropped, a low but positive confidence otherwise."""
        if not messages:
            return 0.5
        transcript = parse(messages)
        return 1.0 if self._chunks(transcript, [0] * len(transcript.messages)) else 0.1

    def wants(self, run: Run) -> bool:
        """Rule 1, like every layer: asked only while over target. With ``always_apply`` (a
        fixed window applied whatever the budget) also when beyond the window, even under
        target."""
        if self.always_apply and self.window_size is not None and run.messages:
            msgs = run.messages
            system_end = 0
            while system_end < len(msgs) and msgs[system_end].role == "system":
                system_end += 1
            if self.window_mode == "messages":
                if len(msgs) - system_end > self.window_size:
                    return True
            else:
                count = run.counter.count
                system_tokens = sum(count(m) for m in msgs[:system_end])
                if run.tokens - system_tokens > self.window_size:
                    return True
        return run.over

    def compact(
        self,
        messages: Sequence[Message],
        *,
        target: int | Budget,
        counter: TokenCounter | None = None,
        limit: int | Budget | None = None,
    ) -> CompactionResult:
        """On its own (``apply``/``compact``), a fixed window is a plain window: it applies
        whatever the budget, as if ``always_apply`` were set. In a ladder, rule 1 holds."""
        alone = self
        if self.window_size is not None and not self.always_apply:
            alone = SlidingWindow(
                self.window_size,
                self.window_mode,
                keep_steps=self.keep_steps,
                note=self.note,
                always_apply=True,
            )
        return Strategy.compact(alone, messages, target=target, counter=counter, limit=limit)

    def __repr__(self) -> str:
        return (
            f"SlidingWindow(window_size={self.window_size!r}, window_mode={self.window_mode!r}, "
            f"keep_steps={self.keep_steps}, note={self.note!r}, always_apply={self.always_apply})"
        )

    # -- the rewrite ---------------------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        # Invalid input is refused, naming the first offending message, rather than made worse.
        validate(messages)
        if not messages:
            return None
        # The person's newest words are protected within their share of the target; a fixed
        # window is the caller's contract on exactly what stays, so there they are not.
        transcript = (
            parse(messages, counter=counter, target=target)
            if self.window_size is None
            else parse(messages)
        )
        counts = [counter.count(m) for m in transcript.messages]
        chunks = drop_order(
            transcript, counts, window_size=self.window_size, keep_steps=self.keep_steps
        )
        if not chunks:
            return None

        total = sum(counts)
        system_end = transcript.system_end
        inner_messages = len(messages) - system_end
        inner_tokens = total - sum(counts[:system_end])

        # Phase 1, the fixed window: the fewest oldest chunks that bring the kept part inside.
        p = 0
        dropped_tokens = 0
        dropped_messages = 0
        if self.window_size is not None:
            window = self.window_size
            mode_tokens = self.window_mode == "tokens"
            while p < len(chunks):
                kept = (
                    inner_tokens - dropped_tokens
                    if mode_tokens
                    else inner_messages - dropped_messages
                )
                if kept <= window:
                    break
                dropped_tokens += chunks[p].tokens
                dropped_messages += chunks[p].messages
                p += 1

        # Phase 2, the budget, before the note: the fewest chunks that fit without one.
        while p < len(chunks) and total - dropped_tokens > target:
            dropped_tokens += chunks[p].tokens
            p += 1
        if p == 0 or all(c.notes_only for c in chunks[:p]):
            # Nothing to drop, or only a note to swap for another note: not a rewrite.
            return None

        if not self.writes_note:
            return build(transcript, chunks[:p], None)
        notes = WindowNotes(self.name, transcript, chunks, target)
        # Phase 3, the note: one more chunk at a time until what is left, note included, fits.
        # The note grows with what it names, so it is written and counted for each cut tried
        # (a short text, counted once per try: never the conversation again; what it reads
        # of the messages is shared by the tries, see WindowNotes).
        while True:
            note = notes.note(p)
            cost = counter.count(note)
            if total - dropped_tokens + cost <= target or p == len(chunks):
                break
            # As many more chunks as this note's cost needs, at once: the note grows little
            # with what it names, so a few tries settle it (never one note per chunk).
            while p < len(chunks) and total - dropped_tokens + cost > target:
                dropped_tokens += chunks[p].tokens
                p += 1
        after = total - dropped_tokens + cost
        if after >= total:
            return None
        if target - after > max(_MIN_PART, target // 20):
            # The last group to go overshot the target by far (one huge message): keep its
            # head and tail instead, cut in the middle, so no more is thrown away than needed.
            kept = total - dropped_tokens
            part = self._keep_part(transcript, chunks, p, kept, target, counter, notes)
            if part is not None:
                return part
        return build(transcript, chunks[:p], note)

    def _keep_part(
        self,
        transcript: Transcript,
        chunks: Sequence[Chunk],
        p: int,
        kept: int,
        target: int,
        counter: TokenCounter,
        notes: WindowNotes,
    ) -> list[Message] | None:
        """The cut of ``chunks[:p]`` with the last chunk kept in part: its largest message cut
        in the middle so that the whole, with the note for ``chunks[:p - 1]``, fits."""
        last = chunks[p - 1]
        if len(last.groups) != 1 or last.notes_only:
            return None  # an older ledger is folded into the new one whole, never kept in part
        group = transcript.groups[last.groups[0]]
        msgs = transcript.messages
        rest = chunks[: p - 1]
        # No note for nothing, nor for older notes alone (swapping notes is no rewrite).
        note = notes.note(p - 1) if not all(c.notes_only for c in rest) else None
        room = target - kept - (counter.count(note) if note is not None else 0)
        if note is None:
            room -= sum(c.tokens for c in rest)  # those stay, then
        biggest = max(range(group.start, group.end), key=lambda i: counter.count(msgs[i]))
        message = msgs[biggest]
        others = last.tokens - counter.count(message)
        cut = cut_message(message, room - others, counter, strategy=self.name, least=_MIN_PART)
        # What the result counts is known from the counts already taken: the room was what
        # the target leaves beside everything kept (note included), the last group's other
        # messages and the cut take it.
        if cut is None or others + counter.count(cut) > room:
            return None
        out = build(transcript, rest if note is not None else (), note)
        # by identity: an equal message elsewhere ("ok", "continue") is not this one
        at = next((i for i, m in enumerate(out) if m is message), -1)
        if at < 0:
            return None
        out[at] = cut
        return out

    def _chunks(self, transcript: Transcript, counts: Sequence[int]) -> list[Chunk]:
        """What may be dropped, in drop order (see ``_window_chunks.drop_order``)."""
        return drop_order(
            transcript, counts, window_size=self.window_size, keep_steps=self.keep_steps
        )
