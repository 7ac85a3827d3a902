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
3. the newest tool output, down to the limit: it keeps its head and tail here;
4. every other protected message but the task and the person's (contents, then the longest
   string values anywhere in tool-call arguments, so the JSON stays valid; arguments that are
   not JSON are cut as text), then the person's filler and goals, then our notes by whole
   lines from their lowest-priority end, down to their header;
5. the arguments of calls whose result is shown whole (a ``Write``'s content beside its
   "ok"), only while the request is still over the limit;
6. the task, down to ``task_share`` of the limit;
7. the newest tool outputs, their own head and tail given up: the request fitting comes first;
8. the person's messages, by whole sentences (``_fit_units``), then our notes' headers;
9. the task, to its head and tail (``task_min_tokens``).

Our notes and the person's messages are never cut mid-line or mid-sentence (a label parted
from its value is worse than either gone), and what whole units freed past the aim goes back
to them.

**What identifies a step is never cut.** A tool-call argument value shorter than
``ARG_FLOOR`` (300 characters: every path, id,
name, URL and pattern of the real transcripts, nine commands in ten) stays whole in every
pass; the arguments of a call whose result the model is shown whole are cut only by step 5;
a value that is cut keeps its head (and tail) around a marker, as a cut result does. And when
even emptying what a group may cut cannot bring the request to its aim while it already fits
the limit (the newest step alone is over the target), a cut is taken only where it frees a
tenth of what is still to free: a few tokens of a placeholder or of a short value move the
request toward an aim it misses anyway, and cost what the model reads a step by.

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

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Final

from ..memory.trace import CUT_MARKER
from ..memory.transcript import is_note, is_person_written, parse, provenance
from ..messages import Message, ToolCall
from ..strategy import Capabilities, Strategy
from ..tokens import TokenCounter
from ..validate import validate
from ._fit_args import ARG_FLOOR, SHORT_MARKER
from ._fit_cut import Stage, _Cuts
from ._fit_reads import _guarded, _Known, _newest_outputs, _text_tokens, _was_cut
from ._fit_units import is_paste

__all__ = ["ARG_FLOOR", "CUT_MARKER", "Fit"]

#: When cutting all that a group may cut cannot bring the request to its aim, and the request
#: already fits its hard limit, a cut is taken only if it frees at least a tenth of what is
#: still to free. Such a cut only moves the request toward an aim it misses anyway, while it
#: costs the text it removes (and the cached prefix the provider holds for the messages after
#: it); a tenth is a cut the next compaction feels, and leaves alone the few tokens of a
#: placeholder or a short value that a model reads a step by.
_MEANINGFUL: Final = 10


def _check(option: str, value: Any, low: float, high: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"Fit {option} must be a number, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        upper = f" and <= {high}" if high is not None else ""
        raise ValueError(f"Fit {option} must be >= {low}{upper}, got {value}")


class Fit(_Cuts, Strategy):
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
            "hard limit, the system prompt only when it alone is over it; argument values "
            f"under {ARG_FLOOR} characters are never cut."
        )

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
        tried: set[tuple[int, int, str, int, bool, str | None]] = set()
        # The cuts made, by what they were made from: the stage of the calls' arguments
        # (``loose``) asks again for cuts an earlier stage made when none of the message's
        # calls is held back there, and a cut is the same cut, whatever the stage.
        shrunk: dict[tuple[int, int, str, int, tuple[int, ...]], tuple[Message, int] | None] = {}
        whole_cuts: dict[int, str] = {}
        pastes: dict[int, bool] = {}

        def pasted(i: int) -> bool:
            if i not in pastes:
                pastes[i] = is_paste(messages[i].content)
            return pastes[i]

        answers = _answers(messages)

        def text_tokens(i: int) -> int:
            if i not in sizes:
                sizes[i] = _text_tokens(messages[i], counter)
            return sizes[i]

        def largest(indices: Iterable[int]) -> list[int]:
            return sorted(indices, key=lambda i: (-now[i], i))

        def whole(call: ToolCall) -> bool:
            """Whether the model is shown ``call``'s result as it came (so the call, which
            says what that result is of, is not cut)."""
            j = answers.get(call.id)
            return j is not None and out[j] is messages[j] and not _was_shortened(messages[j])

        free = [i for i in inner if i not in guarded]
        kept = [i for i in inner if i in guarded and i != task]
        calls = [i for i in inner if out[i].tool_calls]
        # Our own notes are cut by whole lines from their lowest-priority end, the person's
        # messages by whole sentences and only after tool output and the assistant's text:
        # a cut in their middle parts a value from what it is the value of.
        notes = {i for i in inner if is_note(out[i]) and not out[i].tool_calls}
        persons = {i for i in inner if is_person_written(out[i]) and not out[i].tool_calls}
        ours = notes | persons

        def other(indices: list[int]) -> list[int]:
            return largest(i for i in indices if out[i].role != "tool" and i not in ours)

        # Stages come in groups, and a group is cut through every pass before the next group
        # is touched: what is droppable is cut to nothing before anything protected gives a
        # token.
        groups: list[list[Stage]] = [
            [
                Stage(largest(i for i in free if out[i].role == "tool"), None, target),
                Stage(other(free), None, target),
                Stage(largest(i for i in free if i in notes), None, target, unit="line"),
                Stage(largest(i for i in free if i in persons), None, target, unit="sentence"),
            ],
            # What is protected gives only what the hard limit demands: the newest tool
            # output first (it keeps its head and tail), then every other protected message
            # but the person's, then the person's filler sentences, then our notes down to
            # their header.
            [
                Stage(largest(i for i in kept if out[i].role == "tool"), None, hard),
                Stage(other(kept), None, hard),
                Stage(largest(i for i in kept if i in persons), None, hard, unit="filler"),
                Stage(largest(i for i in kept if i in notes), None, hard, unit="line"),
            ],
            # Then the arguments of calls whose result is shown whole (a ``Write``'s content
            # beside its "ok"): only while the request is still over the limit.
            [Stage(largest(calls), None, hard, loose=True)],
        ]
        if task is not None:
            # The task, down to its share and then to its head and tail (losing the task is
            # how an agent forgets what it was asked to do); between the two, the newest
            # outputs give up their own head and tail, then the person's other messages
            # their sentences, then our notes their header: the request fitting outranks them.
            share = max(int(hard * self.task_share), self.min_tokens)
            groups.append([Stage([task], share, hard)])
        groups.append([Stage(largest(newest), None, hard, bare=True)])
        said = largest(i for i in kept if i in persons)
        groups.append([Stage(said, None, hard, unit="sentence")])
        groups.append([Stage(largest(i for i in kept if i in notes), None, hard, unit="line0")])
        if task is not None:
            groups.append([Stage([task], self.task_min_tokens, hard)])
        system = messages[: t.system_end]
        if sum(now[: t.system_end]) > hard or any(_was_cut(m) for m in system):
            # The system prompt only when it alone is over the limit (or was, when an earlier
            # run cut it: the agent's list carries the cut, and the rest grows behind it).
            # It must give then whatever else gives, so it gives first: the task and the
            # newest step stay whole when its cut is enough.
            groups.insert(1, [Stage(largest(range(t.system_end)), None, hard)])
        original = list(now)
        changed = False
        # A second, tight pass only when the marked cuts could not fit (tiny targets), and a
        # last one that leaves a message's text empty (the cut is still recorded in its meta)
        # when even the short markers are too many for what is left.
        passes = ((CUT_MARKER, self.min_tokens), (SHORT_MARKER, 0), ("", 0))
        for stages in groups:
            aim = max(stage.aim for stage in stages)
            # Sparing: when even emptying the whole group cannot bring the request to its aim
            # (the rest alone is over it), a cut only moves the request toward an aim it will
            # miss anyway; it is taken only where the request is over the hard limit or where
            # it frees a meaningful share of what is still to free (``_MEANINGFUL``).
            sparing = sum(now[i] for stage in stages for i in stage.indices) < total - aim
            if not (sparing and total <= hard):
                done = self._emptied(
                    stages, now, messages, total, newest, counter, text_tokens, known
                )
                for i, (emptied, n) in done.items():
                    total += n - now[i]
                    out[i], now[i] = emptied, n
                    changed = True
                    tried.add((i, 0, "", 0, False, None))
            else:
                done = {}
            for marker, least_default in passes:
                for stage in stages:
                    for i in stage.indices:
                        if i in done:
                            continue
                        need = total - stage.aim
                        if need <= 0:
                            break
                        spare = sparing and total <= hard
                        before = now[i]
                        if spare and before * _MEANINGFUL < need:
                            continue  # even emptied, it would not free enough
                        least = stage.floor if stage.floor is not None else least_default
                        unit = stage.unit
                        if unit in ("sentence", "filler") and pasted(i):
                            if unit == "filler":
                                continue  # a paste gives in the person's own stage
                            unit = None  # a paste is not a list of statements
                        mark_with = marker
                        if i == task or (i in newest and not stage.bare):
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
                        key = (i, want, mark_with, least, stage.loose, unit)
                        if key in tried:
                            continue
                        tried.add(key)
                        # Always cut from the message as it came in: a tighter pass re-cuts
                        # the original with its shorter marker, never a cut (and its marker).
                        if unit is not None:
                            found = self._whole(
                                messages[i],
                                want,
                                counter,
                                mark_with,
                                unit,
                                text_tokens(i),
                                known,
                                original[i],
                            )
                        else:
                            its_calls = messages[i].tool_calls
                            held = (
                                ()
                                if stage.loose
                                else tuple(n for n, call in enumerate(its_calls) if whole(call))
                            )
                            made = (i, want, mark_with, least, held)
                            if made in shrunk:
                                found = shrunk[made]
                            else:
                                found = shrunk[made] = self._shrink(
                                    messages[i],
                                    want,
                                    counter,
                                    mark_with,
                                    least,
                                    text_tokens(i),
                                    known,
                                    original[i],
                                    (lambda call: True)
                                    if stage.loose
                                    else (lambda call: not whole(call)),
                                )
                        if found is None or found[1] >= before:
                            continue
                        if spare and (before - found[1]) * _MEANINGFUL < need:
                            continue
                        out[i], now[i] = found
                        total += found[1] - before
                        changed = True
                        if unit is not None:
                            whole_cuts[i] = "sentence" if i in persons else "line"
                    # the largest first, by their size now
                    stage.indices.sort(key=lambda i: (-now[i], i))
        if whole_cuts:
            # Whole units free a sentence or a line at a time, and a later stage may have
            # freed what an earlier one gave for nothing: what is left under the aim goes
            # back, the person's messages first (newest first), then our notes.
            room = (target if total <= target else hard) - total
            order = sorted(whole_cuts, key=lambda i: (i not in persons, -i))
            self._give_back(
                order, whole_cuts, room, out, now, messages, counter, text_tokens, known
            )
        return out if changed else None


def _answers(messages: Sequence[Message]) -> dict[str, int]:
    """The index of the result answering each tool call, by call id."""
    return {
        m.tool_call_id: i
        for i, m in enumerate(messages)
        if m.role == "tool" and m.tool_call_id is not None
    }


def _was_shortened(message: Message) -> bool:
    """Whether ``message`` came in shortened already (a placeholder, an earlier cut)."""
    record = provenance(message)
    return record is not None and record.get("kind") in ("placeholder", "truncated")
