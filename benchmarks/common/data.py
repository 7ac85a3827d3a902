"""The conversations the benchmarks run on: the real transcripts, and their concatenation.

The real transcripts are never copied into the repository; they are read from
``../shared/data/transcripts`` (next to the checkout), or from ``--transcripts DIR``. When the
folder is absent the benchmarks that need them say "skipped" instead of failing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from compaction.adapters.rekey import rekey
from compaction.messages import Message
from compaction.tokens import TiktokenCounter
from compaction.validate import problems

__all__ = ["DEFAULT_TRANSCRIPTS", "Case", "concatenation", "load_cases", "transcript_files"]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TRANSCRIPTS = ROOT.parent / "shared" / "data" / "transcripts"

_PATTERNS = ("**/*.jsonl", "**/*.json", "**/*.traj")


@attrs.frozen
class Case:
    """One conversation to benchmark: a name, its messages, its size by ``TiktokenCounter``."""

    name: str
    format: str
    messages: tuple[Message, ...]
    tokens: int

    @property
    def size(self) -> int:
        return len(self.messages)


def transcript_files(folder: Path) -> list[Path]:
    """Every transcript file under ``folder`` (empty when it is absent)."""
    if not folder.is_dir():
        return []
    return sorted({p for pattern in _PATTERNS for p in folder.glob(pattern) if p.is_file()})


def load_cases(folder: Path, *, limit: int | None = None) -> tuple[list[Case], list[str]]:
    """Read every transcript under ``folder``; answer the cases and one line per file skipped.

    ``limit`` keeps only that many files, the smallest first (for ``--quick``).
    """
    from compaction.formats import load

    files = transcript_files(folder)
    if limit is not None:
        files = sorted(files, key=lambda p: p.stat().st_size)[:limit]
    counter = TiktokenCounter()
    cases: list[Case] = []
    skipped: list[str] = []
    for path in files:
        name = str(path.relative_to(folder))
        try:
            loaded = load(path)
        except Exception as exc:  # a file the readers refuse is reported, not fatal
            skipped.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        messages = tuple(loaded.messages)
        if len(messages) < 2:
            skipped.append(f"{name}: only {len(messages)} message(s)")
            continue
        cases.append(Case(name, loaded.format, messages, counter.count_messages(messages)))
    return cases, skipped


def concatenation(cases: Sequence[Case], *, parts: int = 3) -> Case | None:
    """The ``parts`` largest Claude Code sessions one after the other (the largest
    transcripts of any format when there are no Claude Code sessions).

    Later parts lose their leading system messages: a system message in the middle is
    something providers reject, and the first part's system block stands for all.
    """
    pool = [c for c in cases if c.format == "claude-code"] or list(cases)
    chosen = sorted(pool, key=lambda c: c.tokens, reverse=True)[:parts]
    if len(chosen) < 2:
        return None
    messages: list[Message] = list(chosen[0].messages)
    for case in chosen[1:]:
        part = list(case.messages)
        while part and part[0].role == "system":
            part.pop(0)
        messages.extend(part)
    # Separate runs reuse tool-call ids (``call_1`` in each); one conversation may not.
    joined = rekey(messages)
    found = problems(joined)
    if found:
        raise ValueError(f"the concatenation of {[c.name for c in chosen]} is invalid: {found[0]}")
    label = "concat: " + " + ".join(Path(c.name).name[:8] for c in chosen)
    fmt = chosen[0].format if all(c.format == chosen[0].format for c in chosen) else "mixed"
    return Case(label, fmt, joined, TiktokenCounter().count_messages(joined))
