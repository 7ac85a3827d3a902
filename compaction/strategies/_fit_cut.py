"""How [`Fit`][compaction.strategies.fit.Fit] cuts one message: its text, then its arguments.

A message is always cut from the original it came in as (a tighter pass re-cuts the original
with its shorter marker, never a cut and its marker), its content first, then the longest
string values of the arguments of the calls the layer lets it cut; the cut is marked (in the
text and in ``meta``) so that it is still the same message, recallable by id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, NamedTuple

from ..memory.trace import CUT_MARKER, cut_counted, original_chars
from ..memory.transcript import PROVENANCE_KEY, is_note, mark, provenance
from ..messages import Message, ToolCall
from ..tokens import TokenCounter
from ._fit_args import SHORT_MARKER, shrink_call
from ._fit_reads import _count, _Known
from ._fit_units import cut_lines, cut_sentences

__all__ = ["Stage"]


class Stage(NamedTuple):
    """A stage of the last resort: the indices it cuts (largest first), the floor of their
    own text (None for the pass's default) and the size it aims at. ``loose``: the arguments
    of calls whose result is shown whole may be cut too; ``bare``: the newest outputs keep
    no head and tail of their own."""

    indices: list[int]
    floor: int | None
    aim: int
    loose: bool = False
    bare: bool = False
    #: ``"line"``: our notes, by whole lines, the header kept; ``"line0"``: the same, emptied
    #: when even the header is too many; ``"sentence"``: the person's messages, by whole
    #: sentences (``"filler"``: only those that are neither a statement nor a question);
    #: None: in the middle, head and tail kept.
    unit: str | None = None


class _Cuts:
    """The cuts of one message, for [`Fit`][compaction.strategies.fit.Fit] (its base)."""

    name: ClassVar[str]

    def _shrink(
        self,
        message: Message,
        want: int,
        counter: TokenCounter,
        marker: str,
        least: int,
        text_tokens: int,
        known: _Known,
        current: int,
        cuttable: Callable[[ToolCall], bool] = lambda call: True,
    ) -> tuple[Message, int] | None:
        """``message`` (counting ``current``) cut to about ``want`` tokens, and what the cut
        counts: its content first, then the longest string values anywhere in the arguments of
        its ``cuttable`` tool calls (or arguments that are not JSON, as text). ``text_tokens``
        is what its content counts (known to the caller: never re-encoded here)."""
        if current <= want:
            return None
        ref = known.ref(message)
        new = message
        need = current - want
        text = message.content
        # What the cut text counts: it was encoded whole to check it, so the messages made of
        # it are counted without encoding it again (``learn``).
        cut_tokens: int | None = None
        if text:
            goal = max(text_tokens - need, least)
            found = cut_counted(
                text,
                goal,
                ref,
                counter,
                marker,
                tokens=text_tokens,
                marker_tokens=known.marker_tokens(message, marker),
            )
            if found is not None:
                text, cut_tokens = found
                need -= text_tokens - cut_tokens
                if not message.tool_calls:
                    # The copy is made once, marked, below (each copy runs every converter).
                    return self._marked(message, text, None, counter, current, cut_tokens, known)
                new = new.replace(content=text)
        if message.tool_calls and need > 0:
            # Tokens per character of the arguments, from the cached count: a large value is
            # sized from it instead of being encoded again. An estimate can fall short by a
            # few tokens, so the cut is checked and tightened by what it missed (twice at most).
            chars = sum(len(c.arguments) for c in message.tool_calls)
            density = max(current - text_tokens, 1) / max(chars, 1)
            cut_so_far = new
            for _ in range(3):
                left, calls, floored = need, [], True
                for call in message.tool_calls:
                    if not cuttable(call):
                        calls.append(call)
                        continue
                    shrunk, left, at_floor = shrink_call(
                        call, left, ref, counter, marker, least, density, known.texts
                    )
                    calls.append(shrunk)
                    floored = floored and at_floor
                new = cut_so_far.replace(tool_calls=tuple(calls))
                if new == cut_so_far or floored:
                    break  # counting it again, or needing more, changes nothing
                missed = _count(counter, new, cut_tokens) - want
                if missed <= 0:
                    break
                need += missed
        if new is message or new == message:
            # Nothing was cut (an equal copy, marked, would count at least as much).
            return None
        return self._marked(message, new.content, new, counter, current, cut_tokens, known)

    def _whole(
        self,
        message: Message,
        want: int,
        counter: TokenCounter,
        marker: str,
        unit: str,
        text_tokens: int,
        known: _Known,
        current: int,
    ) -> tuple[Message, int] | None:
        """``message`` (counting ``current``, its text ``text_tokens``) cut to about ``want``
        tokens by whole units (see ``Stage.unit``), marked, and what the cut counts."""
        if current <= want:
            return None
        goal = max(want - (current - text_tokens), 0)
        text = message.content
        if unit in ("sentence", "filler"):
            ref = known.ref(message)
            best: tuple[str, int] | None = None
            best_fits = False
            # The marker that keeps the most sentences within the goal: a recall id costs a
            # sentence or two, and what the person said outranks the way back to it (``meta``
            # keeps that). A cut over the goal (every sentence gone and the marker still too
            # long) is taken only when no marker brings one within it.
            for mark in dict.fromkeys((marker, SHORT_MARKER if marker else "", "")):

                def mark_of(cut: int, mark: str = mark) -> str:
                    if not mark:
                        return ""
                    found = mark.format(cut=cut, ref=ref)
                    return found if found.startswith("\n") else " " + found

                found = cut_sentences(
                    text, goal, counter.count_text, mark_of, filler_only=unit == "filler"
                )
                if found is None:
                    continue
                fits = counter.count_text(found[0]) <= goal
                if best is None or (fits, found[1]) > (best_fits, best[1]):
                    best, best_fits = found, fits
            cut = None if best is None else best[0]
        else:
            cut = cut_lines(text, goal, counter.count_text, may_empty=unit == "line0")
        if cut is None:
            return None
        return self._marked(message, cut, None, counter, current, None, known)

    def _give_back(
        self,
        order: Sequence[int],
        units: dict[int, str],
        room: int,
        out: list[Message],
        now: list[int],
        messages: tuple[Message, ...],
        counter: TokenCounter,
        text_tokens: Callable[[int], int],
        known: _Known,
    ) -> int:
        """Re-cut the messages of ``order`` (cut by whole ``units``) from their originals with
        ``room`` more tokens each may take, in that order, each only when it then keeps more;
        ``out`` and ``now`` updated in place; what the request grew by."""
        grew = 0
        for i in order:
            if room <= 0:
                break
            original = messages[i]
            size = counter.count(original)
            if size <= now[i] + room:
                found: tuple[Message, int] | None = (original, size)
            else:
                found = self._whole(
                    original,
                    now[i] + room,
                    counter,
                    CUT_MARKER,
                    units[i],
                    text_tokens(i),
                    known,
                    size,
                )
            if found is None or found[1] <= now[i] or found[1] > now[i] + room:
                continue
            if len(found[0].content) <= len(out[i].content):
                continue  # a longer marker, not more of the text
            room -= found[1] - now[i]
            grew += found[1] - now[i]
            out[i], now[i] = found
        return grew

    def _marked(
        self,
        message: Message,
        text: str,
        new: Message | None,
        counter: TokenCounter,
        current: int,
        cut_tokens: int | None,
        known: _Known,
    ) -> tuple[Message, int] | None:
        """The cut of ``message`` (its content ``text``; ``new``, when its tool calls were cut
        too, the copy that holds them), marked, and what it counts; None when it does not
        count less."""
        if is_note(message):
            # A cut note is still the note: its record (the facts a later note merges, the
            # ids it stands for) is kept, or it would pass for a message a person wrote, and
            # a cut ledger would become the task.
            record = {
                **(provenance(message) or {}),
                "cut_by": self.name,
                "original_chars": original_chars(message),
                "kept_chars": len(text),
            }
            meta = {**message.meta, PROVENANCE_KEY: record}
            if new is None:
                out = message.replace(content=text, meta=meta, tokens=None)
            else:
                out = new.replace(meta=meta, tokens=None)
        else:
            out = mark(
                message if new is None else new,
                strategy=self.name,
                kind="truncated",
                replaces=[message],
                content=text if new is None else None,
                refs=known.refs_of(message),
                original_chars=original_chars(message),
                kept_chars=len(text),
            )
        n = _count(counter, out, cut_tokens)
        return (out, n) if n < current else None

    def _emptied(
        self,
        stages: Sequence[Stage],
        now: list[int],
        messages: tuple[Message, ...],
        total: int,
        newest: frozenset[int],
        counter: TokenCounter,
        text_tokens: Callable[[int], int],
        known: _Known,
    ) -> dict[int, tuple[Message, int]]:
        """The messages of ``stages`` whose last pass is known before the first: their cut
        with the text emptied and what it counts, by index (none when that cannot be known).

        When even emptying every message of the group leaves the request further over its aim
        than the largest of them counts, no pass gets near the aim: every pass asks each
        message for its floor, whatever the passes before it gave. The last pass then empties
        the text of each message that has no tool calls, and an emptied text counts less than
        any cut that keeps a marker, so it is what the passes end with: the cuts before it
        (each encoded, counted and marked) are never seen. Such a message is cut once, here;
        a message with tool calls (whose cut arguments count as JSON does) and the newest tool
        output (which keeps its head, tail and marker in every pass) go through the passes as
        before."""
        if any(stage.floor is not None or stage.bare or stage.unit for stage in stages):
            return {}  # the task's floors: what they keep depends on the limit, not the aim
        aim = max((stage.aim for stage in stages), default=0)
        indices = [i for stage in stages for i in stage.indices]
        sizes = [now[i] for i in indices]
        if not indices or total - sum(sizes) - aim < max(max(sizes), 1):
            return {}
        if counter.count_text("") != 0:
            return {}  # an emptied text must count nothing for the rule above to hold
        done: dict[int, tuple[Message, int]] = {}
        for i, size in zip(indices, sizes, strict=True):
            if messages[i].tool_calls or i in newest:
                continue  # the newest output keeps its marker in every pass
            found = self._shrink(messages[i], 0, counter, "", 0, text_tokens(i), known, size)
            if found is not None and found[0].content == "":
                done[i] = found
        return done
