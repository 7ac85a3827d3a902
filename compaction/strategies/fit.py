"""Fit ("fit"): the last resort. Every request fits whenever the system prompt does.

When the protected part alone (the system block, the task, the newest request, pinned messages,
the newest steps) is over target, no layer above may give anything more up: they only drop or
summarise what is not protected. Sending the request anyway is a provider 400, the worst
outcome. So this layer *cuts* (never drops) the largest protected messages in their middle,
keeping head and tail (the head holds the request, the tail the error or the conclusion), in
this order, each only as far as still needed:

1. tool outputs, largest first (in practice the oversized newest one: the older ones are gone);
2. the original task, down to ``task_share`` of the target (a task at most that big stays
   verbatim);
3. every other non-system message, largest first (contents, and the longest string values of
   tool-call arguments, so the call's JSON stays valid);
4. the task again, down to the floor;
5. the system block, only when all of the above could not make it fit (it alone is over).

Each cut is marked in the text with how much was cut and the recall id of the original (a
session's ``recall`` finds it), and recorded in ``meta["compaction"]`` (kind ``"truncated"``,
``original_chars``, ``kept_chars``), so the message is still the same message: a cut task stays
the task.

It is a layer placed *last* in the ladder (the terminal, or after it), and needs nothing from
the pipeline: the rules hold as for any layer (asked only while over target, taken only when
smaller), so it runs only when every layer above left the conversation over target, and never
costs the verbatim text of a protected message while a cheaper loss was possible. A caller who
prefers an over-target request to a cut one leaves it out (``strict_floor=True`` on
:class:`~compaction.trigger.Compactor` and :func:`~compaction.trigger.default_pipeline`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Final

from ..messages import Message, ToolCall
from ..strategy import Capabilities, Strategy
from ..tokens import TokenCounter
from ..trace import CUT_MARKER, cut_middle, original_chars
from ..transcript import mark, message_ref, parse, provenance
from ..validate import validate

__all__ = ["CUT_MARKER", "Fit"]

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
        - ``task_share``: the share of the target the task keeps before anything else but tool
          output is cut (a task at most this big stays verbatim while the rest can give).
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
            "Last resort: cuts the largest protected messages in their middle (tool output "
            f"first, then the task down to {self.task_share:.0%} of the target, then the rest; "
            "the system prompt only when it alone is over), keeping head and tail and marking "
            "each cut with a recall id, until the request fits."
        )

    # -- cutting one text ----------------------------------------------------------------------

    def _shrink_text(
        self, text: str, want: int, ref: str, counter: TokenCounter, marker: str
    ) -> str | None:
        return cut_middle(text, want, ref, counter, marker)

    def _shrink(
        self, message: Message, want: int, counter: TokenCounter, marker: str, least: int
    ) -> Message | None:
        """``message`` cut to about ``want`` tokens: its content first, then the longest
        string values of its tool-call arguments."""
        current = counter.count(message)
        if current <= want:
            return None
        ref = _original_ref(message)
        new = message
        over = current - want
        text = message.content
        if text:
            text_tokens = counter.count_text(text)
            goal = max(text_tokens - over, least)
            cut = self._shrink_text(text, goal, ref, counter, marker)
            if cut is not None:
                new = new.replace(content=cut)
        need = counter.count(new) - want
        if message.tool_calls and need > 0:
            calls = []
            for call in message.tool_calls:
                shrunk, need = self._shrink_call(call, need, ref, counter, marker, least)
                calls.append(shrunk)
            new = new.replace(tool_calls=tuple(calls))
        if new is message:
            return None
        original = original_chars(message)
        out = mark(
            new,
            strategy=self.name,
            kind="truncated",
            replaces=[message],
            original_chars=original,
            kept_chars=len(new.content),
        )
        return out if counter.count(out) < current else None

    def _shrink_call(
        self, call: ToolCall, need: int, ref: str, counter: TokenCounter, marker: str, least: int
    ) -> tuple[ToolCall, int]:
        """``call`` with its longest string arguments cut in the middle by about ``need``
        tokens in all (the JSON stays valid), and what is still needed after it."""
        if need <= 0:
            return call, need
        try:
            args = json.loads(call.arguments) if call.arguments else None
        except ValueError:
            args = None
        if not isinstance(args, dict):
            return call, need
        longest = sorted(
            (k for k, v in args.items() if isinstance(v, str)), key=lambda k: -len(args[k])
        )
        changed = False
        for key in longest[:3]:
            if need <= 0:
                break
            value = args[key]
            tokens = counter.count_text(value)
            cut = self._shrink_text(value, max(tokens - need, least), ref, counter, marker)
            if cut is not None:
                need -= tokens - counter.count_text(cut)
                args[key] = cut
                changed = True
        if not changed:
            return call, need
        return ToolCall(call.id, call.name, json.dumps(args, ensure_ascii=False)), need

    # -- the layer -----------------------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        validate(messages)
        out = list(messages)
        total = counter.count_messages(out)
        if total <= target:
            return None
        t = parse(messages)
        task = t.groups[t.task].start if t.task is not None else None
        inner = range(t.system_end, len(out))

        def largest(indices: Iterable[int]) -> list[int]:
            return sorted(indices, key=lambda i: (-counter.count(out[i]), i))

        stages: list[tuple[list[int], int | None]] = [
            (largest(i for i in inner if out[i].role == "tool"), None),
        ]
        if task is not None:
            stages.append(([task], max(int(target * self.task_share), self.min_tokens)))
        stages.append((largest(i for i in inner if out[i].role != "tool" and i != task), None))
        if task is not None:
            stages.append(([task], self.task_min_tokens))  # its head and tail always survive
        stages.append((largest(range(t.system_end)), None))
        changed = False
        # A second, tight pass only when the marked cuts could not fit (tiny targets), and a
        # last one that leaves a message's text empty (the cut is still recorded in its meta)
        # when even the short markers are too many for what is left.
        passes = ((CUT_MARKER, self.min_tokens), (SHORT_MARKER, 0), ("", 0))
        for marker, least_default in passes:
            for indices, floor in stages:
                for i in indices:
                    need = total - target
                    if need <= 0:
                        break
                    old = out[i]
                    before = counter.count(old)
                    least = floor if floor is not None else least_default
                    if i == task:
                        # The task's floor is of its own text: the marker comes on top.
                        least += _marker_tokens(messages[i], marker, counter)
                    want = max(before - need, least)
                    if want >= before:
                        continue
                    # Always cut from the message as it came in: a tighter pass re-cuts the
                    # original with its shorter marker, never a cut (and its marker) again.
                    new = self._shrink(messages[i], want, counter, marker, least)
                    if new is None or counter.count(new) >= before:
                        continue
                    out[i] = new
                    total += counter.count(new) - before
                    changed = True
                # the largest first, by their size now
                indices.sort(key=lambda i: (-counter.count(out[i]), i))
        return out if changed else None


def _marker_tokens(message: Message, marker: str, counter: TokenCounter) -> int:
    """What ``marker`` costs in a cut of ``message``."""
    if not marker:
        return 0
    return counter.count_text(marker.format(cut=len(message.content), ref=_original_ref(message)))


def _original_ref(message: Message) -> str:
    """The recall id of the original ``message`` stands for (itself when it is original)."""
    record = provenance(message)
    replaces = record.get("replaces") if record is not None else None
    if replaces:
        return str(replaces[0])
    return message_ref(message)
