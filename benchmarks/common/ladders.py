"""What the speed suites share: the ladders they time, the share of the size they compact to,
where an agent calls the model, and the warm-up before anything is timed.

The suites themselves are in ``cold_warm`` (the counting floor, the cold ladder, the warm turn),
``side_by_side`` (next to LangChain) and ``economics`` (replay); their sections in the
``*_report`` modules.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Sequence

from compaction.check import call_points
from compaction.messages import Message
from compaction.pipeline import CompactionPipeline
from compaction.tokens import TiktokenCounter

__all__ = [
    "LADDER_SHARE",
    "call_points",
    "forget_readings",
    "fresh",
    "free_ladder",
    "full_ladder",
    "summary_ladder",
    "warm_up",
]

#: The cold ladder and the side by side compact to this share of the conversation's size.
LADDER_SHARE = 0.4


def forget_readings() -> None:
    """Empty what the library keeps between runs by text (the person's sentences read, the
    statements of a message): a cold run starts from nothing, as in a new process."""
    from compaction.memory import note, words

    words._read.cache_clear()
    words._read_message.cache_clear()
    note._sentences.cache_clear()


def fresh(blob: bytes) -> tuple[Message, ...]:
    """A fresh copy of a conversation pickled with ``pickle.dumps(tuple(messages))``: new
    message objects and new strings, so no hash, count or reading cached on the objects of an
    earlier run survives into the next (reusing them flatters every run after the first)."""
    messages: Sequence[Message] = pickle.loads(blob)
    return tuple(messages)


def free_ladder(counter: TiktokenCounter | None = None) -> CompactionPipeline:
    """ToolResults -> SlidingWindow: the two layers that cost no model call."""
    from compaction.strategies.sliding_window import SlidingWindow
    from compaction.strategies.tool_results import ToolResults

    return CompactionPipeline(counter=counter).use(ToolResults).use(SlidingWindow)


def full_ladder(counter: TiktokenCounter | None = None) -> CompactionPipeline:
    """The reference ladder: ToolResults -> SlidingWindow -> Summary (offline extractive)."""
    from compaction.strategies.summary import Summary

    return free_ladder(counter).run(Summary())


def summary_ladder(counter: TiktokenCounter | None = None) -> CompactionPipeline:
    """ToolResults -> Summary: no window, so the summariser is reached whenever clearing
    tool output is not enough (what the summariser costs over a run)."""
    from compaction.strategies.summary import Summary
    from compaction.strategies.tool_results import ToolResults

    return CompactionPipeline(counter=counter).use(ToolResults).run(Summary())


def warm_up() -> None:
    """Pay the one-time costs (lazy imports, first encodings, first events) before anything
    is timed, so the first measured conversation does not carry them."""
    from .synthetic import conversation

    messages = conversation(300, seed=1)
    counter = TiktokenCounter()
    tokens = counter.count_messages(messages)
    free_ladder(TiktokenCounter()).compact(messages, target=int(tokens * LADDER_SHARE))
    with contextlib.suppress(ImportError):
        full_ladder(TiktokenCounter()).compact(messages, target=int(tokens * 0.1))
    from compaction.trigger import Compactor

    compactor = Compactor(free_ladder(counter), window=tokens, counter=counter)
    for i in call_points(messages):
        compactor.before_call(messages[:i])


# The reason a suite that needs the real transcripts gives when there are none.
_NO_TRANSCRIPTS = "no transcripts"
