"""The trigger: compact before a model call, only when the window is filling.

An agent calls [`Compactor.before_call`][] before **every** model call, inside its tool loop,
with its own full message list, and sends what comes back::

    compactor = Compactor(pipeline, window=128_000, tools=tool_schemas)
    usage = None
    while True:
        request = compactor.before_call(messages, usage=usage)
        reply = client.chat.completions.create(model=..., messages=to_openai(request), ...)
        usage = reply.usage                    # anchors the next estimate
        messages.append(...)                   # the agent keeps its full, raw history

The contract, and why it is shaped like this:

- **The agent keeps appending to its full list.** The compactor remembers the compacted form
  of what it already mapped (the *view*) and, on the next call, sends that view followed by the
  messages appended since. So after a compaction at step *k*, step *k+1* sends the compacted
  prefix plus the new messages, and nothing is compacted again until the estimate reaches
  ``compact_at`` once more (hysteresis). Between compactions every request extends the previous
  one, which is what keeps a provider's prompt cache warm.
- An agent may instead adopt the returned request as its list and append to that; the
  compactor recognises a list that extends its view just as well.
- A list that extends neither (the agent edited or dropped messages it had sent, or switched
  to another conversation) is treated as a new conversation: the view and the usage anchor are
  dropped and everything is counted locally. Extension is checked on the whole mapped
  prefix (identity, then equality): two conversations that share their first and N-th
  messages are still two, and one's compacted history never goes out in the other's request.
  For an agent that keeps its message objects this is a pointer walk, microseconds at
  thousands of messages.
- **While the estimate is under** ``compact_at * window`` and nothing was ever compacted, the
  very same list object is returned, so the common case costs one addition.
- **The estimate anchors on the provider.** ``usage`` (an int, or the provider's usage object:
  OpenAI ``prompt_tokens``; Anthropic ``input_tokens`` plus its cache read and creation
  counts) is what the provider measured for the previous request; to it the compactor adds a
  local count of only the messages appended since. Without usage it counts locally (each
  message once: counts are cached); so it does, with a warning logged, for a usage it
  cannot read (null or missing input counts, negative numbers). **Usage is a hint**: a count
  under ``USAGE_FLOOR`` (0.8) of the local count of the same request (a 0, a word count, a
  cached-only count) is ignored, with one warning per conversation, and counted in
  ``stats.usage_ignored``. A compaction discards the
  anchor, which describes a conversation that no longer exists.
- **A minimum saving, and no asking twice for the same answer.** A compaction that would save
  less than ``min_saving * window`` (default 5%) is not taken while the request still fits the
  window: rewriting the prompt for a few tokens costs the provider's prompt cache more than it
  saves. After an attempt that leaves the request at or over the mark (the ladder had nothing
  to give, saved too little, or raised), the ladder is not asked again until the conversation
  has grown by that minimum saving, so a ladder that cannot help (or a summariser that costs
  money) is not paid again on every call.
- **Compacting aims at** ``compact_to * window`` minus what the tool schemas take, since the
  schemas travel with every request; **the window is the hard limit** (less the schemas):
  protected content (the task, the person's words, the newest step, the system prompt) is cut
  only to fit the window, never to reach the aim (see ``docs/limits.md``). When the provider
  counts the conversation bigger than the local counter does, the target and the limit are
  scaled down by the same ratio, since the pipeline measures locally.
- **Compaction never kills the turn.** If the pipeline raises (also a ``strict`` pipeline, or
  input the pipeline refuses as invalid), [`compaction.events.failed`][] is sent with the
  compactor as sender and the uncompacted messages are returned. ``strict`` is for running a
  pipeline directly; a trigger that could raise into the agent would make compaction the
  thing that ends a run it exists to keep alive. ``KeyboardInterrupt`` and other
  ``BaseException`` still propagate.
- **Every request fits whenever the system prompt does**: a request a provider rejects as too long
  ends the run, which is worse than any cut. With
  ``pipeline=None`` the compactor runs [`default_pipeline`][], whose last layer,
  [`Fit`][compaction.strategies.fit.Fit], cuts the largest protected messages in their
  middle (marked and recallable) when the protected part alone is over target (a huge task,
  a huge newest tool output). ``strict_floor=True`` leaves it out: an over-target result is
  then kept, nothing protected is ever cut. A pipeline you pass is run as you built it.
- Every pipeline event of a triggered run carries ``labels={"context_size": estimate,
  "window": window}`` (plus any ``labels`` given to the compactor).

A compactor follows one conversation and is not thread-safe: use one per agent.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from . import events
from ._log import log
from ._trigger_view import AppendLog, _ConversationView, _Plan
from .checks import check_labels
from .ladder import default_pipeline
from .memory.offered import memory_tool_names, offering
from .messages import Message
from .pipeline import CompactionPipeline
from .pricing.usage import usage_tokens
from .result import CompactionResult
from .tokens import TokenCounter

__all__ = ["Compactor", "CompactorStats", "default_pipeline", "usage_tokens"]


@attrs.define(slots=True)
class CompactorStats:
    """What the trigger did so far (for logs, the CLI and benchmarks).

    ``calls``: before_call invocations; ``compactions``: pipeline runs that changed the
    conversation; ``attempts``: pipeline runs (changed or not); ``failures``: runs that raised;
    ``last_estimate``: the size the last call was judged by; ``last_tokens``: the local count
    of the last request returned (messages plus tool schemas); ``anchored``: whether the last
    estimate stood on provider-reported usage; ``usage_ignored``: reported usages set aside
    as implausible (far below the local count of the same request).
    """

    calls: int = 0
    compactions: int = 0
    attempts: int = 0
    failures: int = 0
    last_estimate: int = 0
    last_tokens: int = 0
    anchored: bool = False
    usage_ignored: int = 0


class Compactor(_ConversationView):
    """Compact before a model call when the estimate reaches ``compact_at * window``.

    ``pipeline`` is the ladder to run (None: [`default_pipeline`][]); ``window`` the
    model's context window in tokens;
    ``compact_at``/``compact_to`` the hysteresis marks as shares of the window
    (``0 < compact_to < compact_at <= 1``); ``counter`` the counter for local counts and for
    the pipeline (default: the pipeline's); ``tools`` the tool schemas sent with every request
    (their size is part of the estimate and is kept free when compacting); ``labels`` extra
    labels for every event of a triggered run; ``min_saving`` the least share of the window a
    compaction must save to be taken (capped at half the gap between the marks);
    ``strict_floor`` (with the default pipeline) keeps an over-target result rather than
    cutting protected messages to fit; ``policy`` decides when to compact in place of the
    fixed ``compact_at`` mark ([`compaction.pricing.cache_policy.CacheAware`][]);
    ``background`` a [`Background`][compaction.background.Background] that starts the ladder's
    model summary early, off the turn, and swaps it in when ready (the call itself then runs
    only the free layers). See the module docstring for the contract.
    """

    def __init__(
        self,
        pipeline: CompactionPipeline | None,
        window: int,
        compact_at: float = 0.7,
        compact_to: float = 0.4,
        counter: TokenCounter | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        labels: Mapping[str, Any] | None = None,
        min_saving: float = 0.05,
        strict_floor: bool = False,
        policy: Any = None,
        background: Any = None,
    ) -> None:
        if pipeline is None:
            pipeline = default_pipeline(counter=counter, strict_floor=strict_floor)
        if not hasattr(pipeline, "compact"):
            raise TypeError(f"pipeline must be a CompactionPipeline, got {type(pipeline).__name__}")
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ValueError(f"window must be a positive int (tokens), got {window!r}")
        for name, value in (("compact_at", compact_at), ("compact_to", compact_to)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
        if not 0 < compact_to < compact_at <= 1:
            raise ValueError(
                "need 0 < compact_to < compact_at <= 1 (compact when the window is "
                f"compact_at full, down to compact_to); got compact_at={compact_at!r}, "
                f"compact_to={compact_to!r}"
            )
        if (
            isinstance(min_saving, bool)
            or not isinstance(min_saving, int | float)
            or not 0 <= min_saving < 1
        ):
            raise ValueError(f"min_saving must be a number in [0, 1), got {min_saving!r}")
        if counter is not None and not isinstance(counter, TokenCounter):
            raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        self.pipeline = pipeline
        self.strict_floor = bool(strict_floor)
        self.window = window
        self.compact_at = float(compact_at)
        self.compact_to = float(compact_to)
        self.counter: TokenCounter = counter or pipeline.counter
        self.tools: tuple[Mapping[str, Any], ...] = tuple(tools or ())
        self.tool_tokens = self.counter.count_tools(self.tools)
        #: The memory tools (``search``, ``recall``) among ``tools``: the notes this
        #: compactor's ladder writes say the model has them (see compaction.memory.offered).
        self.memory_tools = memory_tool_names(self.tools)
        # Rounded first: 0.7 * 10 is 7.000000000000001 in floating point, not a reason to
        # wait for an eighth token.
        self.threshold = math.ceil(round(self.compact_at * window, 6))
        self.target = math.floor(round(self.compact_to * window, 6)) - self.tool_tokens
        if self.target <= 0:
            raise ValueError(
                f"the tool schemas take {self.tool_tokens} tokens, leaving nothing of "
                f"compact_to * window = {self.target + self.tool_tokens} for the "
                "conversation; raise window or compact_to"
            )
        self.min_saving = float(min_saving)
        # Never more than half the gap between the marks, or a normal compaction would count
        # as not worth it.
        share = min(self.min_saving, (self.compact_at - self.compact_to) / 2)
        self.min_saving_tokens = math.ceil(round(share * window, 6))
        self.labels: dict[str, Any] = check_labels(labels)
        self.stats = CompactorStats()
        #: The result of the last pipeline run in the last call, or None when it did not run.
        self.last_result: CompactionResult | None = None
        #: When to compact instead of the fixed mark (e.g.
        #: compaction.pricing.cache_policy.CacheAware).
        self.policy = policy
        if policy is not None:
            policy.attach(self)
        #: A [`Background`][compaction.background.Background] that runs the ladder's summary
        #: early, off the turn, and swaps it in later (None: every compaction runs in the call).
        self.background = background
        if background is not None:
            background.attach(self)
        # One warning per conversation about implausible usage, not one per call.
        self._usage_warned = False
        self.reset()

    @classmethod
    def from_config(
        cls,
        config: Any,
        window: int | None = None,
        *,
        counter: TokenCounter | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        labels: Mapping[str, Any] | None = None,
        price: Any = None,
    ) -> Compactor:
        """A compactor with the ladder and trigger settings of a config file (a path, or a
        [`Config`][compaction.config.Config]); ``window`` overrides the file's own, and one
        of them must be given; ``price`` prices a cache-aware policy whose file names no
        model. The format is described in [`compaction.config`][]."""
        from .config import build_compactor

        return build_compactor(cls, config, window, counter, tools, labels, price)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return (
            f"<Compactor window={self.window} compact_at={self.compact_at} "
            f"compact_to={self.compact_to} {self.pipeline!r}>"
        )

    # -- the call ------------------------------------------------------------------------------

    def _commit(self, plan: _Plan, request: Sequence[Message], tokens: int) -> Sequence[Message]:
        messages = plan.messages
        # A copy (the agent appends to its list), of the same kind, so the next check is one
        # comparison in C.
        if type(messages) is AppendLog:
            # Kept by reference: the log is only ever appended to or cut (which moves its
            # epoch), so its length and epoch say what was mapped without a copy.
            self._src, self._log = (), messages
            self._log_len, self._log_epoch = len(messages), messages.epoch
        else:
            self._keep_src(plan, messages)
            self._log = None
        self._view = None if request is messages else tuple(request)
        self._view_tokens = tokens
        self._since = plan.since
        self._has_sent = True
        stats = self.stats
        stats.calls += 1
        stats.last_estimate = plan.estimate
        stats.last_tokens = tokens + self.tool_tokens
        stats.anchored = plan.anchored
        return request

    def _limit(self, plan: _Plan) -> int:
        """The hard limit of a run: the window less the tool schemas, in local tokens (scaled
        down, like the target, when the provider counts this conversation bigger than we do).
        Protected content (the task, the person's words, the newest step) is cut only to fit
        this, never to reach ``compact_to``."""
        room = self.window - self.tool_tokens
        local = plan.tokens + self.tool_tokens
        if plan.anchored and plan.estimate > local > 0:
            room = math.floor(self.window * local / plan.estimate) - self.tool_tokens
        return max(room, plan.target)

    def _back_off(self, size: int) -> None:
        self._retry_at = size + max(self.min_saving_tokens, 1)

    def _taken(self, plan: _Plan, result: CompactionResult) -> Sequence[Message]:
        self.stats.attempts += 1
        self.last_result = result
        fits_as_is = plan.estimate <= self.window
        if result.changed and result.saved < self.min_saving_tokens and fits_as_is:
            # Rewriting the prompt for a few tokens would cost the provider's prompt cache
            # more than it saves: keep the request as it is.
            log.debug("trigger.saving_too_small", saved=result.saved, labels=plan.labels)
            self._back_off(plan.estimate)
            return self._commit(plan, plan.request, plan.tokens)
        if not result.changed:
            self._back_off(plan.estimate)
            return self._commit(plan, plan.request, plan.tokens)
        if result.after + self.tool_tokens >= self.threshold:
            self._back_off(result.after + self.tool_tokens)
        self.stats.compactions += 1
        # The anchor measured a conversation that no longer exists.
        self._anchor = None
        plan.since = 0
        if not result.within_limit:
            log.warning(
                "trigger.over_target",
                after=result.after,
                target=result.target,
                limit=result.limit,
                window=self.window,
                labels=plan.labels,
            )
        return self._commit(plan, result.messages, result.after)

    def _failed(self, plan: _Plan, exc: Exception, started: float) -> Sequence[Message]:
        self.stats.attempts += 1
        self.stats.failures += 1
        self.last_result = None
        self._back_off(plan.estimate)
        log.error("trigger.failed", error=exc, labels=plan.labels)
        events.failed.send(self, name="compactor", error=exc, stage="trigger", labels=plan.labels)
        events.duration.send(
            self,
            scope="trigger",
            name="compactor",
            seconds=time.monotonic() - started,
            ok=False,
            labels=plan.labels,
        )
        return self._commit(plan, plan.request, plan.tokens)

    def _run(self, pipeline: CompactionPipeline, plan: _Plan) -> Sequence[Message]:
        """``pipeline`` on ``plan`` as every triggered run goes (to the target within the hard
        limit, its notes told the memory tools the model has), its answer taken or its
        failure recorded: for a call's own run and for the free layers after a swap."""
        started = time.monotonic()
        try:
            with offering(self.memory_tools):
                result = pipeline.compact(plan.request, **self._asked(plan))
        except Exception as exc:
            return self._failed(plan, exc, started)
        return self._taken(plan, result)

    def _asked(self, plan: _Plan) -> dict[str, Any]:
        """What a triggered run asks of the ladder for ``plan``: its target within the hard
        limit, counted by this trigger's counter, labelled as the call is."""
        return {
            "target": plan.target,
            "limit": self._limit(plan),
            "counter": self.counter,
            "labels": plan.labels,
        }

    async def _arun(self, pipeline: CompactionPipeline, plan: _Plan) -> Sequence[Message]:
        """Async twin of ``_run`` (awaits summarisers that do I/O)."""
        started = time.monotonic()
        try:
            with offering(self.memory_tools):
                result = await pipeline.acompact(plan.request, **self._asked(plan))
        except Exception as exc:
            return self._failed(plan, exc, started)
        return self._taken(plan, result)

    def _ladder(self) -> CompactionPipeline:
        """The ladder a call runs: the whole one, or only its free layers while a background
        summary is coming (the call must not wait for a model)."""
        background = self.background
        if background is not None and background.free is not None:
            free: CompactionPipeline = background.free
            return free
        return self.pipeline

    def close(self) -> None:
        """Stop a background summary (see ``background``); nothing to do without one."""
        if self.background is not None:
            self.background.close()

    def handoff(self, messages: Sequence[Message]) -> Any:
        """Hand off to a fresh window: the model called ``new_context`` (see
        [`compaction.handoff`][]). ``messages`` is the agent's list ending with that call;
        append the returned [`Handoff.result`][compaction.handoff.Handoff] to it, and from the
        next [`before_call`][] on the request is the handoff's followed by what the agent
        appends. Raises [`HandoffRefused`][compaction.handoff.HandoffRefused] (answer the
        call with its message) while another tool call is unanswered."""
        from .handoff import take_handoff

        return take_handoff(self, messages)

    def before_call(self, messages: Sequence[Message], usage: Any = None) -> Sequence[Message]:
        """The messages to send for the next model call.

        ``messages`` is the agent's full list; ``usage`` what the provider reported for the
        previous request (optional). Returns ``messages`` itself while nothing needs
        compacting, else the compacted prefix followed by what was appended since.
        """
        plan = self._plan(messages, usage)
        if self.policy is not None:
            self.policy.adjust(self, plan)
        self.last_result = None
        background = self.background
        if background is not None:
            swapped = background.swap(self, plan)
            if swapped is not None:
                return swapped
            background.maybe_start(self, plan)
        if not plan.compact:
            return self._commit(plan, plan.request, plan.tokens)
        return self._run(self._ladder(), plan)

    async def abefore_call(
        self, messages: Sequence[Message], usage: Any = None
    ) -> Sequence[Message]:
        """Async twin of [`before_call`][]: awaits strategies that do I/O (summarisers)."""
        plan = self._plan(messages, usage)
        if self.policy is not None:
            self.policy.adjust(self, plan)
        self.last_result = None
        background = self.background
        if background is not None:
            swapped = background.swap(self, plan)
            if swapped is not None:
                return swapped
            background.maybe_start(self, plan, asynchronous=True)
        if not plan.compact:
            return self._commit(plan, plan.request, plan.tokens)
        return await self._arun(self._ladder(), plan)
