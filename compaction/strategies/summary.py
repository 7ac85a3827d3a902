"""Summary: the terminal. Stretches of the conversation give way to summaries of them.

It is the only strategy that may spend a model call, so it sits at the bottom of the ladder and
is reached only when the free layers could not get under target. It works in rounds until the
conversation fits or nothing more may be given up, and each round gives up as little as it can,
in this order:

1. the oldest whole historical turns (never the system block, never the task anchor);
2. when only summaries are left of the history, the oldest summaries, combined (two at least);
3. the oldest steps of the current task, keeping the newest ``keep_steps``;
4. the current task's own summaries, combined.

Within a region raw messages are summarised before summaries are combined. "As little as it
can" is decided without calling the summariser: the stretch taken is the shortest one (from
the oldest end) whose replacement by a summary of the expected size would reach target, or the
whole region when none would. One summariser call per round.

A summary takes the place of the oldest message it replaces, as a ``user`` message (every
provider accepts one anywhere after the system block), with its provenance in ``meta`` (see
:func:`compaction.transcript.mark`), so it is never taken for the task anchor.

Failure never costs the conversation (LangChain's summary failure wipes history): a round whose
summariser raises, times out, answers nothing, or answers something no smaller than what it
replaces ends the loop, and the last good round's conversation is answered. When the first
round failed there is nothing to answer, and the failure is raised to the pipeline, which keeps
the conversation and shows it where users look (``result.failures``, the ``failed`` event),
never as a quiet decline. The timeout is a deadline for the whole call: a late answer is
dropped, and a summariser left running does not keep the program alive. After ``max_failures``
failed runs in a row the breaker opens and the summariser is not called again until
:meth:`Summary.reset`, so a broken endpoint is not paid every turn.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs

from .. import events
from .._log import log
from .._text import plural
from ..messages import Message
from ..strategy import Capabilities, Run, Strategy, current_labels
from ..summarizers.base import (
    INSTRUCTIONS,
    SummarizerError,
    is_async_summarizer,
    render_transcript,
    stands_for,
    summarizer_name,
)
from ..summarizers.deadline import (
    await_with_deadline,
    call_with_deadline,
    check_timeout,
    in_daemon_thread,
)
from ..summarizers.extractive import ExtractiveSummarizer
from ..tokens import TokenCounter
from ..transcript import Group, Transcript, mark, parse, provenance

__all__ = ["Recall", "Summary"]

#: Set on a summariser's exception that the round already reported, before it is raised.
_REPORTED = "_compaction_reported"

#: Tokens a summary costs whatever it summarises (its header and section titles).
_SUMMARY_OVERHEAD = 32

#: A recall source: the original message a recall id names, or None (``Session.recall``).
Recall = Callable[[str], "Message | None"]
#: The kinds of rewritten message summarised from their original when it can be recalled.
_RECALLED = frozenset({"placeholder", "truncated"})


@attrs.frozen
class _Round:
    """One planned replacement: ``messages[start:end]`` becomes one summary."""

    region: str
    start: int
    end: int
    messages: tuple[Message, ...]

    @property
    def replaced(self) -> tuple[Message, ...]:
        return self.messages[self.start : self.end]

    def apply(self, summary: Message) -> tuple[Message, ...]:
        return (*self.messages[: self.start], summary, *self.messages[self.end :])


def _check_int(option: str, value: Any, minimum: int, why: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"Summary {option} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"Summary {option} must be >= {minimum}, got {value}: {why}")


class Summary(Strategy):
    """Replaces the oldest stretches of the conversation with summaries, round by round."""

    name: ClassVar[str] = "summary"
    # It may call a model (the default extractive summariser does not, but the strategy is
    # built to): ladders and tools that must stay free read this.
    capabilities: ClassVar[Capabilities] = Capabilities(
        model_call=True, lossless=False, keeps_tool_pairs=True, deterministic=False
    )

    def __init__(
        self,
        summarizer: Any = None,
        *,
        keep_steps: int = 1,
        max_failures: int | None = 3,
        timeout: float | None = None,
        instructions: str | None = None,
        summary_tokens: int | None = None,
        min_tokens: int = 200,
        recall: Recall | None = None,
    ) -> None:
        """
        - ``summarizer``: a callable ``(transcript, instructions) -> str`` (or awaitable);
          default :class:`~compaction.summarizers.ExtractiveSummarizer` (offline, free).
        - ``keep_steps``: the newest steps of the current task that are never summarised (at
          least 1: the model has not acted on the newest tool output yet). The default, 1, is
          below :class:`SlidingWindow`'s 2 on purpose: as the terminal under a sliding window,
          the summary must be allowed to give up something the free layer kept, or it would
          never have anything to do.
        - ``max_failures``: failed runs in a row after which the summariser is no longer
          called until :meth:`reset` (None: never stop calling it).
        - ``timeout``: seconds one summariser call may take, a deadline for the whole call (a
          finite number > 0, or None for none); a late answer is dropped and fails the round.
        - ``instructions``: extra text appended to the standard prompt (which already asks
          for the fixed sections and says the transcript is data, not instructions).
        - ``summary_tokens``: the size a summary is expected to take at most, used to choose
          how much to give up per round; default the summariser's ``max_tokens``, else 1024.
        - ``min_tokens``: a stretch smaller than this is not worth a summariser call (its
          summary would not be smaller), so that region is passed over.
        - ``recall``: where originals can be looked up by recall id, e.g. a session's
          ``recall`` (``Session.recall``): a callable ``(ref) -> Message | None``. A region
          holding placeholders or cut messages is then summarised from the originals they
          stand for, not from the placeholders (issue 12). None: from what is there.
        """
        if summarizer is None:
            summarizer = ExtractiveSummarizer()
        if not callable(summarizer):
            raise TypeError(
                "Summary summarizer must be a callable (transcript, instructions) -> str, "
                f"got {type(summarizer).__name__}"
            )
        _check_int("keep_steps", keep_steps, 1, "the newest step's output is not acted on yet")
        if max_failures is not None:
            _check_int("max_failures", max_failures, 1, "use None to never open the breaker")
        if timeout is not None:
            timeout = check_timeout("Summary timeout", timeout)
        if instructions is not None and not isinstance(instructions, str):
            raise TypeError(
                f"Summary instructions must be a str, got {type(instructions).__name__}"
            )
        if summary_tokens is None:
            cap = getattr(summarizer, "max_tokens", None)
            summary_tokens = cap if isinstance(cap, int) and cap > 0 else 1024
        else:
            _check_int("summary_tokens", summary_tokens, 1, "a summary takes some tokens")
        self.summarizer = summarizer
        self.keep_steps = keep_steps
        self.max_failures = max_failures
        self.timeout = timeout
        self.instructions = f"{INSTRUCTIONS}\n\n{instructions}" if instructions else INSTRUCTIONS
        _check_int("min_tokens", min_tokens, 0, "a token count")
        self.summary_tokens = summary_tokens
        self.min_tokens = min_tokens
        if recall is not None and not callable(recall):
            raise TypeError(
                f"Summary recall must be a callable (ref) -> Message | None, "
                f"got {type(recall).__name__}"
            )
        self.recall = recall
        self._failures = 0

    # -- the breaker ---------------------------------------------------------------------------

    @property
    def failures(self) -> int:
        """Failed runs in a row so far (a run with at least one good round resets it)."""
        return self._failures

    @property
    def breaker_open(self) -> bool:
        """True when the summariser is no longer called (until :meth:`reset`)."""
        return self.max_failures is not None and self._failures >= self.max_failures

    def reset(self) -> None:
        """Close the breaker: the summariser is called again on the next run."""
        self._failures = 0

    @property
    def is_async(self) -> bool:
        """True when the summariser can only be awaited: use ``acompact`` with it."""
        # An ``acall`` serves the async path only: a summariser whose own call is a coroutine
        # still cannot be used by ``compact``.
        return is_async_summarizer(self.summarizer)

    @property
    def summarizer_name(self) -> str:
        return summarizer_name(self.summarizer)

    # -- the seed-000 protocol -----------------------------------------------------------------

    def explain(self) -> str:
        breaker = (
            f"; after {plural(self.max_failures, 'failed run')} in a row it stops calling it "
            "until reset"
            if self.max_failures is not None
            else ""
        )
        return (
            f"Summarises the oldest turns, then combines old summaries, then the current "
            f"task's oldest steps (keeping the newest {self.keep_steps}) with the "
            f"{self.summarizer_name} summariser, until under target{breaker}."
        )

    def can_handle(self, messages: Sequence[Message]) -> float:
        if self.breaker_open:
            return 0.0
        return super().can_handle(messages)

    def __repr__(self) -> str:
        return (
            f"Summary(summarizer={self.summarizer!r}, keep_steps={self.keep_steps}, "
            f"max_failures={self.max_failures}, timeout={self.timeout})"
        )

    # -- planning ------------------------------------------------------------------------------

    def _expected(self, tokens: int) -> int:
        return min(self.summary_tokens, tokens // 4) + _SUMMARY_OVERHEAD

    def _shortest(
        self, runs: Sequence[Sequence[Group]], counts: Sequence[int], over: int, least: int
    ) -> int:
        """How many of ``runs`` (oldest first) to give up: the fewest (at least ``least``)
        whose replacement by a summary of the expected size saves ``over`` tokens; all of
        them when none would."""
        total = 0
        for n, run in enumerate(runs, 1):
            total += sum(counts[run[0].start : run[-1].end])
            if n >= least and total >= self.min_tokens and total - self._expected(total) >= over:
                return n
        return len(runs)

    def _plan(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> _Round | None:
        """The next round: which messages one summary would replace, or None (nothing may be
        given up, or already under target)."""
        counts = [counter.count(m) for m in messages]
        over = sum(counts) - target
        if over <= 0:
            return None
        t = parse(messages)
        # Without a task anchor everything is history, but the newest steps are still what the
        # model acts on next: they stay, as they would in the current task.
        limit = len(messages)
        if t.anchor is None and t.groups:
            limit = t.groups[self._protected(t.groups)].start
        # History, in pieces: a note on its own, and the raw groups of each turn.
        pieces: list[Sequence[Group]] = []
        protected = {t.groups[i].start for i in t.protected}
        for whole in t.turns():
            unit = tuple(g for g in whole if g.start < limit)
            if not unit:
                continue
            head, rest = (unit[:1], unit[1:]) if unit[0].kind == "note" else ((), unit)
            if head:
                pieces.append(list(head))
            # The task and pinned messages are never summarised: they split a turn, and an
            # empty piece stands between the parts so that no run spans them.
            part: list[Group] = []
            for group in rest:
                if group.start in protected:
                    if part:
                        pieces.append(part)
                    pieces.append([])
                    part = []
                else:
                    part.append(group)
            if part:
                pieces.append(part)
        raw_runs = _raw_runs(pieces)
        raw = self._worth(raw_runs, counts)
        if not raw_runs:
            combine = _note_run(pieces)
        elif not raw and any(p and p[0].kind == "note" for p in pieces):
            # What is left of old turns between summaries is too small to be worth a call of
            # its own: combine it with the summaries around it rather than stop over target.
            combine = _unbroken(pieces)
        else:
            combine = []
        kept = protected
        tiers = (
            ("history", raw, 1),
            ("history_summaries", combine, 2),
            ("current", _raw_run(self._current_pieces(t)), 1),
            # a protected message stands between as an empty piece: no run spans it
            (
                "current_summaries",
                _note_run([[g] if g.start not in kept else [] for g in t.current]),
                2,
            ),
        )
        for region, runs, least in tiers:
            if len(runs) < least:
                continue
            start, end = runs[0][0].start, runs[-1][-1].end
            if sum(counts[start:end]) < self.min_tokens:
                continue
            n = self._shortest(runs, counts, over, least)
            return _Round(region, start, runs[n - 1][-1].end, messages)
        return None

    def _current_pieces(self, t: Transcript) -> list[list[Group]]:
        current = list(t.current)
        steps = [i for i, g in enumerate(current) if g.kind != "note"]
        protected = set(steps[-self.keep_steps :])
        pinned = {t.groups[i].start for i in t.pinned}
        return [
            [g] if g.start not in pinned else []
            for i, g in enumerate(current)
            if i not in protected
        ]

    def _protected(self, groups: Sequence[Group]) -> int:
        """Index of the first of the newest ``keep_steps`` steps of ``groups`` (0 if fewer)."""
        seen = 0
        for index in range(len(groups) - 1, -1, -1):
            if groups[index].kind != "note":
                seen += 1
                if seen == self.keep_steps:
                    return index
        return 0

    def _worth(
        self, runs: Sequence[list[Sequence[Group]]], counts: Sequence[int]
    ) -> list[Sequence[Group]]:
        """The oldest of ``runs`` big enough to be worth a summariser call (else none)."""
        for run in runs:
            if sum(counts[run[0][0].start : run[-1][-1].end]) >= self.min_tokens:
                return run
        return []

    # -- one round -----------------------------------------------------------------------------

    def _summary_message(self, plan: _Round, answer: Any, counter: TokenCounter) -> Message:
        if not isinstance(answer, str):
            raise SummarizerError(
                f"summariser {self.summarizer_name} answered {type(answer).__name__}, not text"
            )
        text = answer.strip()
        if not text:
            raise SummarizerError(f"summariser {self.summarizer_name} answered empty text")
        replaced = plan.replaced
        # Counted as the summariser was shown them (notes and summaries as what they stand
        # for), so the header agrees with what the summary says it covers.
        count = sum(stands_for(m) for m in replaced)
        content = f"[Summary of {plural(count, 'earlier message')}]\n{text}"
        summary = mark(
            Message("user", content),
            strategy=self.name,
            kind="summary",
            replaces=replaced,
            summarizer=self.summarizer_name,
            region=plan.region,
            stands_for=count,
        )
        before, after = counter.count_messages(replaced), counter.count(summary)
        if after >= before:
            raise SummarizerError(
                f"summary ({after} tokens) is not smaller than the "
                f"{plural(len(replaced), 'message')} it would replace ({before} tokens)"
            )
        return summary

    def _report(
        self,
        transcript: str,
        answer: Any,
        started: float,
        counter: TokenCounter,
        error: BaseException | None,
    ) -> None:
        seconds = time.monotonic() - started
        labels = current_labels()
        input_tokens = counter.count_text(self.instructions) + counter.count_text(transcript)
        output_tokens = counter.count_text(answer) if isinstance(answer, str) else 0
        events.summarized.send(
            self,
            name=self.name,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            seconds=seconds,
            ok=error is None,
            error=error,
            labels=labels,
        )
        if error is not None:
            log.warning(
                "summary.failed",
                summarizer=self.summarizer_name,
                error=repr(error),
                seconds=seconds,
                labels=dict(labels),
            )
            events.failed.send(self, name=self.name, error=error, stage="summarize", labels=labels)
        else:
            log.debug(
                "summary.summarized",
                summarizer=self.summarizer_name,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                seconds=seconds,
                labels=dict(labels),
            )

    def _settle(self, called: bool, good: tuple[Message, ...] | None) -> None:
        if good is not None:
            self._failures = 0
        elif called:
            self._failures += 1
            if self.breaker_open:
                log.warning(
                    "summary.breaker_open",
                    summarizer=self.summarizer_name,
                    failures=self._failures,
                    labels=dict(current_labels()),
                )

    def _closed(self) -> bool:
        if self.breaker_open:
            log.info(
                "summary.skipped",
                reason="breaker_open",
                failures=self._failures,
                labels=dict(current_labels()),
            )
            return False
        return True

    # -- the rounds: sync ----------------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        if self.is_async:
            # A programming error, not a summariser failure: it does not count for the breaker.
            raise TypeError(
                f"Summary's summariser {self.summarizer_name} is async; run the ladder with "
                "`await pipeline.acompact(...)` instead of `compact(...)`"
            )
        if not self._closed():
            return None
        current, good, called, error = messages, None, False, None
        while (plan := self._plan(current, target=target, counter=counter)) is not None:
            called = True
            summary, error = self._round_sync(plan, counter)
            if summary is None:
                break
            current = good = plan.apply(summary)
        self._settle(called, good)
        return self._answer(good, error)

    def _answer(
        self, good: tuple[Message, ...] | None, error: BaseException | None
    ) -> tuple[Message, ...] | None:
        if good is None and error is not None:
            # Nothing taken because the summariser failed: that is a failure, not a decline
            # (a dead endpoint must not read as reason="declined", error=None). The pipeline
            # keeps the conversation and records it with its error in result.failures.
            # Marked on the exception itself, not on this strategy: one Summary may serve
            # several runs at once.
            with contextlib.suppress(AttributeError, TypeError):
                setattr(error, _REPORTED, True)
            raise error
        return good

    def _failed(self, run: Run, exc: BaseException, stage: str) -> None:
        # The round reported this failure as it happened (``summarized`` and ``failed`` with
        # stage "summarize"); the pipeline's report of the same exception would count it twice.
        if getattr(exc, _REPORTED, False):
            return
        super()._failed(run, exc, stage)

    def _source(self, replaced: Sequence[Message]) -> list[Message]:
        """What the summariser reads for ``replaced``: each placeholder or cut message as the
        original it stands for, when ``recall`` has it (a failing lookup keeps what is there:
        a summary of a placeholder beats no summary)."""
        if self.recall is None:
            return list(replaced)
        out: list[Message] = []
        for message in replaced:
            record = provenance(message)
            refs = record.get("replaces") if record is not None else None
            original = None
            if record is not None and record.get("kind") in _RECALLED and refs and len(refs) == 1:
                try:
                    found = self.recall(str(refs[0]))
                except Exception as exc:  # a lookup is a convenience, never a failure
                    log.warning("summary.recall_failed", ref=refs[0], error=repr(exc))
                    found = None
                if isinstance(found, Message):
                    original = found
            out.append(original if original is not None else message)
        return out

    def _round_sync(
        self, plan: _Round, counter: TokenCounter
    ) -> tuple[Message | None, BaseException | None]:
        transcript = render_transcript(self._source(plan.replaced))
        started = time.monotonic()
        answer: Any = None
        try:
            args = (transcript, self.instructions)
            if self.timeout is None:
                answer = self.summarizer(*args)
            else:
                what = f"summariser {self.summarizer_name}"
                answer = call_with_deadline(self.summarizer, args, self.timeout, what)
            if inspect.isawaitable(answer):
                if inspect.iscoroutine(answer):
                    answer.close()  # never awaited: close it so no warning leaks
                answer = None
                raise TypeError(
                    f"summariser {self.summarizer_name} answered an awaitable; use acompact"
                )
            summary = self._summary_message(plan, answer, counter)
        except Exception as exc:
            self._report(transcript, answer, started, counter, exc)
            return None, exc
        self._report(transcript, answer, started, counter, None)
        return summary, None

    # -- the rounds: async ---------------------------------------------------------------------

    async def arewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        if not self._closed():
            return None
        current, good, called, error = messages, None, False, None
        while (plan := self._plan(current, target=target, counter=counter)) is not None:
            called = True
            summary, error = await self._round_async(plan, counter)
            if summary is None:
                break
            current = good = plan.apply(summary)
        self._settle(called, good)
        return self._answer(good, error)

    async def _ask(self, transcript: str) -> Any:
        summarizer = self.summarizer
        acall = getattr(summarizer, "acall", None)
        if acall is not None and inspect.iscoroutinefunction(acall):
            answer = await acall(transcript, self.instructions)
        elif is_async_summarizer(summarizer):
            answer = await summarizer(transcript, self.instructions)
        else:
            # A sync summariser may block on I/O: keep the event loop free meanwhile, in a
            # daemon thread (not the loop's executor, which asyncio.run waits for on exit).
            answer = await in_daemon_thread(summarizer, transcript, self.instructions)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    async def _round_async(
        self, plan: _Round, counter: TokenCounter
    ) -> tuple[Message | None, BaseException | None]:
        transcript = render_transcript(self._source(plan.replaced))
        started = time.monotonic()
        answer: Any = None
        try:
            if self.timeout is None:
                answer = await self._ask(transcript)
            else:
                what = f"summariser {self.summarizer_name}"
                answer = await await_with_deadline(self._ask(transcript), self.timeout, what)
            summary = self._summary_message(plan, answer, counter)
        except Exception as exc:
            self._report(transcript, answer, started, counter, exc)
            return None, exc
        self._report(transcript, answer, started, counter, None)
        return summary, None


def _raw_run(pieces: Sequence[Sequence[Group]]) -> list[Sequence[Group]]:
    """The oldest contiguous run of pieces that are not notes."""
    out: list[Sequence[Group]] = []
    for piece in pieces:
        if not piece:  # a protected message: no run spans it
            if out:
                break
            continue
        raw = piece[0].kind != "note"
        if raw:
            out.append(piece)
        elif out:
            break
    return out


def _unbroken(pieces: Sequence[Sequence[Group]]) -> list[Sequence[Group]]:
    """The oldest run of pieces that no protected message breaks."""
    out: list[Sequence[Group]] = []
    for piece in pieces:
        if piece:
            out.append(piece)
        elif out:
            break
    return out


def _raw_runs(pieces: Sequence[Sequence[Group]]) -> list[list[Sequence[Group]]]:
    """Every contiguous run of pieces that are not notes, oldest first."""
    out: list[list[Sequence[Group]]] = []
    run: list[Sequence[Group]] = []
    for piece in pieces:
        if not piece:  # a protected message: no run spans it
            if run:
                out.append(run)
                run = []
            continue
        if piece[0].kind != "note":
            run.append(piece)
        elif run:
            out.append(run)
            run = []
    if run:
        out.append(run)
    return out


def _note_run(pieces: Sequence[Sequence[Group]]) -> list[Sequence[Group]]:
    """The oldest contiguous run of notes, when it has two or more (else none)."""
    out: list[Sequence[Group]] = []
    for piece in pieces:
        if piece and piece[0].kind == "note":
            out.append(piece)
        elif len(out) >= 2:
            break
        else:
            out = []
    return out if len(out) >= 2 else []
