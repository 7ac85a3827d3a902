"""Blinker signals for every step of a compaction, so users can meter it.

Subscribe with ``events.compacted.connect(fn)``; receivers get the sender first and keyword
arguments. Every signal carries ``labels``: a mapping the caller passed to ``compact`` (the
trigger puts ``context_size`` and ``window`` there), so metrics can be tagged without wrapping
anything.

=====================  ===================  ====================================================
signal                 sender               keyword arguments
=====================  ===================  ====================================================
``started``            the pipeline         tokens, target, messages (count), labels
``strategy_applied``   the strategy         name, before, after, seconds, labels
``strategy_declined``  the strategy         name, reason ("declined" | "did_not_shrink" |
                                            "invalid" | "raised"), tokens, seconds, error,
                                            labels
``compacted``          the pipeline         before, after, target, applied (tuple of
                                            :class:`~compaction.result.Applied`), changed,
                                            fits, labels
``duration``           pipeline / strategy  scope ("run" | "strategy"), name, seconds, ok,
                                            labels
``failed``             pipeline, strategy   name, error (the exception), stage ("run",
                       or compactor         "rewrite", "invalid output", "summarize",
                                            "trigger"), labels
``summarized``         the strategy         name, input_tokens, output_tokens, seconds, ok,
                                            error, labels
=====================  ===================  ====================================================

``duration`` fires for the whole run and for each strategy asked, measured with a monotonic
clock, also when the work raised (then ``ok`` is False). ``summarized`` fires once per
summariser call, so the cost of the only strategy that spends money can be metered.
"""

from __future__ import annotations

from blinker import Namespace

__all__ = [
    "compacted",
    "duration",
    "failed",
    "namespace",
    "started",
    "strategy_applied",
    "strategy_declined",
    "summarized",
]

namespace = Namespace()

started = namespace.signal("compaction.started", doc="A compaction run began (over target).")
strategy_applied = namespace.signal(
    "compaction.strategy_applied", doc="A strategy's smaller rewrite was taken."
)
strategy_declined = namespace.signal(
    "compaction.strategy_declined", doc="A strategy was asked and nothing was taken."
)
compacted = namespace.signal("compaction.compacted", doc="A compaction run finished.")
duration = namespace.signal("compaction.duration", doc="Time spent in a run or a strategy.")
failed = namespace.signal("compaction.failed", doc="Something raised; the conversation is kept.")
summarized = namespace.signal("compaction.summarized", doc="One summariser call, with its cost.")
