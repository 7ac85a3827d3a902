"""The ``probe`` suite: facts about each real run, asked of its compacted messages.

Beside the ``remembered`` suite (generated sessions), this one uses every shared transcript
(mini-swe-agent, SWE-agent, Claude Code). The facts come from the raw logs, read by
``compaction.check``'s own reader (:mod:`compaction.check.logs`, :mod:`compaction.check.edits`,
:mod:`compaction.check.facts`; independent of ``compaction.formats``): task identifiers, the
last three files edited, the last failing test id, the last error type, the last command. The
messages compacted are the ones ``compaction.formats.load`` reads (the harness's cases), by the
default ladder (``compaction.default_pipeline()``) at 25%, 40% and 60% of each file's tokens; a
fact is recovered when one of its literal forms appears in the compacted messages' visible text
(content and tool-call arguments, never ``meta``; the system prompt left out, as the harness
wrote it before the run). Beside the fixed targets, a replay:
the run fed call by call through the trigger (window half the transcript, compact at 70%
down to 40%), then the request the agent would send next, with everything in it (shown,
not judged against the goals, which the issue sets at 25/40/60%).

A fact that does not appear even in the *uncompacted* messages is not asked (the reader and
the probe disagree on what the log holds, or the log's own text differs from the loaded
one); those are counted and listed, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from compaction import Message, TiktokenCounter, default_pipeline
from compaction.check import FACT_KINDS, UnreadableLog, log_facts, recovered

from ..common.measure import progress

__all__ = ["TARGETS", "markdown", "probe_case", "run"]

TARGETS: Final = (0.25, 0.40, 0.60)
REPLAY_AT: Final = 0.7
REPLAY_TO: Final = 0.4


def probe_case(
    path: Path,
    messages: Sequence[Message],
    tokens: int,
    counter: TiktokenCounter,
    *,
    replayed: bool = True,
) -> dict[str, Any]:
    """One transcript: its facts, and per target which of them the compacted messages hold."""
    found = log_facts(path, messages)
    asked = found.asked
    row: dict[str, Any] = {
        "format": found.format,
        "facts": [[f.kind, f.answer] for f in asked],
        "absent": [[f.kind, f.answer] for f in found.absent],
        "targets": {},
    }
    pipeline = default_pipeline(counter=counter)
    for share in TARGETS:
        target = max(1, int(tokens * share))
        try:
            out = pipeline.compact(messages, target=target).messages
        except Exception as exc:  # a crash is a result: every fact lost at this target
            row["targets"][str(share)] = {"error": repr(exc), "recovered": [False] * len(asked)}
            continue
        row["targets"][str(share)] = {"recovered": recovered(asked, out)}
    if replayed:
        try:
            request = _replayed(messages, tokens, counter)
        except Exception as exc:
            row["targets"]["replay"] = {"error": repr(exc), "recovered": [False] * len(asked)}
        else:
            row["targets"]["replay"] = {"recovered": recovered(asked, request)}
    return row


def _replayed(messages: Any, tokens: int, counter: TiktokenCounter) -> Sequence[Message]:
    """The request an agent would send next after the whole run, replayed through the
    trigger with the default ladder: window half the transcript, compact at 70% down to 40%
    (the trigger's defaults), every earlier call's compaction carried forward."""
    from compaction import Compactor
    from compaction.replay import replay

    compactor = Compactor(
        default_pipeline(counter=counter),
        max(1, tokens // 2),
        compact_at=REPLAY_AT,
        compact_to=REPLAY_TO,
        counter=counter,
    )
    for _ in replay(messages, compactor):
        pass
    return compactor.before_call(messages)


def run(ctx: Any) -> dict[str, Any]:
    cases = ctx.cases
    if not cases:
        return {"skipped": ctx.transcripts_skipped or "no transcripts"}
    folder = Path(ctx.args.transcripts)
    counter = TiktokenCounter()
    rows: dict[str, Any] = {}
    unread: list[str] = []
    for case in cases:
        try:
            rows[case.name] = probe_case(folder / case.name, case.messages, case.tokens, counter)
        except UnreadableLog as exc:
            unread.append(f"{case.name}: {exc.reason}")
        progress(f"probe: {case.name}")
    return {"targets": list(TARGETS), "kinds": list(FACT_KINDS), "rows": rows, "unread": unread}


def markdown(results: dict[str, Any]) -> list[str]:
    from .report import section

    return section(results)
