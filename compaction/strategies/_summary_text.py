"""Summary's text: the ledger the model reads first, then the summariser's prose, in the budget.

Kept apart from [`compaction.strategies.summary`][] because it decides what the model reads
where a stretch went, whatever the summariser wrote. A summary is one message:

    [Summary of N earlier messages]
    The person said (verbatim, latest values):
    - <their rules and limits, then facts, then goals>
    Failing tests: ... Errors seen: ... Files edited: ... Last command: ... Open todos: ...
    ## Objective
    <the summariser's prose>

The ledger comes first because a summariser, extractive or a model, rewords: a value it
paraphrases is a value lost, and a later summary of this one would lose it for good. So the
ledger (the same record every layer keeps, [`compaction.memory.ledger`][]) is written into the
text, verbatim, the person's words first, within the room the budget leaves; the prose takes
what room is left, whole lines from its head, and a line that only repeats a statement the
ledger shows is left out. The prose starts at ``meta["compaction"]["prose_at"]``: a later round
shows its summariser the prose only (the ledger is carried in ``meta`` and written again), so
combined summaries do not grow by quoting their own ledgers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from ..memory.ledger import Ledger
from ..memory.note import ledger_text, line_statement, replaced_values
from ..memory.transcript import provenance
from ..messages import Message
from ..tokens import TokenCounter

__all__ = ["compose", "summariser_view"]

#: How the ledger's lines of the person's words open (see ``ledger_text``).
_SAID = "The person said"
#: Re-renders of the ledger tried to fit its room (each shrinks it by what it was over).
_TRIES = 8


def _fit_ledger(
    ledger: Ledger, room: int, counter: TokenCounter, later: Sequence[str], stands_for: int
) -> str:
    """The ledger's lines within ``room`` units of ``counter`` (``""`` when nothing fits)."""
    if room <= 0:
        return ""
    counts: dict[str, int] = {}  # bounds apart often give the same text: counted once

    def count(text: str) -> int:
        n = counts.get(text)
        if n is None:
            n = counts[text] = counter.count_text(text)
        return n

    text = ledger_text(ledger, stands_for, later=later, bare=True)
    asked = over = len(text) + 1  # the bound asked for; one known to give too many
    best = ""
    for _ in range(_TRIES):
        if not text:
            break
        used = count(text)
        if used <= room:
            best = text
            break
        over = min(over, asked)
        # Characters shrink in proportion to what it was over, and by at least one each try.
        asked = min(len(text) - 1, int(len(text) * room / used))
        if asked <= 0:
            return ""
        text = ledger_text(ledger, stands_for, later=later, bare=True, max_chars=asked)
    low = asked
    # The shrink may overshoot (the lines left count more or fewer characters a unit than
    # those that went, and whole lines go): the span between what fits and what did not is
    # halved a few times, so a statement that fits is not left out for the prose.
    for _ in range(_TRIES if best else 0):
        if over - low <= 1:
            break
        mid = (low + over) // 2
        text = ledger_text(ledger, stands_for, later=later, bare=True, max_chars=mid)
        if count(text) <= room:
            best = text if len(text) > len(best) else best
            low = mid
        else:
            over = mid
    return best


def _prose(
    prose: str, shown: str, room: int, counter: TokenCounter, stale: frozenset[str] = frozenset()
) -> str:
    """The head of ``prose`` (whole lines) within ``room`` units; lines that only repeat a
    line of the ledger (``shown``) are left out, and so are lines that hold a value the
    person replaced (``stale``): the summariser does not know it was replaced, and would
    present it as current."""
    if room <= 0:
        return ""
    said = {s.strip() for line in shown.splitlines() if (s := line_statement(line)) is not None}
    # a value as a whole token ("1" is not in "12"), longest first
    old = (
        re.compile(
            r"(?<!\w)(?:"
            + "|".join(re.escape(v) for v in sorted(stale, key=len, reverse=True))
            + r")(?!\w)"
        )
        if stale
        else None
    )
    lines = [
        line
        for line in prose.splitlines()
        if not (said and line.strip().removeprefix("- ").strip() in said)
        and not (old is not None and old.search(line))
    ]
    whole = "\n".join(lines)
    if counter.count_text(whole) <= room:
        return whole
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = counter.count_text(line) + 1
        if used + cost > room:
            break
        kept.append(line)
        used += cost
    while kept and kept[-1].startswith("#"):  # a heading with nothing under it says nothing
        kept.pop()
    return "\n".join(kept)


@attrs.frozen
class Composed:
    """A summary's text and where its prose starts in it."""

    content: str
    prose_at: int


def compose(
    header: str,
    ledger: Ledger,
    prose: str,
    room: int,
    counter: TokenCounter,
    *,
    later: Sequence[str] = (),
    prose_share: float = 0.0,
) -> Composed:
    """The summary's text for a message of at most ``room`` units of ``counter``: ``header``,
    then the ledger's lines (the person's words first), then the head of ``prose``. When the
    header alone does not fit, it is answered alone (the caller judges whether that is
    smaller than what it replaces). ``prose_share`` of the room (or the whole prose, when
    shorter) is kept for the prose: a model's summary is paid for and must show."""
    base = counter.count(Message("user", header))
    stands_for = ledger.chars
    stale = frozenset(replaced_values(ledger, later)) if ledger.stale or later else frozenset()
    keep = 0
    if prose_share > 0 and prose:
        keep = min(counter.count_text(prose) + 1, int((room - base) * prose_share))
    block = _fit_ledger(ledger, room - base - 1 - keep, counter, later, stands_for)
    said = block.startswith(_SAID)
    if said:
        # The person's words first: the ledger takes the room it needs, the prose the rest.
        used = base + counter.count_text(block) + 1
        text = _prose(prose, block, room - used - 1, counter, stale)
    else:
        # Nothing of theirs to show: the prose as written (judged, as ever, by being smaller
        # than what it replaces), and the ledger's files and commands in what room is left.
        text = _prose(prose, "", 1 << 62, counter, stale) if stale else prose
        used = base + counter.count_text(prose) + 1
        block = _fit_ledger(ledger, room - used - 1, counter, later, stands_for)
    for _ in range(_TRIES if said else 0):
        content = "\n".join(part for part in (header, block, text) if part)
        if counter.count(Message("user", content)) <= room or not (block or text):
            break
        # Pieces counted apart may count a little more together: give way prose first.
        if text:
            lines = text.splitlines()[:-1]
            while lines and lines[-1].startswith("#"):
                lines.pop()
            text = "\n".join(lines)
        else:
            block = _fit_ledger(ledger, counter.count_text(block) - 2, counter, later, stands_for)
    content = "\n".join(part for part in (header, block, text) if part)
    prose_at = len(content) - len(text) if text else len(content)
    return Composed(content, prose_at)


def summariser_view(message: Message) -> Message:
    """What a summariser is shown of a note or summary of ours: its header and prose, not the
    ledger lines it carries (those ride in ``meta`` and are written again under the new
    summary); any other message as it is."""
    record = provenance(message)
    if record is None:
        return message
    kind = record.get("kind")
    content = message.content
    if kind == "note" and isinstance(record.get("facts"), dict):
        first = content.split("\n", 1)[0]
        return attrs.evolve(message, content=first if first.endswith("]") else first + "]")
    at = record.get("prose_at")
    if kind == "summary" and isinstance(at, int) and not isinstance(at, bool):
        head = content.split("\n", 1)[0]
        if 0 <= at <= len(content) and at >= len(head):
            prose = content[at:]
            return attrs.evolve(message, content=head + ("\n" + prose if prose else ""))
    return message
