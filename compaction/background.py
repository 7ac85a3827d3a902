"""A model summary that never blocks a turn: started early, off the turn, swapped in later.

A summary by a model takes seconds; an agent waiting on it between two tool calls is an agent
doing nothing. With [`Background`][compaction.background.Background] attached to a
[`Compactor`][compaction.trigger.Compactor]:

- at an **early mark** (``start_at`` of the window, below the compactor's ``compact_at``),
  when the free layers alone could not bring the request to the target (so a summary will be
  needed), the whole ladder is started on the request as it stands, in a worker thread (or,
  from ``abefore_call``, a task on the running event loop), while the turn goes on;
- when the request reaches ``compact_at`` before the summary is back, the trigger runs the
  **free layers** only (every layer that spends no model call: tool-result clearing, the
  sliding window, the last-resort fit), so the request fits without waiting;
- at the next call after the summary is back, it is **swapped in** when it still applies: the
  agent's list still starts with the messages it summarised (the conversation only grew), and
  the result followed by what was appended since is smaller than what would be sent (and when
  that is still over ``compact_at``, the free layers take the rest off in the same call). A summary
  that failed, no longer applies or saves nothing is discarded, visibly (a log line and
  ``stats.background_discarded``), and the next one is not started before the conversation
  has grown by the compactor's minimum saving, so a failing summariser is not paid each call.

At most one summary runs per compactor, in one worker thread; [`Background.close`][] (or the
compactor's ``close``) cancels what has not started and lets nothing be swapped in afterwards.
The counter is shared with the worker: counters are caches whose entries are recomputed, never
corrupted, when two threads fill them at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import math
from collections.abc import Sequence
from typing import Any

import attrs

from ._log import log
from .memory.offered import offering
from .messages import Message
from .pipeline import CompactionPipeline

__all__ = ["Background", "BackgroundStats"]


@attrs.define(slots=True)
class BackgroundStats:
    """``started``, ``applied`` (swapped in) and ``discarded`` summaries so far."""

    started: int = 0
    applied: int = 0
    discarded: int = 0


@attrs.define(slots=True)
class _Job:
    work: Any  # a concurrent.futures.Future or an asyncio.Task
    raw: tuple[Message, ...]  # the agent's messages the summary stands for


def _ladder_of(layers: Sequence[Any], strict: bool) -> CompactionPipeline:
    out = CompactionPipeline(strict=strict)
    for layer in layers[:-1]:
        out.use(layer)
    if layers:
        out.run(layers[-1])
    return out


def free_layers(pipeline: CompactionPipeline) -> CompactionPipeline | None:
    """``pipeline`` without the layers that spend a model call (None when it has none)."""
    layers = list(pipeline.strategies)
    free = [s for s in layers if not s.capabilities.model_call]
    return None if len(free) == len(layers) else _ladder_of(free, pipeline.strict)


def layers_above(pipeline: CompactionPipeline) -> CompactionPipeline:
    """The free layers above the first one that spends a model call: what runs before a
    summary is asked for (the last resort below it does not count: it always fits)."""
    above: list[Any] = []
    for layer in pipeline.strategies:
        if layer.capabilities.model_call:
            break
        above.append(layer)
    return _ladder_of(above, pipeline.strict)


class Background:
    """Start the ladder's summary early and swap it in later (see the module docstring).

    ``start_at`` is the early mark as a share of the window (below the compactor's
    ``compact_at``)."""

    def __init__(self, start_at: float = 0.55) -> None:
        if isinstance(start_at, bool) or not isinstance(start_at, int | float):
            raise ValueError(f"start_at must be a share of the window, got {start_at!r}")
        if not 0 < start_at <= 1:
            raise ValueError(f"start_at must be in (0, 1], got {start_at!r}")
        self.start_at = float(start_at)
        self.stats = BackgroundStats()
        self.free: CompactionPipeline | None = None
        self.above: CompactionPipeline | None = None
        self._job: _Job | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._not_before = 0
        self._closed = False

    def attach(self, compactor: Any) -> None:
        """Called by the compactor it is given to: the free layers of its ladder."""
        if self.start_at >= compactor.compact_at:
            raise ValueError(
                f"start_at ({self.start_at}) must be below the compactor's compact_at "
                f"({compactor.compact_at}): the summary starts before it is needed"
            )
        self.free = free_layers(compactor.pipeline)
        self.above = layers_above(compactor.pipeline)

    @property
    def running(self) -> bool:
        """Whether a summary is under way."""
        return self._job is not None and not self._job.work.done()

    # -- the two hooks the compactor calls -------------------------------------------------

    def swap(self, compactor: Any, plan: Any) -> Sequence[Message] | None:
        """The request with a finished summary swapped in, or None (nothing ready, or
        discarded)."""
        job = self._job
        if job is None or not job.work.done():
            return None
        self._job = None
        try:
            result = job.work.result()
        except BaseException as exc:  # a cancelled task raises CancelledError
            self._discard(compactor, plan, f"the summary raised {type(exc).__name__}")
            return None
        messages = plan.messages
        stop = len(job.raw)
        if len(messages) < stop or tuple(messages[:stop]) != job.raw:
            self._discard(compactor, plan, "the conversation changed since it started")
            return None
        if not result.changed:
            self._discard(compactor, plan, "the ladder had nothing to take")
            return None
        request = (*result.messages, *messages[stop:])
        tokens = compactor.counter.count_messages(request)
        if tokens >= plan.tokens:
            self._discard(compactor, plan, "not smaller than the request as it is")
            return None
        self.stats.applied += 1
        log.info("background.applied", before=plan.tokens, after=tokens, labels=plan.labels)
        compactor.stats.compactions += 1
        compactor.last_result = result
        compactor._anchor = None
        plan.since = 0
        committed: Sequence[Message] = compactor._commit(plan, request, tokens)
        if tokens + compactor.tool_tokens < compactor.threshold or self.free is None:
            return committed
        # The conversation grew past the mark while the summary was out: the free layers take
        # the rest off now, as on any call, so what is sent is within the window.
        again = compactor._plan(plan.messages, None)
        compactor.stats.calls -= 1  # the same call, planned again on the summary's view
        if not again.compact:
            return compactor._commit(again, again.request, again.tokens)  # type: ignore[no-any-return]
        return compactor._run(self.free, again)  # type: ignore[no-any-return]

    def maybe_start(self, compactor: Any, plan: Any, *, asynchronous: bool = False) -> None:
        """Start a summary of the request as it stands when it passed the early mark."""
        if self._closed or self._job is not None or self.free is None:
            return
        mark = math.ceil(round(self.start_at * compactor.window, 6))
        if plan.estimate < max(mark, self._not_before):
            return
        snapshot = tuple(plan.request)
        # Only when the free layers above the summary cannot reach the target is a summary
        # needed; a run of them is cheap (no model call), and one that suffices is left to
        # compact_at, so the prefix stays as stable as without a background summary.
        above = self.above
        if above is not None and above.strategies:
            with offering(compactor.memory_tools):
                tried = above.compact(snapshot, target=plan.target, counter=compactor.counter)
            reach = tried.after
        else:
            reach = plan.tokens
        if reach <= plan.target:
            self._not_before = plan.estimate + max(compactor.min_saving_tokens, 1)
            return
        kwargs = {
            "target": plan.target,
            "limit": compactor._limit(plan),
            "counter": compactor.counter,
            "labels": {**plan.labels, "background": True},
        }
        pipeline = compactor.pipeline
        # The summary's ladder runs in the caller's context (its layers' notes name the memory
        # tools the model has, as on the turn's own runs): a task copies it when created, a
        # worker thread is handed a copy.
        with offering(compactor.memory_tools):
            if asynchronous:
                work: Any = asyncio.get_running_loop().create_task(
                    pipeline.acompact(snapshot, **kwargs)
                )
            else:
                if self._executor is None:
                    self._executor = concurrent.futures.ThreadPoolExecutor(
                        max_workers=1, thread_name_prefix="compaction-summary"
                    )
                context = contextvars.copy_context()
                job = functools.partial(pipeline.compact, snapshot, **kwargs)
                work = self._executor.submit(context.run, job)
        self._job = _Job(work, tuple(plan.messages))
        self.stats.started += 1
        log.info("background.started", tokens=plan.tokens, labels=plan.labels)

    def _discard(self, compactor: Any, plan: Any, why: str) -> None:
        self.stats.discarded += 1
        self._not_before = plan.estimate + max(compactor.min_saving_tokens, 1)
        log.info("background.discarded", reason=why, labels=plan.labels)
        return None

    def close(self) -> None:
        """Cancel a summary that has not finished and stop the worker; nothing is swapped in
        afterwards."""
        self._closed = True
        job, self._job = self._job, None
        if job is not None:
            job.work.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
