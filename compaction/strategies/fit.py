"""Fit ("fit"): the last resort. Every request fits whenever the system prompt does.

When what is left after the layers above is still over target, no layer above may give more:
they only drop or summarise what is not protected. Sending the request anyway is a provider
400, the worst outcome. So this layer *cuts* (never drops) messages in their middle, keeping
head and tail (the head holds the request, the tail the error or the conclusion).

A run has two sizes: the **target**, where compaction aims, and the **hard limit**,
what the request must fit (the window less what the reply needs; a plain ``compact(target=...)``
has the target as its limit). What is droppable aims at the target; what is protected (the
system prompt, the task, the newest request, what the policy protects, pinned messages, the
notes that name what was dropped, and the newest step) is cut only while the request is over
the limit. In this order, each only as far
as still needed, and each group through every pass before the next is touched:

1. what is not protected, down to the target: tool outputs, largest first, then the rest;
2. the system prompt, only when it alone is over the limit (or an earlier run cut it);
3. the newest tool output, down to the limit: it always keeps its head and tail;
4. every other protected message but the task, notes included (contents, then the longest
   string values anywhere in tool-call arguments, so the JSON stays valid; arguments that are
   not JSON are cut as text);
5. the task, down to ``task_share`` of the limit, then to its head and tail (``task_min_tokens``).

Each cut is marked in the text with how much was cut and the recall id of the original (a
session's ``recall`` finds it), and recorded in ``meta["compaction"]`` (kind ``"truncated"``,
``original_chars``, ``kept_chars``), so the message is still the same message: a cut task stays
the task, a cut note stays the note, and a cut message keeps its images and documents (the
adapters write them back beside the cut text).

A cut is found from the counter's token offsets (one encoding of the part kept, never the
whole message again), so the last resort costs about what it keeps.

It is a layer placed *last* in the ladder (the terminal, or after it): the rules hold as for
any layer (asked only while over target, taken only when smaller), so it runs only when every
layer above left the conversation over target; it may answer a conversation over the target but
within the limit. A caller who prefers an over-target request to a cut one leaves it out
(``strict_floor=True`` on [`Compactor`][compaction.trigger.Compactor] and
[`default_pipeline`][compaction.ladder.default_pipeline]).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Final

from ..memory.trace import CUT_MARKER, cut_counted, original_chars
from ..memory.transcript import PROVENANCE_KEY, is_note, mark, parse, provenance
from ..messages import Message
from ..strategy import Capabilities, Strategy
from ..tokens import TokenCounter
from ..validate import validate
from ._fit_args import shrink_call
from ._fit_reads import _count, _guarded, _Known, _newest_outputs, _text_tokens, _was_cut

__all__ = ["CUT_MARKER", "Fit"]

_Stage = tuple[list[int], int | None, int]

#: The marker of the tight pass, when even the marked cuts do not fit (a target of a few dozen
#: tokens for several messages): it still says that, and how much, was cut.
SHORT_MARKER: Final = "[…{cut:,} cut…]"


def _check(option: str, value: Any, low: float, high: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"Fit {option} must be a number, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        upper = f" and <= {high}" if high is not None else ""
        raise ValueError(f"Fit {option} must be >= {low}{upper}, got {value}")


class Fit(Strategy):
    """Last resort: cuts the largest protected messages in their middle until the request fits."""

    name: ClassVar[str] = "fit"
    capabilities: ClassVar[Capabilities] = Capabilities(
        model_call=False, lossless=False, keeps_tool_pairs=True, deterministic=True
    )

    def __init__(
        self, *, task_share: float = 0.3, min_tokens: int = 24, task_min_tokens: int = 64
    ) -> None:
        """
        - ``task_share``: the share of the hard limit the task keeps before it is cut to its
          head and tail (a task at most this big stays verbatim while the rest can give).
        - ``min_tokens``: the least a cut message keeps of its text (head and tail together)
          while the marked cuts still fit.
        - ``task_min_tokens``: the least the task keeps of its own text, head and tail
          together, besides its marker, however tight the target: the agent must still be able
          to tell what it was asked (64 tokens are about 100 characters at each end).
        """
        _check("task_share", task_share, 0.0, 1.0)
        _check("min_tokens", min_tokens, 0)
        _check("task_min_tokens", task_min_tokens, 0)
        self.task_share = float(task_share)
        self.min_tokens = int(min_tokens)
        self.task_min_tokens = int(task_min_tokens)

    def explain(self) -> str:
        return (
            "Last resort: cuts messages in their middle, keeping head and tail and marking each "
            "cut with a recall id: what is not protected down to the target, what is protected "
            "(the newest output, then the rest, then the task, down to "
            f"{self.task_share:.0%} of the limit and then its head and tail) only down to the "
            "hard limit, the system prompt only when it alone is over it."
        )

    # -- cutting one message -------------------------------------------------------------------

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
    ) -> tuple[Message, int] | None:
        """``message`` (counting ``current``) cut to about ``want`` tokens, and what the cut
        counts: its content first, then the longest string values anywhere in its tool-call
        arguments (or arguments that are not JSON, as text). ``text_tokens`` is what its
        content counts (known to the caller: never re-encoded here)."""
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

    # -- the layer -----------------------------------------------------------------------------

    def rewrite(
        self,
        messages: tuple[Message, ...],
        *,
        target: int,
        counter: TokenCounter,
        limit: int | None = None,
    ) -> Sequence[Message] | None:
        """Cut what is not protected toward ``target``, what is protected only toward
        ``limit`` (the hard limit: default, and never less than, ``target``)."""
        validate(messages)
        hard = target if limit is None else max(limit, target)
        out = list(messages)
        # What each message of ``out`` counts, kept beside it: the passes read the sizes again
        # and again (to order, to aim), and each read of the counter hashes a message.
        now = [counter.count(m) for m in out]
        total = sum(now)
        if total <= target:
            return None
        t = parse(messages)
        task = t.groups[t.task].start if t.task is not None else None
        guarded = _guarded(t)
        newest = _newest_outputs(t)
        inner = range(t.system_end, len(out))
        sizes: dict[int, int] = {}
        known = _Known(counter)
        tried: set[tuple[int, int, str, int]] = set()

        def text_tokens(i: int) -> int:
            if i not in sizes:
                sizes[i] = _text_tokens(messages[i], counter)
            return sizes[i]

        def largest(indices: Iterable[int]) -> list[int]:
            return sorted(indices, key=lambda i: (-now[i], i))

        free = [i for i in inner if i not in guarded]
        kept = [i for i in inner if i in guarded and i != task]
        # Each stage: (indices, the floor of their own text or None for the pass's default,
        # the size aimed at). Stages come in groups, and a group is cut through every pass
        # before the next group is touched: what is droppable is cut to nothing before
        # anything protected gives a token.
        free_stages: list[_Stage] = [
            (largest(i for i in free if out[i].role == "tool"), None, target),
            (largest(i for i in free if out[i].role != "tool"), None, target),
        ]
        # What is protected gives only what the hard limit demands: the newest tool output
        # first (it always keeps its head and tail), then every other protected message, then
        # the task, down to its share and then to its head and tail (losing the task is how
        # an agent forgets what it was asked to do).
        kept_stages: list[_Stage] = [
            (largest(i for i in kept if out[i].role == "tool"), None, hard),
            (largest(i for i in kept if out[i].role != "tool"), None, hard),
        ]
        if task is not None:
            kept_stages.append(([task], max(int(hard * self.task_share), self.min_tokens), hard))
            kept_stages.append(([task], self.task_min_tokens, hard))
        groups = [free_stages, kept_stages]
        system = messages[: t.system_end]
        if sum(now[: t.system_end]) > hard or any(_was_cut(m) for m in system):
            # The system prompt only when it alone is over the limit (or was, when an earlier
            # run cut it: the agent's list carries the cut, and the rest grows behind it).
            # It must give then whatever else gives, so it gives first: the task and the
            # newest step stay whole when its cut is enough.
            groups.insert(1, [(largest(range(t.system_end)), None, hard)])
        original = list(now)
        changed = False
        # A second, tight pass only when the marked cuts could not fit (tiny targets), and a
        # last one that leaves a message's text empty (the cut is still recorded in its meta)
        # when even the short markers are too many for what is left.
        passes = ((CUT_MARKER, self.min_tokens), (SHORT_MARKER, 0), ("", 0))
        for stages in groups:
            done = self._emptied(stages, now, messages, total, newest, counter, text_tokens, known)
            for i, (emptied, n) in done.items():
                total += n - now[i]
                out[i], now[i] = emptied, n
                changed = True
                tried.add((i, 0, "", 0))
            for marker, least_default in passes:
                for indices, floor, aim in stages:
                    for i in indices:
                        if i in done:
                            continue
                        need = total - aim
                        if need <= 0:
                            break
                        before = now[i]
                        least = floor if floor is not None else least_default
                        mark_with = marker
                        if i == task or i in newest:
                            # Their floor is of their own text, the marker on top, and that
                            # marker names the recall id however tight the pass: the task and
                            # the newest output keep their head and tail and say how to get
                            # the rest back.
                            mark_with = CUT_MARKER
                            least = max(least, self.min_tokens if i in newest else 0)
                            least += known.marker_tokens(messages[i], mark_with)
                        want = max(before - need, least)
                        if want >= before:
                            continue
                        # The same cut asked again (the task and the newest output keep their
                        # marker and floor in every pass) gives what it gave: no smaller than
                        # the message is now.
                        key = (i, want, mark_with, least)
                        if key in tried:
                            continue
                        tried.add(key)
                        # Always cut from the message as it came in: a tighter pass re-cuts
                        # the original with its shorter marker, never a cut (and its marker).
                        found = self._shrink(
                            messages[i],
                            want,
                            counter,
                            mark_with,
                            least,
                            text_tokens(i),
                            known,
                            original[i],
                        )
                        if found is None or found[1] >= before:
                            continue
                        out[i], now[i] = found
                        total += found[1] - before
                        changed = True
                    # the largest first, by their size now
                    indices.sort(key=lambda i: (-now[i], i))
        return out if changed else None

    def _emptied(
        self,
        stages: list[_Stage],
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
        if any(floor is not None for _, floor, _ in stages):
            return {}  # the task's floors: what they keep depends on the limit, not the aim
        aim = max((a for _, _, a in stages), default=0)
        indices = [i for stage in stages for i in stage[0]]
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
