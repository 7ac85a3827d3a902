"""Summary's rounds: calling the summariser for one planned stretch, and what comes of it.

Kept apart from [`compaction.strategies.summary`][] because this is the part that talks to
a model: it renders what a round replaces (from the originals, when they can be recalled),
calls the summariser sync or async under the deadline, checks the answer is a smaller
summary, and reports every call (``summarized``, and ``failed`` on failure) as it happens.
The strategy mixes ``_SummaryCalls`` in; it is not a strategy of its own.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from .. import events
from .._log import log
from .._text import plural
from ..memory.ledger import ledger_of
from ..memory.transcript import is_person_written, mark, provenance
from ..messages import Message
from ..strategy import current_labels
from ..summarizers.base import (
    SummarizerError,
    is_async_summarizer,
    render_transcript,
    stands_for,
    summarizer_name,
)
from ..summarizers.deadline import await_with_deadline, call_with_deadline, in_daemon_thread
from ..tokens import TokenCounter
from ._summary_plan import LEDGER_REGION, _Round
from ._summary_text import compose, summariser_view

#: A recall source: the original message a recall id names, or None (``Session.recall``).
Recall = Callable[[str], "Message | None"]


def _region(plan: _Round) -> str:
    """The region a summary is recorded under: a note or summary written again keeps its own."""
    if plan.region != LEDGER_REGION:
        return plan.region
    record = provenance(plan.replaced[0]) or {}
    region = record.get("region")
    return region if isinstance(region, str) else "history_summaries"


class NotSmaller(SummarizerError):
    """A summary no smaller than what it would replace: the layer declines (quietly: that is
    a normal outcome, not a failure of the summariser)."""


#: How a ledger's lines of the person's words open (see ``compaction.memory.note``).
_SAID = "The person said"
#: The kinds of rewritten message summarised from their original when it can be recalled.
_RECALLED = frozenset({"placeholder", "truncated"})


class _SummaryCalls:
    """The summariser-calling half of [`Summary`][compaction.strategies.summary.Summary] (a
    mixin)."""

    # Set by Summary (validated in its __init__); declared here for the type checker.
    name: ClassVar[str]
    summarizer: Any
    instructions: str
    timeout: float | None
    recall: Recall | None

    def _expected(self, tokens: int) -> int:  # the planner's (``_RoundPlanner``)
        raise NotImplementedError

    @property
    def summarizer_name(self) -> str:
        return summarizer_name(self.summarizer)

    def _summary_message(
        self, plan: _Round, answer: Any, counter: TokenCounter, *, own: bool = False
    ) -> Message:
        if not isinstance(answer, str):
            raise SummarizerError(
                f"summariser {self.summarizer_name} answered {type(answer).__name__}, not text"
            )
        text = answer.strip()
        if not text and not own:
            raise SummarizerError(f"summariser {self.summarizer_name} answered empty text")
        replaced = plan.replaced
        # Counted as the summariser was shown them (notes and summaries as what they stand
        # for), so the header agrees with what the summary says it covers.
        count = sum(stands_for(m) for m in replaced)
        # The same running ledger the other layers keep is written into the text, before the
        # summariser's prose and within the room the budget leaves (see ``_summary_text``):
        # the model reads the person's words verbatim whatever the summariser made of them.
        ledger = ledger_of(replaced)
        header = f"[Summary of {plural(count, 'earlier message')}]"
        before = counter.count_messages(replaced)
        room = plan.room(counter, before, self._expected(before))
        later = [m.content for m in plan.messages[plan.end :] if is_person_written(m)]
        # A model's prose is paid for: it keeps at least half the room (the person's rules
        # come first in the rest); the offline summariser's prose gives way to the ledger.
        paid = bool(getattr(self.summarizer, "model_call", True))
        composed = compose(
            header, ledger, text, room, counter, later=later, prose_share=0.5 if paid else 0.0
        )
        summary = mark(
            Message("user", composed.content),
            strategy=self.name,
            kind="summary",
            replaces=replaced,
            summarizer=self.summarizer_name,
            region=_region(plan),
            stands_for=count,
            facts=ledger.record(),
            prose_at=composed.prose_at,
        )
        after = counter.count(summary)
        if after >= before:
            raise NotSmaller(
                f"summary ({after} tokens) is not smaller than the "
                f"{plural(len(replaced), 'message')} it would replace ({before} tokens)"
            )
        return summary

    def _report(
        self,
        shown: str | Sequence[Message],
        answer: Any,
        started: float,
        counter: TokenCounter,
        error: BaseException | None,
    ) -> None:
        seconds = time.monotonic() - started
        labels = current_labels()
        # What the call cost in tokens is exact (the transcript as shown, encoded), and only
        # worth encoding for someone who reads it: the transcript may be as long as the rest
        # of the conversation, and with the offline summariser nobody is billed for it.
        input_tokens = output_tokens = 0
        if events.summarized.receivers or (error is None and log.writes("debug")):
            # ``shown``: the transcript, or the messages a block reader was given (rendered
            # only now, for the count).
            transcript = shown if isinstance(shown, str) else render_transcript(shown)
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
        if isinstance(error, NotSmaller):
            # A layer declining is a normal outcome, not a failure: at debug, never a warning.
            log.debug(
                "summary.declined",
                summarizer=self.summarizer_name,
                reason=str(error),
                labels=dict(labels),
            )
        elif error is not None:
            log.warning(
                "summary.failed",
                summarizer=self.summarizer_name,
                error=error,
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

    def _source(self, replaced: Sequence[Message]) -> list[Message]:
        """What the summariser reads for ``replaced``: each placeholder or cut message as the
        original it stands for, when ``recall`` has it (a failing lookup keeps what is there:
        a summary of a placeholder beats no summary)."""
        if self.recall is None:
            return [summariser_view(m) for m in replaced]
        out: list[Message] = []
        for message in replaced:
            record = provenance(message)
            refs = record.get("replaces") if record is not None else None
            original = None
            if record is not None and record.get("kind") in _RECALLED and refs and len(refs) == 1:
                try:
                    found = self.recall(str(refs[0]))
                except Exception as exc:  # a lookup is a convenience, never a failure
                    log.warning("summary.recall_failed", ref=refs[0], error=exc)
                    found = None
                if isinstance(found, Message):
                    original = found
            out.append(original if original is not None else summariser_view(message))
        return out

    def _rewritten(self, plan: _Round, counter: TokenCounter) -> tuple[Message | None, Any]:
        """A lone note or summary written again in less room: its ledger and its own prose,
        no summariser call (there is nothing new to summarise)."""
        view = summariser_view(plan.replaced[0]).content
        prose = view.split("\n", 1)[1] if "\n" in view else ""
        try:
            summary = self._summary_message(plan, prose, counter, own=True)
            if _SAID not in summary.content and _SAID in plan.replaced[0].content:
                # no room left for a line of the person's: a cut elsewhere serves them better
                raise NotSmaller("no room for the person's words in the ledger written again")
            return summary, None
        except SummarizerError as exc:
            log.debug("summary.declined", reason=str(exc), labels=dict(current_labels()))
            return None, exc

    def _round_sync(
        self, plan: _Round, counter: TokenCounter
    ) -> tuple[Message | None, BaseException | None]:
        if plan.region == LEDGER_REGION:
            return self._rewritten(plan, counter)
        summarizer, shown = self._summariser_for(plan)
        started = time.monotonic()
        answer: Any = None
        try:
            args = (shown, self.instructions)
            if self.timeout is None:
                answer = summarizer(*args)
            else:
                what = f"summariser {self.summarizer_name}"
                answer = call_with_deadline(summarizer, args, self.timeout, what)
            if inspect.isawaitable(answer):
                if inspect.iscoroutine(answer):
                    answer.close()  # never awaited: close it so no warning leaks
                answer = None
                raise TypeError(
                    f"summariser {self.summarizer_name} answered an awaitable; use acompact"
                )
            summary = self._summary_message(plan, answer, counter)
        except Exception as exc:
            self._report(shown, answer, started, counter, exc)
            return None, exc
        self._report(shown, answer, started, counter, None)
        return summary, None

    def _summariser_for(self, plan: _Round) -> tuple[Callable[..., Any], str | list[Message]]:
        """What is called for ``plan``'s stretch, and with what: a summariser that reads the
        messages a block at a time (``summarize_messages``, as the extractive one does) is
        given them, so the stretch is never rendered whole; any other gets the rendered
        transcript."""
        source = self._source(plan.replaced)
        reads = getattr(self.summarizer, "summarize_messages", None)
        if callable(reads) and not inspect.iscoroutinefunction(reads):
            return reads, source
        return self.summarizer, render_transcript(source)

    async def _ask(self, summarizer: Callable[..., Any], shown: str | list[Message]) -> Any:
        if summarizer is not self.summarizer:  # a block reader: sync, off the event loop
            return await in_daemon_thread(summarizer, shown, self.instructions)
        transcript = shown
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
        if plan.region == LEDGER_REGION:
            return self._rewritten(plan, counter)
        summarizer, shown = self._summariser_for(plan)
        started = time.monotonic()
        answer: Any = None
        try:
            if self.timeout is None:
                answer = await self._ask(summarizer, shown)
            else:
                what = f"summariser {self.summarizer_name}"
                asked = self._ask(summarizer, shown)
                answer = await await_with_deadline(asked, self.timeout, what)
            summary = self._summary_message(plan, answer, counter)
        except Exception as exc:
            self._report(shown, answer, started, counter, exc)
            return None, exc
        self._report(shown, answer, started, counter, None)
        return summary, None
