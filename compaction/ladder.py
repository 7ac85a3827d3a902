"""The default ladder, the one a trigger or an integration runs when given none.

Kept apart from the pipeline and the trigger because it is the one place that names concrete
strategies: the pipeline knows no strategy, and the trigger only runs whatever ladder it is
given. The strategies are imported when a ladder is built, not with this module.
"""

from __future__ import annotations

from typing import Any

from .pipeline import CompactionPipeline
from .tokens import TokenCounter

__all__ = ["default_pipeline"]


def default_pipeline(
    *,
    counter: TokenCounter | None = None,
    summarizer: Any = None,
    strict_floor: bool = False,
) -> CompactionPipeline:
    """The default ladder: ``Dedupe`` → ``ToolResults`` → ``SlidingWindow`` → ``Summary`` →
    ``Fit``.

    The free layers first, the one that loses nothing the model would not fetch again (an
    older copy of a file read again, of a command re-run with the same output) before the
    ones that clear or drop; then the summary (``summarizer``, default the offline extractive
    one, which costs nothing); then the last resort that cuts protected messages so that the
    result fits whenever the system prompt does. ``strict_floor=True`` leaves the last resort
    out: a conversation whose protected part is over target stays over target, uncut.
    """
    # Imported here: ``import compaction`` stays cheap, and the strategies build on the
    # pipeline, not the other way round.
    from .strategies.dedupe import Dedupe
    from .strategies.fit import Fit
    from .strategies.sliding_window import SlidingWindow
    from .strategies.summary import Summary
    from .strategies.tool_results import ToolResults

    pipeline = CompactionPipeline(counter=counter).use(Dedupe()).use(ToolResults())
    pipeline.use(SlidingWindow())
    if strict_floor:
        return pipeline.run(Summary(summarizer))
    return pipeline.use(Summary(summarizer)).run(Fit())
