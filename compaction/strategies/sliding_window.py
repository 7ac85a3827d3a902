"""SlidingWindow ("sliding_window"): keep the newest part of a conversation, drop the oldest.

Two jobs, one rule of order:

- **a fixed window** (seed 000): ``window_size`` messages (``window_mode="messages"``) or tokens
  (``window_mode="tokens"``) of the non-system conversation are kept, newest first; the system
  block is always kept, outside the window. The window applies even when the conversation is
  under budget (that is what a window is), which is why this strategy answers :meth:`wants`
  beyond the base rule;
- **a budget-driven ladder layer** (``window_size=None``, the default): drop just enough of the
  oldest conversation to get under the target, and leave a note where it went.

In both, the budget is enforced after the window, and what may be dropped is decided the same,
turn-aware way (the reference ladder's rules):

1. never the system block, never the task anchor (the newest real user message), never the
   newest ``keep_steps`` steps of the current task;
2. the oldest history units (:meth:`compaction.transcript.Transcript.turns`) go first. Inside
   the one unit that crosses the line, its oldest steps go first while its user message stays
   with the rest of its answer -- a user message is never left with none of its steps: the
   last step goes together with it. Dropping one whole huge turn would otherwise throw away
   far more than needed;
3. only when no history is left does the current task lose its own oldest steps;
4. groups (an assistant message and all the tool results answering it) are dropped whole, so
   a call is never separated from its results.

How much to drop is integer arithmetic on per-message cached counts: each message is counted
once, each candidate cut is one addition (no recounting per candidate, the O(n²) of the Ruby
reference and of LangChain).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar, Literal

from ..messages import Message
from ..strategy import Capabilities, Run, Strategy
from ..tokens import TokenCounter
from ..transcript import (
    PROVENANCE_KEY,
    Transcript,
    is_note,
    mark,
    message_ref,
    parse,
    provenance,
)
from ..validate import validate

__all__ = ["SlidingWindow", "WindowMode"]

WindowMode = Literal["messages", "tokens"]
_MODES: tuple[str, ...] = ("messages", "tokens")


def _note_text(dropped: int) -> str:
    if dropped == 1:
        return "[1 earlier message was removed to fit the context window]"
    return f"[{dropped} earlier messages were removed to fit the context window]"


def _stands_for(message: Message) -> int:
    """How many original messages ``message`` stands for (a note counts what it replaced)."""
    if is_note(message):
        record = provenance(message) or {}
        return max(len(record.get("replaces", ())), 1)
    return 1


def _refs(replaced: Sequence[Message]) -> tuple[str, ...]:
    """The originals ``replaced`` stands for, as :func:`compaction.transcript.mark` records them.

    An older note or summary folds in the messages it stood for. A transcript can keep the raw
    history next to a summary of it (Claude Code does): then an original still present *before*
    the summary is counted once, one for one. Equal messages share a fingerprint, so nothing
    else is merged: a "continue" dropped now is one more than the "continue" an older note
    (which stands before it) already stood for.
    """
    refs: list[str] = []
    present: Counter[str] = Counter()  # plain messages met so far, not yet matched to a note
    for m in replaced:
        if not is_note(m):
            ref = message_ref(m)
            refs.append(ref)
            present[ref] += 1
            continue
        for ref in (provenance(m) or {}).get("replaces", ()):
            if present[ref] > 0:
                present[ref] -= 1  # that original is here itself, already counted
            else:
                refs.append(ref)
    return tuple(refs)


class _Chunk:
    """One droppable unit, in drop order: one or more groups (not always contiguous)."""

    __slots__ = ("groups", "messages", "notes_only", "stands_for", "tokens")

    def __init__(self, groups: list[int]) -> None:
        self.groups = groups
        self.tokens = 0
        self.messages = 0
        self.stands_for = 0
        self.notes_only = True


class SlidingWindow(Strategy):
    """Sliding window: keeps the newest messages and drops the oldest, turn by turn.

    Options:

    - ``window_size``: the fixed window, a positive int, or None (the default) for no fixed
      window: then the strategy is purely budget-driven, a ladder layer that drops just enough
      to get under target. ``.use(SlidingWindow)`` with no options is that layer.
    - ``window_mode``: ``"messages"`` counts the non-system messages kept, ``"tokens"`` their
      tokens. The system block is outside the window.
    - ``keep_steps`` (>= 1, default 2): the newest steps of the current task are never dropped,
      not even by the window: the model has not acted on them yet.
    - ``note``: whether a note stands where messages went, saying how many were dropped (a
      user-role message for the model; its provenance is in ``meta["compaction"]``). The
      default (None) writes one only without a fixed window. A fixed window is a contract on
      exactly what stays (seed 000: a window of 2 returns 2 messages), so by default it writes
      none; pass ``note=True`` to have one anyway (it then sits outside the window, like the
      system block, but its tokens count against the budget). A new note absorbs an older
      one (its count includes what the older note stood for), and swapping one note for
      another is never a rewrite: if a note is all that would change, the strategy declines.

    The window and the protections together: the window never overrides rule 1 of the module
    docstring; when the protected part alone exceeds the window, as much as may go goes.
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

    @property
    def writes_note(self) -> bool:
        """Whether a note stands where messages went (see ``note``)."""
        return self.window_size is None if self.note is None else self.note

    # -- the seed-000 protocol -----------------------------------------------------------------

    def explain(self) -> str:
        if self.window_size is None:
            window = "no fixed window (drops only what the budget needs)"
        else:
            window = f"a window of the newest {self.window_size} {self.window_mode}"
        return (
            f"sliding window: {window}, window_mode={self.window_mode!r}; the system block, "
            f"the task anchor and the newest {self.keep_steps} steps are always kept; the "
            "oldest turns go first, tool calls with their results"
            + ("; a note says how many messages were dropped" if self.writes_note else "")
        )

    def can_handle(self, messages: Sequence[Message]) -> float:
        """1.0 when something may be dropped, a low but positive confidence otherwise."""
        if not messages:
            return 0.5
        transcript = parse(messages)
        return 1.0 if self._chunks(transcript, [0] * len(transcript.messages)) else 0.1

    def wants(self, run: Run) -> bool:
        """Over target (rule 1), or beyond the fixed window even when under target."""
        if self.window_size is not None and run.messages:
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

    def __repr__(self) -> str:
        return (
            f"SlidingWindow(window_size={self.window_size!r}, window_mode={self.window_mode!r}, "
            f"keep_steps={self.keep_steps}, note={self.note!r})"
        )

    # -- the rewrite ---------------------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        # Invalid input is refused, naming the first offending message, rather than made worse.
        validate(messages)
        if not messages:
            return None
        transcript = parse(messages)
        counts = [counter.count(m) for m in transcript.messages]
        chunks = self._chunks(transcript, counts)
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

        floor = p  # the window's own cut: the budget may only add to it
        # Phase 2, the budget: keep dropping until what is left, note included, fits.
        note = self.writes_note
        reserve = 0
        if note:
            # An upper bound on the note's size (the most it could ever say), so one pass
            # finds a cut that surely fits; the real note is then counted and the cut moved.
            most = sum(c.stands_for for c in chunks)
            reserve = counter.count(self._note(most, ()))
        while p < len(chunks) and total - dropped_tokens + (reserve if p else 0) > target:
            dropped_tokens += chunks[p].tokens
            p += 1

        if note and p > 1:
            # The reserve is an upper bound: the real, shorter note may let fewer chunks go.
            # Each try is one short text counted (cached), never the conversation again.
            said = sum(c.stands_for for c in chunks[:p])
            # never down to a cut that drops only older notes (that would be no rewrite)
            first_real = next((i for i, c in enumerate(chunks) if not c.notes_only), len(chunks))
            while p > max(floor, first_real + 1):
                said -= chunks[p - 1].stands_for
                cost = counter.count(Message("user", _note_text(said)))
                if total - dropped_tokens + chunks[p - 1].tokens + cost > target:
                    break
                p -= 1
                dropped_tokens -= chunks[p].tokens

        if p == 0 or all(c.notes_only for c in chunks[:p]):
            # Nothing to drop, or only a note to swap for another note: not a rewrite.
            return None
        out = self._build(transcript, chunks[:p], note)
        after = total - dropped_tokens
        if note:
            after += counter.count(out[system_end])
            # Never in practice: the real note is bigger than counted. Then one chunk more.
            while after > target and p < len(chunks):
                dropped_tokens += chunks[p].tokens
                p += 1
                out = self._build(transcript, chunks[:p], note)
                after = total - dropped_tokens + counter.count(out[system_end])
        if after >= total:
            return None
        return out

    # -- helpers -------------------------------------------------------------------------------

    def _note(self, dropped: int | None, replaces: Sequence[Message]) -> Message:
        """The note standing for ``replaces``; ``dropped`` None counts them."""
        note = mark(Message("user", ""), strategy=self.name, kind="note")
        refs = _refs(replaces)
        if dropped is None:
            dropped = len(refs)
        record = {**(provenance(note) or {}), "replaces": refs, "dropped": dropped}
        return Message("user", _note_text(dropped), meta={**note.meta, PROVENANCE_KEY: record})

    def _build(self, transcript: Transcript, chunks: Sequence[_Chunk], note: bool) -> list[Message]:
        msgs = transcript.messages
        gone: set[int] = set()
        for chunk in chunks:
            gone.update(chunk.groups)
        out: list[Message] = list(msgs[: transcript.system_end])
        replaced: list[Message] = []
        kept: list[Message] = []
        for index, group in enumerate(transcript.groups):
            part = msgs[group.start : group.end]
            (replaced if index in gone else kept).extend(part)
        if note:
            # The note stands at the start of the conversation, where the dropped (oldest)
            # messages began: a user message right after the system block is always valid.
            out.append(self._note(None, replaced))
        out.extend(kept)
        return out

    def _chunks(self, transcript: Transcript, counts: Sequence[int]) -> list[_Chunk]:
        """What may be dropped, oldest first, as chunks of groups."""
        groups = transcript.groups
        anchor = transcript.anchor
        # The newest keep_steps steps after the anchor (or of everything, without one) stay.
        first = 0 if anchor is None else anchor + 1
        cut = len(groups)
        seen = 0
        for index in range(len(groups) - 1, first - 1, -1):
            if groups[index].kind != "note":
                seen += 1
                if seen == self.keep_steps:
                    cut = index
                    break
        else:
            cut = first  # fewer steps than keep_steps: none of them may go
        history_end = cut if anchor is None else anchor

        order: list[list[int]] = []
        # History units, oldest first: a unit starts at each real user message and each note.
        units: list[list[int]] = []
        for index in range(history_end):
            if not units or groups[index].kind in ("user", "note"):
                units.append([index])
            else:
                units[-1].append(index)
        for unit in units:
            lead = groups[unit[0]].kind
            if lead == "user" and len(unit) > 1:
                # Its oldest steps first; the user message goes with its last step, never
                # left alone without an answer.
                order.extend([g] for g in unit[1:-1])
                order.append([unit[0], unit[-1]])
            else:
                # A note (absorbed into the new one) or an assistant preamble: group by group.
                order.extend([g] for g in unit)
        # Only then the current task's own oldest steps, up to the protected newest ones.
        if anchor is not None:
            order.extend([g] for g in range(anchor + 1, cut))

        msgs = transcript.messages
        chunks: list[_Chunk] = []
        for group_indices in order:
            chunk = _Chunk(group_indices)
            for g in group_indices:
                group = groups[g]
                for i in range(group.start, group.end):
                    chunk.tokens += counts[i]
                    chunk.messages += 1
                    chunk.stands_for += _stands_for(msgs[i])
                if group.kind != "note":
                    chunk.notes_only = False
            chunks.append(chunk)
        return chunks
