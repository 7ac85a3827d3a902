"""The quality suite: what each ladder keeps of real agent runs.

Every transcript under the transcripts folder (all three formats) is compacted by each ladder
once to 25%, 40% and 60% of its size, and replayed call by call (window = half the largest
request; compact at 70% of the window down to 40%, the trigger's defaults). What is judged, by
the benchmark's own rules (:mod:`benchmarks.quality.metrics`,
:mod:`benchmarks.quality.identifiers`):
the original task kept, the result within target, budget use, identifier retention, paths of
dropped tool calls kept, summariser calls, the notes' cost, and in replay the prompt-cache
share, the calls sent without the task and the requests over the window.

Ladders: the library's default ladder (as the CLI builds it, so a change of default on the
branch is measured), the free ladder (tool_results → sliding_window), summary alone, and
LangChain's ``trim_messages`` and ``ClearToolUsesEdit``
(:mod:`benchmarks.common.peers`). Ours are built
from registry keys, with each strategy's default options, so the suite runs against whatever
the strategies do on the branch.

The peers run as LangChain applies them: on the agent's full history before every model call
(``trim_messages`` in a pre-model hook, ``ClearToolUsesEdit`` inside
``ContextEditingMiddleware``, which edits a copy of the request and keeps the state whole), so in
replay they see the whole history each call. Their token counter answers our counts of the very
messages (LangChain messages are mapped back to the originals), so every ladder is judged with
the same numbers.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

import attrs

from compaction import events
from compaction.messages import Message
from compaction.tokens import TiktokenCounter

from ..common.data import Case
from ..common.measure import progress
from . import metrics as qm

__all__ = [
    "COMPACT_AT",
    "COMPACT_TO",
    "LADDERS",
    "MIN_TARGET",
    "TARGETS",
    "run_case",
    "run_quality",
    "suite",
]

TARGETS: Final = (0.25, 0.40, 0.60)
#: Below this many tokens no request of several messages fits at all (the envelopes of a task
#: and one tool step cost more), whatever a ladder does: such targets are shown, not judged.
MIN_TARGET: Final = 64
COMPACT_AT: Final = 0.7
COMPACT_TO: Final = 0.4
_FALLBACK_DEFAULT: Final = ("tool_results", "sliding_window", "summary")
FREE: Final = ("tool_results", "sliding_window")


def default_keys() -> tuple[str, ...]:
    """The default ladder as the CLI builds it (tracks a change of default on the branch)."""
    try:
        from compaction._cli.ladder import DEFAULT_LADDER
    except ImportError:  # pragma: no cover - a renamed private module: the documented default
        return _FALLBACK_DEFAULT
    return tuple(DEFAULT_LADDER)


def _pipeline(keys: Sequence[str]) -> Callable[[TiktokenCounter], Any]:
    def build(counter: TiktokenCounter) -> Any:
        from compaction.pipeline import CompactionPipeline

        pipeline = CompactionPipeline(counter=counter)
        for key in keys[:-1]:
            pipeline.use(key)
        return pipeline.run(keys[-1])

    return build


@attrs.frozen
class Ladder:
    """A contender: ``ours`` builds a pipeline from registry keys; a peer names its function."""

    name: str
    label: str
    keys: tuple[str, ...] = ()
    peer: str | None = None


def ladders() -> tuple[Ladder, ...]:
    keys = default_keys()
    return (
        Ladder("default", "ours: default (" + " → ".join(keys) + ")", keys),
        Ladder("free", "ours: free (" + " → ".join(FREE) + ")", FREE),
        Ladder("summary", "ours: summary only", ("summary",)),
        Ladder("trim_messages", "LangChain trim_messages(last)", peer="trim"),
        Ladder("clear_tool_uses", "LangChain ClearToolUsesEdit(keep=1)", peer="clear"),
    )


LADDERS: Final = tuple(ladder.name for ladder in ladders())


@contextlib.contextmanager
def _summaries() -> Iterator[list[dict[str, Any]]]:
    """Every summariser call (``compaction.events.summarized``) while the block runs."""
    calls: list[dict[str, Any]] = []

    def on(sender: Any, **kw: Any) -> None:
        calls.append(kw)

    events.summarized.connect(on)
    try:
        yield calls
    finally:
        events.summarized.disconnect(on)


# -- the peers, mapped back onto our messages --------------------------------------------------


class _Peer:
    """One transcript as LangChain messages, with the way back to the originals."""

    def __init__(self, messages: tuple[Message, ...], counter: TiktokenCounter) -> None:
        from langchain_core.messages import BaseMessage

        from ..common import peers

        self.lc = peers.to_langchain(messages)
        self.back = {id(lc): m for lc, m in zip(self.lc, messages, strict=True)}
        fallback = peers.langchain_counter(counter)

        def count(message: BaseMessage) -> int:
            original = self.back.get(id(message))
            return counter.count(original) if original is not None else fallback(message)

        # trim_messages recognises a per-message counter by this exact annotation object.
        count.__annotations__["message"] = BaseMessage
        self.count = count

    def ours(self, lc_messages: Sequence[Any]) -> tuple[Message, ...]:
        from ..common import peers

        out = []
        for m in lc_messages:
            original = self.back.get(id(m))
            out.append(original if original is not None else peers.from_langchain([m])[0])
        return tuple(out)

    def trim(self, history: list[Any], target: int) -> list[Any]:
        from ..common import peers

        return peers.trim_last(history, target, self.count)

    def clear(self, history: list[Any], trigger: int) -> list[Any]:
        from langchain.agents.middleware import ClearToolUsesEdit

        from ..common import peers

        messages = list(history)  # the middleware edits a copy; the state stays whole
        edit = ClearToolUsesEdit(trigger=trigger, keep=1)
        edit.apply(messages, count_tokens=peers.list_counter(self.count))
        return messages


# -- one compaction ----------------------------------------------------------------------------


def _judge(
    case: Case,
    out: Sequence[Message],
    target: int,
    counter: TiktokenCounter,
    ids: Sequence[Any],
    task: Message | None,
) -> dict[str, Any]:
    kept = counter.count_messages(out)
    was_lost = qm.lost(case.messages, out)
    text = "\n".join(qm.message_text(m) for m in out)
    ret = qm.retention(ids, was_lost, text)
    named, named_kept = qm.dropped_call_paths(case.messages, out)
    notes = qm.new_notes(case.messages, out)
    return {
        "kept": kept,
        "fits": kept <= target,
        "budget_used": kept / target if target else float("nan"),
        "task": qm.task_kept(task, out) if task is not None else "none",
        "lost": ret.lost,
        "lost_kept": ret.lost_kept,
        "only_lost": ret.only_lost,
        "only_lost_kept": ret.only_lost_kept,
        "call_paths": named,
        "call_paths_kept": named_kept,
        "note_tokens": [counter.count(n) for n in notes],
    }


def _once(
    ladder: Ladder, case: Case, target: int, counter: TiktokenCounter, peer: _Peer | None
) -> tuple[tuple[Message, ...], int]:
    """One compaction to ``target``: the messages answered and the summariser calls made."""
    with _summaries() as calls:
        if ladder.peer == "trim":
            assert peer is not None
            out = peer.ours(peer.trim(list(peer.lc), target))
        elif ladder.peer == "clear":
            assert peer is not None
            out = peer.ours(peer.clear(list(peer.lc), target))
        else:
            pipeline = _pipeline(ladder.keys)(counter)
            out = tuple(pipeline.compact(case.messages, target=target, counter=counter).messages)
    return out, len(calls)


# -- one replay --------------------------------------------------------------------------------


def call_points(messages: Sequence[Message]) -> list[int]:
    """Where the agent called the model (as :func:`compaction.replay.replay` sees it): before
    each assistant message that follows a non-assistant one."""
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "assistant" and i > 0 and messages[i - 1].role != "assistant"
    ]


def _requests(
    ladder: Ladder, case: Case, window: int, counter: TiktokenCounter, peer: _Peer | None
) -> Iterator[tuple[int, Sequence[Message]]]:
    """(index of the call in the transcript, request sent) for every model call."""
    if ladder.peer is None:
        from compaction.replay import replay
        from compaction.trigger import Compactor

        compactor = Compactor(
            _pipeline(ladder.keys)(counter),
            window,
            compact_at=COMPACT_AT,
            compact_to=COMPACT_TO,
            counter=counter,
        )
        for record in replay(case.messages, compactor, keep_requests=True):
            assert record.request is not None
            yield record.index, record.request
        return
    assert peer is not None
    trigger = int(COMPACT_AT * window)
    target = int(COMPACT_TO * window)
    size = 0
    done = 0
    for i in call_points(case.messages):
        while done < i:
            size += counter.count(case.messages[done])
            done += 1
        history = peer.lc[:i]
        if ladder.peer == "clear":
            yield i, peer.ours(peer.clear(history, trigger))
        elif size > trigger:
            yield i, peer.ours(peer.trim(history, target))
        else:
            yield i, case.messages[:i]


def largest_request(case: Case, counter: TiktokenCounter) -> int:
    """Tokens of the largest request the run sent uncompacted (the one before its last call)."""
    points = call_points(case.messages)
    if not points:
        return 0
    return counter.count_messages(case.messages[: points[-1]])


def _replay(
    ladder: Ladder,
    case: Case,
    counter: TiktokenCounter,
    peer: _Peer | None,
    task: Message | None,
    task_index: int,
) -> dict[str, Any]:
    window = max(1, largest_request(case, counter) // 2)
    calls = without_task = over = 0
    sent_after_first = prefix_after_first = 0
    note_tokens: dict[Any, int] = {}
    previous: Sequence[Message] | None = None
    with _summaries() as summaries:
        for index, request in _requests(ladder, case, window, counter, peer):
            sent = counter.count_messages(request)
            calls += 1
            over += sent > window
            if task is not None and index > task_index and qm.task_kept(task, request) is None:
                without_task += 1
            if previous is not None:
                sent_after_first += sent
                prefix_after_first += qm.prefix_tokens(previous, request, counter.count)
            for note in qm.new_notes(case.messages, request):
                note_tokens.setdefault(qm.message_key(note), counter.count(note))
            previous = request
    return {
        "window": window,
        "tiny": window < MIN_TARGET,
        "calls": calls,
        "without_task": without_task,
        "over_window": over,
        "sent_after_first": sent_after_first,
        "prefix_after_first": prefix_after_first,
        "summarizer_calls": len(summaries),
        "note_tokens": sorted(note_tokens.values()),
    }


# -- the suite ---------------------------------------------------------------------------------


def run_case(case: Case, chosen: Sequence[Ladder], *, replay: bool = True) -> list[dict[str, Any]]:
    """Every ladder of ``chosen`` on one transcript: one row per (ladder, target), and one per
    ladder for the replay (``target`` = ``"replay"``)."""
    counter = TiktokenCounter()
    tokens = counter.count_messages(case.messages)
    ids = qm.per_message_identifiers(case.messages)
    task = qm.original_task(case.messages)
    task_index = next((i for i, m in enumerate(case.messages) if m is task), -1)
    system = qm.system_tokens(case.messages, counter.count)
    task_tokens = counter.count(task) if task is not None else 0
    peer: _Peer | None = None
    if any(ladder.peer for ladder in chosen):
        peer = _Peer(case.messages, counter)
    rows: list[dict[str, Any]] = []
    base = {
        "name": case.name,
        "format": case.format,
        "tokens": tokens,
        "system": system,
        "task_tokens": task_tokens,
    }
    for ladder in chosen:
        for share in TARGETS:
            target = max(1, int(tokens * share))
            row: dict[str, Any] = {**base, "ladder": ladder.name, "target": share}
            began = time.perf_counter()
            try:
                out, summaries = _once(ladder, case, target, counter, peer)
            except Exception as exc:  # a crash is a finding, not the end of the suite
                row.update(error=f"{type(exc).__name__}: {exc}")
            else:
                row.update(_judge(case, out, target, counter, ids, task))
                row.update(
                    target_tokens=target,
                    summarizer_calls=summaries,
                    system_over_half=system > target / 2,
                    # The issue asks for the task verbatim when it is at most 30% of the target.
                    task_short=task_tokens <= 0.3 * target,
                    tiny=target < MIN_TARGET,
                )
            row["seconds"] = time.perf_counter() - began
            rows.append(row)
        if replay:
            row = {**base, "ladder": ladder.name, "target": "replay"}
            began = time.perf_counter()
            try:
                row.update(_replay(ladder, case, counter, peer, task, task_index))
            except Exception as exc:
                row.update(error=f"{type(exc).__name__}: {exc}")
            row["seconds"] = time.perf_counter() - began
            rows.append(row)
    return rows


def run_quality(
    cases: Sequence[Case], *, names: Sequence[str] | None = None, replay: bool = True
) -> dict[str, Any]:
    """The whole suite: rows for every transcript, and totals per ladder and target."""
    from ..common import peers
    from .dedupe import dedupe_row, dedupe_totals
    from .totals import totals

    chosen = [ladder for ladder in ladders() if names is None or ladder.name in names]
    skipped: dict[str, str] = {}
    reason = peers.available()
    if reason is not None:
        for ladder in chosen:
            if ladder.peer:
                skipped[ladder.name] = reason
        chosen = [ladder for ladder in chosen if not ladder.peer]
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for i, case in enumerate(cases):
        rows.extend(run_case(case, chosen, replay=replay))
        if (i + 1) % 10 == 0 or i + 1 == len(cases):
            progress(f"quality: {i + 1}/{len(cases)} transcripts")
    counter = TiktokenCounter()
    repeated = [dedupe_row(case, counter) for case in cases]
    return {
        "dedupe": {"rows": repeated, "totals": dedupe_totals(repeated)},
        "targets": list(TARGETS),
        "compact_at": COMPACT_AT,
        "compact_to": COMPACT_TO,
        "ladders": {ladder.name: ladder.label for ladder in chosen},
        "skipped_ladders": skipped,
        "seconds": time.perf_counter() - began,
        "rows": rows,
        "totals": totals(rows, [ladder.name for ladder in chosen]),
    }


def suite(ctx: Any) -> dict[str, Any]:
    """The suite entry (see ``benchmarks/run.py``)."""
    if not ctx.cases:
        return {"skipped": ctx.transcripts_skipped or "no transcripts"}
    return run_quality(ctx.cases)
