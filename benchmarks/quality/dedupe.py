"""What the dedupe layer frees, and what it keeps, on every real transcript.

``Dedupe`` runs first in the default ladder, so its share of a compaction is measured on its
own: each transcript is given to it with a target of one token (it then gives up every copy it
may, oldest first), and judged from the outside:

- **tokens freed**: what the transcript counted, less what the answer counts, and its share;
- **copies**: the tool results turned into pointers;
- **identifiers kept**: of the paths, functions and errors the superseded copies held
  (:mod:`benchmarks.quality.identifiers`), the share the answer still names anywhere (the newer
  copy holds them when it is the same output);
- **ledger facts kept**: of the files, commands, exit codes, errors and failing tests the
  running ledger reads from the whole transcript, the share it still reads from the answer
  (a pointer records what its copy reported, so nothing is dropped from the ledger).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from compaction.memory.ledger import Ledger, ledger_of
from compaction.messages import Message
from compaction.tokens import TiktokenCounter

from ..common.data import Case
from . import metrics as qm
from .identifiers import KINDS, Identifiers
from .totals import pooled

__all__ = ["dedupe_row", "dedupe_totals", "ledger_facts"]


def ledger_facts(ledger: Ledger) -> set[tuple[str, str]]:
    """The facts a ledger holds about the work (not the person's words): files read and
    edited, commands with their exit codes, error names, failing tests."""
    facts = {("file", f) for f in ledger.files} | {("edited", f) for f in ledger.edited}
    facts |= {("command", f"{c} -> {code}") for c, code in ledger.commands.items()}
    facts |= {("error", e) for e in ledger.errors} | {("failing", t) for t in ledger.failing}
    return facts


def dedupe_row(
    case: Case, counter: TiktokenCounter, ids: Sequence[Identifiers] | None = None
) -> dict[str, Any]:
    """One transcript given to ``Dedupe`` alone with a target of one token."""
    from compaction.strategies.dedupe import Dedupe

    messages: tuple[Message, ...] = tuple(case.messages)
    tokens = counter.count_messages(messages)
    began = time.perf_counter()
    out = Dedupe().compact(messages, target=1, counter=counter).messages
    seconds = time.perf_counter() - began
    per_message = ids if ids is not None else qm.per_message_identifiers(messages)
    was_lost = qm.lost(messages, out)
    ret = qm.retention(per_message, was_lost, "\n".join(qm.message_text(m) for m in out))
    before, after = ledger_facts(ledger_of(messages)), ledger_facts(ledger_of(out))
    return {
        "name": case.name,
        "format": case.format,
        "tokens": tokens,
        "freed": tokens - counter.count_messages(out),
        "copies": sum(was_lost),
        "lost": ret.lost,
        "lost_kept": ret.lost_kept,
        "facts": len(before),
        "facts_kept": len(before & after),
        "seconds": seconds,
    }


def dedupe_totals(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rows pooled: tokens freed over tokens, identifiers and facts kept over held."""
    tokens = sum(r["tokens"] for r in rows)
    freed = sum(r["freed"] for r in rows)
    lost = {k: sum(r["lost"][k] for r in rows) for k in KINDS}
    kept = {k: sum(r["lost_kept"][k] for r in rows) for k in KINDS}
    formats = sorted({r["format"] for r in rows})
    return {
        "files": len(rows),
        "files_with_copies": sum(1 for r in rows if r["copies"]),
        "copies": sum(r["copies"] for r in rows),
        "tokens": tokens,
        "freed": freed,
        "freed_share": pooled(freed, tokens),
        "freed_by_format": {
            f: pooled(
                sum(r["freed"] for r in rows if r["format"] == f),
                sum(r["tokens"] for r in rows if r["format"] == f),
            )
            for f in formats
        },
        "identifiers_kept": {k: pooled(kept[k], lost[k]) for k in KINDS},
        "identifier_counts": lost,
        "facts": sum(r["facts"] for r in rows),
        "facts_kept": pooled(sum(r["facts_kept"] for r in rows), sum(r["facts"] for r in rows)),
        "seconds": sum(r["seconds"] for r in rows),
    }
