"""Blinker signals for every step of a compaction and of the turn loop, so users can meter it.

Subscribe with ``events.compacted.connect(fn)``; receivers get the sender first and keyword
arguments (take ``**kwargs`` as well: a later version may add one). Every signal carries
``labels``: a mapping the caller passed to ``compact`` (the trigger puts ``context_size`` and
``window`` there; the turn loop puts ``agent``), so metrics can be tagged without wrapping
anything. Everything here is also logged through structlog (see ``compaction._log``).

**The ladder** (its middleware hooks):

=====================  ===================  ====================================================
signal                 sender               keyword arguments
=====================  ===================  ====================================================
``layer_added``        the pipeline         name, strategy (the instance), position (0 = top),
                                            terminal (True for ``run``), labels (empty)
``started``            the pipeline         tokens, target, messages (count), labels. Fires for
                                            every run, also one under target (``tokens >
                                            target`` says whether there is work to do)
``layer_entered``      the strategy         name, position, tokens, target, asked (rule 1: it
                                            will be asked to rewrite), labels
``strategy_applied``   the strategy         name, before, after, seconds, labels
``strategy_declined``  the strategy         name, reason ("declined", a layer's own reason
                                            such as "summary_not_smaller",
                                            "did_not_shrink", "fewer_statements", "invalid"
                                            or "raised"), tokens, seconds, error, labels
``layer_exited``       the strategy         name, position, before, after (the size it hands
                                            back up, after the layers below it), asked, passed
                                            (it called the layer below), seconds (with the
                                            layers below), ok (False when leaving by an
                                            exception), labels
``compacted``          the pipeline         before, after, target, applied (tuple of
                                            [`Applied`][compaction.result.Applied]), changed,
                                            fits, budget_use (after / target), skipped
                                            (the layers that declined, with their
                                            reasons), labels. Fires at the end of every run that
                                            did not raise, **also when nothing changed**:
                                            count compactions with ``changed``
``duration``           pipeline / strategy  scope ("run" | "strategy"), name, seconds, ok,
                                            labels
``failed``             pipeline, strategy   name, error (the exception), stage ("run",
                       or compactor         "rewrite", "invalid output", "summarize",
                                            "trigger"), labels
``summarized``         the strategy         name, input_tokens, output_tokens, seconds, ok,
                                            error, labels
=====================  ===================  ====================================================

Layers are middleware, so entering and exiting nest: with two layers both asked, the order is
``layer_entered(a), strategy_applied(a), layer_entered(b), ..., layer_exited(b),
layer_exited(a)``. A standalone ``strategy.apply`` sends ``started``/``compacted``/``duration``
with the strategy itself as the sender.

**The turn loop** ([`TurnLoop`][compaction.loop.turn.TurnLoop] is the sender; every one carries
``agent``, the loop's name, and ``labels``, ``{"agent": agent}``):

========================  =============================================================
signal                    keyword arguments
========================  =============================================================
``turn_started``          prompt (the user [`Message`][compaction.messages.Message]), retry
                          (True when the prompt continues an unfinished turn)
``turn_finished``         steps (model calls), stopped ("answer" | "max_steps" | "error"),
                          seconds, ok, error (None or the exception), messages (added)
``model_call_started``    step (0-based), tokens (sent, by the compactor's or the loop's
                          counter; None when it has neither and nobody listens), messages
``model_call_finished``   step, tokens, seconds, usage (what the provider reported, or
                          None), tool_calls (count)
``model_call_failed``     step, tokens, seconds, error
``tool_call_denied``      step, call (the [`ToolCall`][compaction.messages.ToolCall]), name,
                          reason (the refusal the model gets)
``tool_call_started``     step, call, name, arguments (the dict it runs with, after the
                          approval hook), rewritten (True when the hook changed them)
``tool_call_finished``    step, call, name, arguments, seconds, result (the text)
``tool_call_failed``      step, call, name, arguments (None when unreadable), seconds,
                          error, stage ("arguments" | "run" | "context")
========================  =============================================================

Every ``*_started`` is followed by exactly one ``*_finished`` or ``*_failed``; a tool call
refused before it runs (unknown tool, unreadable arguments, denied) sends only its
``tool_call_failed`` or ``tool_call_denied``. ``duration`` fires for the whole run and for each
strategy asked, measured with a monotonic clock, also when the work raised (then ``ok`` is
False). ``summarized`` fires once per summariser call, so the cost of the only strategy that
spends money can be metered.
"""

from __future__ import annotations

from blinker import Namespace

from ._redact import error_text_recorded, set_error_text

__all__ = [
    "compacted",
    "duration",
    "failed",
    "handed_off",
    "layer_added",
    "layer_entered",
    "layer_exited",
    "model_call_failed",
    "model_call_finished",
    "model_call_started",
    "namespace",
    "record_error_text",
    "started",
    "strategy_applied",
    "strategy_declined",
    "summarized",
    "tool_call_denied",
    "tool_call_failed",
    "tool_call_finished",
    "tool_call_started",
    "turn_finished",
    "turn_started",
]

namespace = Namespace()


def record_error_text(enabled: bool = True) -> bool:
    """Let compaction's log lines carry exception text; return the previous setting.

    Off by default: a failure is logged by its exception type alone (``error=RuntimeError``),
    because exception text is written by whoever raised it, and a summariser or a proxy that
    echoes its input puts the whole conversation, secrets included, into the message. On, the
    text is logged cut to about 1 kB. Receivers of these signals always get the exception
    object itself; this only governs what is written to logs. Spans have their own switch:
    ``compaction.integrations.otel.instrument(record_exception_text=True)``.
    """
    previous = error_text_recorded()
    set_error_text(enabled)
    return previous


started = namespace.signal(
    "compaction.started",
    doc="A compaction run began (every run; tokens > target when there is work to do).",
)
strategy_applied = namespace.signal(
    "compaction.strategy_applied", doc="A strategy's smaller rewrite was taken."
)
strategy_declined = namespace.signal(
    "compaction.strategy_declined", doc="A strategy was asked and nothing was taken."
)
compacted = namespace.signal(
    "compaction.compacted",
    doc="A compaction run finished without raising; `changed` says whether anything was taken.",
)
duration = namespace.signal("compaction.duration", doc="Time spent in a run or a strategy.")
failed = namespace.signal("compaction.failed", doc="Something raised; the conversation is kept.")
summarized = namespace.signal("compaction.summarized", doc="One summariser call, with its cost.")
#: Sent by a [`Compactor`][compaction.trigger.Compactor] when the model handed off to a fresh
#: window (``new_context``): replaced (messages set aside), restored (the person's rules the
#: model's note left out, shown from the ledger), before, after (tokens), labels.
handed_off = namespace.signal(
    "compaction.handed_off", doc="The model started a fresh window; what its note left out."
)

layer_added = namespace.signal(
    "compaction.layer_added", doc="`use` or `run` added a layer to a pipeline."
)
layer_entered = namespace.signal(
    "compaction.layer_entered", doc="A run reached a layer (asked says whether rule 1 holds)."
)
layer_exited = namespace.signal(
    "compaction.layer_exited", doc="A run left a layer, after the layers below it."
)

turn_started = namespace.signal("loop.turn_started", doc="A turn-loop run began.")
turn_finished = namespace.signal(
    "loop.turn_finished", doc="A turn-loop run ended (ok False when it raised)."
)
model_call_started = namespace.signal(
    "loop.model_call_started", doc="The loop is calling the model."
)
model_call_finished = namespace.signal(
    "loop.model_call_finished", doc="The model answered (with the usage it reported)."
)
model_call_failed = namespace.signal("loop.model_call_failed", doc="The model call raised.")
tool_call_denied = namespace.signal(
    "loop.tool_call_denied", doc="The approval hook refused a tool call; the model is told."
)
tool_call_started = namespace.signal("loop.tool_call_started", doc="A tool call is about to run.")
tool_call_finished = namespace.signal("loop.tool_call_finished", doc="A tool call returned.")
tool_call_failed = namespace.signal(
    "loop.tool_call_failed", doc="A tool call raised or could not be run; the model is told."
)
