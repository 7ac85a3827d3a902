"""The ledger's text: what the model reads where messages were removed.

Deterministic (the same ledger gives the same text) and bounded: at most half the characters
the ledger stands for, at most [`ledger_cap`][] of the target, whichever is less; every bound
scales with the budget (no fixed floor is ever larger than the budget itself). What the person
said comes first, by priority (their rules and limits, then their facts, then their goals),
verbatim, latest value only; then the failing tests, errors, files edited, the last command,
open todos, files read and earlier commands. When the bound forces a cut, whole statements and
whole items go, the lowest priority first: a statement is never cut mid-value, and one that
does not fit leaves its room to a shorter one of the same or lower priority. Recall ids are
shown as one range; the full list is in ``meta``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ._supersede import supersessions
from .agents import waiting
from .offered import offered, tools_line
from .words import PRIORITY, Statement, statements, value_set, values_of

if TYPE_CHECKING:
    from .ledger import Ledger

__all__ = [
    "FLOOR_NOTE_CHARS",
    "LEDGER_SHARE",
    "MAX_NOTE_CHARS",
    "MIN_NOTE_CHARS",
    "choose",
    "ledger_cap",
    "ledger_text",
    "line_statement",
    "replaced_values",
]

#: The absolute cap on a ledger's text (characters): about 1,500 tokens, whatever it replaces.
MAX_NOTE_CHARS: Final = 6000
MIN_NOTE_CHARS: Final = 100
#: Room a ledger has (about 300 tokens) even where its share of the target is less, as notes had
#: before: below it the files and errors of a run no longer fit. It is a floor only while it is
#: at most half the budget: a ledger never takes more than that because of it.
FLOOR_NOTE_CHARS: Final = 1200
#: The share of the target a ledger may take (its text, at about four characters a token):
#: the rest is for what is still there verbatim.
LEDGER_SHARE: Final = 0.3
_CHARS_PER_TOKEN: Final = 4


def ledger_cap(target: int, chars_per_token: float = _CHARS_PER_TOKEN) -> int:
    """The most characters a ledger may take in a conversation compacted to ``target``
    (counted by a counter that reads about ``chars_per_token`` characters a token: 4 for a
    tokenizer, 1 for a character budget): [`LEDGER_SHARE`][] of it, never less than
    [`FLOOR_NOTE_CHARS`][] (what a note always had room for) unless that floor is more than
    half the budget, nor more than [`MAX_NOTE_CHARS`][]. The bound by what it replaces
    (half) applies as well, in [`ledger_text`][]."""
    per = min(float(_CHARS_PER_TOKEN), max(chars_per_token, 0.25))
    budget = int(max(target, 0) * per)
    floor = min(FLOOR_NOTE_CHARS, budget // 2)
    least = min(MIN_NOTE_CHARS, budget)
    return min(MAX_NOTE_CHARS, max(floor, int(budget * LEDGER_SHARE), least))


def _recall(refs: Sequence[str]) -> str:
    unique = list(dict.fromkeys(refs))
    if not unique:
        return ""
    # One line more only while the model has the tools to use them (see memory.offered).
    tools = tools_line(offered())
    tail = f" {tools}" if tools else ""
    if len(unique) == 1:
        return f"Recall id: {unique[0]}.{tail}"
    return f"Recall ids: {unique[0]} … {unique[-1]} ({len(refs)}, all listed in meta).{tail}"


def ledger_text(
    ledger: Ledger,
    stands_for_chars: int,
    *,
    messages: int | None = None,
    max_chars: int = MAX_NOTE_CHARS,
    later: Sequence[str] = (),
    show_task: bool = False,
    title: str | None = None,
    said_only: bool = False,
    bare: bool = False,
) -> str:
    """The ledger's text, within ``min(max_chars, max(MIN_NOTE_CHARS, stands_for_chars // 2))``
    characters, the lowest priority cut first (see the module docstring).

    ``messages`` overrides the number of messages said to be removed; ``later`` are the
    person's messages still in the conversation after the ledger: a statement one of them
    supersedes is not shown as current. ``show_task``: the task message itself is gone.
    ``title`` replaces the opening count (a summary carries the ledger under its own header);
    ``said_only``: only what the person said, or ``""`` when none of it fits. ``bare``: no
    opening count and no brackets, the lines alone (or ``""``), for a message that has a
    header of its own (a summary's)."""
    # What it stands for includes what older ledgers it absorbed stood for: a ledger carried
    # through five compactions is bounded by all it replaced, not by the last round's share.
    stands_for_chars = max(stands_for_chars, ledger.chars)
    bound = min(max_chars, max(MIN_NOTE_CHARS, stands_for_chars // 2))
    n = ledger.messages if messages is None else messages
    head = (
        f"[{n} earlier message{'s' if n != 1 else ''}"
        + (f" ({ledger.steps} tool step{'s' if ledger.steps != 1 else ''})" if ledger.steps else "")
        + " removed to fit the context window."
    )
    if title is not None:
        head = f"[{title}"
    if bare:
        head = ""
        # under a header of its own (a summary), bounded by the room its caller gives it and
        # by what it stands for; the caller keeps the whole smaller than what it replaces
        bound = min(max_chars, stands_for_chars)
    room = bound - len(head) - 1
    recall = "" if bare else _recall(ledger.refs)

    said, since = _current(ledger, later)
    # The person's words by priority (rules, facts, goals), newest first within each; one that
    # does not fit is left out whole and its room goes to the next that does.
    said_head = "\nThe person said (verbatim, latest values):"
    chosen = choose([(s.kind, len(s.text) + 3) for s in said], room - len(said_head))
    said_lines = [said[i].text for i in chosen]
    said_text = ""
    if said_lines:
        said_text = said_head + "".join("\n- " + line for line in said_lines)
        room -= len(said_text)

    if said_only:
        said_text = _labelled(said_head, said_lines, ledger, since, room)
        if bare:
            return said_text.lstrip("\n")
        return head + said_text + "]" if said_text else ""
    sections: dict[str, str] = {}
    # (title, items newest first, separator), in the order they give way: first listed is kept.
    commands = [
        f"`{c}`" + (f" (exit {code})" if code is not None else "")
        for c, code in reversed(ledger.commands.items())
    ]
    plan: list[tuple[str, list[str], str]] = []
    # What the agent still waits on (a sub-agent at work) comes before everything it did.
    open_now = [w.line() for w in waiting()]
    if open_now:
        plan.append(("Waiting on", open_now, "; "))
    if show_task and ledger.task:
        plan.append(("Task", [" ".join(ledger.task.split())], ""))
    plan += [
        ("Failing tests", list(reversed(ledger.failing)), ", "),
        ("Errors seen", list(reversed(ledger.errors)), ", "),
        ("Files edited", list(reversed(ledger.edited)), ", "),
        ("Last command", commands[:1], ""),
        ("Open todos", list(ledger.todos or ()), "; "),
        ("Files read", [f for f in reversed(ledger.files) if f not in ledger.edited], ", "),
        ("Earlier commands", commands[1:], "; "),
    ]
    # A tiny note is not worth a range longer than what it names.
    if recall and stands_for_chars < 2 * len(recall):
        recall = ""
    reserved = False
    for title, items, sep in plan:
        if title == "Files read" and recall and room >= len(recall) + 1:
            # the way back to everything comes before the lists of what was only read or run
            room -= len(recall) + 1
            reserved = True
        text, room = _section(title, items, room, sep)
        if text:
            sections[title] = text
    order = (
        "Waiting on",
        "Task",
        "Errors seen",
        "Failing tests",
        "Files edited",
        "Files read",
        "Last command",
        "Earlier commands",
        "Open todos",
    )
    # The recall range is shown last (it is in meta in full whatever the text shows), with the
    # room kept for it before files read and earlier commands.
    if recall and not reserved and room < len(recall) + 1:
        recall = ""
    if said_lines:
        # the values the person replaced, labelled, in the room everything else leaves
        spare = room - (len(recall) + 1 if recall and not reserved else 0)
        said_text = _labelled(said_head, said_lines, ledger, since, spare)
    # One line of facts after the opening count (as notes always read); the person's words,
    # when there are any, one sentence a line between them.
    rest = " ".join([*(sections[t] for t in order if t in sections), *([recall] if recall else [])])
    if bare:
        return (said_text + ("\n" + rest if rest else "")).strip()
    if said_text:
        text = head + said_text + ("\n" + rest if rest else "")
    else:
        text = head + (" " + rest if rest else "")
    return text.rstrip() + "]"


def _labelled(
    said_head: str, lines: Sequence[str], ledger: Ledger, since: Sequence[str], spare: int
) -> str:
    """The person's lines under ``said_head``, each with the values its statement replaced
    (labelled, rules first), then one line of the values later messages replaced, as far as
    ``spare`` characters go: the model sees the history, never as current. ``""`` without
    lines."""
    if not lines:
        return ""
    out = list(lines)
    by = _by_newer(ledger.stale)
    for n, line in enumerate(out):
        note = _replaced(by, line) if by else ""
        if note and len(note) <= spare:
            out[n] = line + note
            spare -= len(note)
    text = said_head + "".join("\n- " + line for line in out)
    tail = _values_line("(later messages replaced: ", since)
    if tail and len(tail) + 1 <= spare:
        text += "\n" + tail
    return text


@functools.lru_cache(maxsize=1024)
def _sentences(text: str) -> tuple[str, ...]:
    """The statements of a later message, by its text: a run writes one ledger a round (and a
    note for every cut it tries) against the same later messages."""
    return tuple(s.text for s in statements(text))


def _current(ledger: Ledger, later: Sequence[str]) -> tuple[list[Statement], list[str]]:
    """The ledger's statements that no person's message in ``later`` supersedes; and the
    values those it supersedes held that their newer statements do not (newest first).

    Answered once per ledger for the same statements, stale pairs and ``later`` (the ledger
    keeps the last answer, with what it was asked about): a summary's ledger is written
    again and again in less room against the same later messages, and reading them is the
    costly part. A ledger changed since, or other later messages, is read again."""
    # Only a statement of the ledger can be superseded: with none, the later messages need not
    # be read (reading them is the costly part of a note).
    if not ledger.said or not later:
        return list(ledger.said), []
    key = (tuple(ledger.said), tuple(ledger.stale), tuple(later))
    held = ledger.current
    if held is not None and held[0] == key:
        return list(held[1]), list(held[2])
    later_sentences = [s for text in later for s in _sentences(text)]
    hits = supersessions(later_sentences, (s.text for s in ledger.said))
    by = _by_newer(ledger.stale)
    values: list[str] = []
    stale: set[str] = set()
    for at in sorted(hits, reverse=True):  # the newest first
        newer, hit = later_sentences[at], hits[at]
        now = set(values_of(newer))
        for old in sorted(hit - stale):
            for value in [*values_of(old), *_history(by, old, now)]:
                if value not in now and value not in values:
                    values.append(value)
        stale |= hit
    said = [s for s in ledger.said if s.text not in stale]
    ledger.current = (key, tuple(said), tuple(values))
    return said, values


#: How far (characters) a replaced value may stand from the label that says so: a value
#: further along the line could be read without it, so it is not shown.
_REPLACED_REACH: Final = 32


def _replaced(by: dict[str, list[str]], current: str) -> str:
    """`` (replaced earlier: $605, $415)``: the values the statements ``current`` superseded
    held (directly or through a chain of supersessions; ``by``: the ledger's stale pairs, see
    ``_by_newer``), newest first, each within ``_REPLACED_REACH`` characters of the label;
    ``""`` when there are none.

    Latest value only stays the rule for what is *current*: the replaced values are shown
    beside the current one, labelled, so the history is visible without a stale value ever
    reading as current."""
    if current not in by:  # it superseded nothing
        return ""
    values = _history(by, current, set(values_of(current)))
    return _values_line(" (replaced earlier: ", [v for v in values if v not in current])


def _by_newer(stale: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """The ledger's stale pairs ``(old, newer)`` as ``newer -> [old, ...]`` (oldest first)."""
    by: dict[str, list[str]] = {}
    for old, newer in stale:
        by.setdefault(newer, []).append(old)
    return by


def _history(by: dict[str, list[str]], current: str, now: set[str]) -> list[str]:
    """The values of the statements ``current`` superseded, directly or through a chain of
    supersessions (``by``: the ledger's pairs, see ``_by_newer``), newest first, those in
    ``now`` left out."""
    if not by:
        return []
    values: list[str] = []
    seen = {current}
    todo = [current]
    while todo:
        for old in reversed(by.get(todo.pop(0), ())):
            if old not in seen:
                seen.add(old)
                todo.append(old)
                values += [v for v in values_of(old) if v not in now and v not in values]
    return values


def replaced_values(ledger: Ledger, later: Sequence[str] = ()) -> set[str]:
    """The values the person replaced: those of the ledger's superseded statements (and of
    those a message in ``later`` supersedes) that no current statement holds. A text that
    shows one of them outside its label presents a stale value as current."""
    said, since = _current(ledger, later)
    current = set().union(*(value_set(s.text) for s in said))
    old = set().union(*(value_set(text) for text, _ in ledger.stale))
    return (old | set(since)) - current


_REPLACED_LABEL: Final = re.compile(r" \(replaced earlier: [^\n]*\)$")


def line_statement(line: str) -> str | None:
    """The statement a ledger line (``- <sentence>``) shows, without the label of the values
    it replaced; None for a line that is not a statement's."""
    if not line.startswith("- "):
        return None
    return _REPLACED_LABEL.sub("", line[2:])


def _values_line(label: str, values: Sequence[str]) -> str:
    """``label``, then ``values`` and ``)``: a value that would stand further than
    ``_REPLACED_REACH`` characters from the last label gets one of its own (``; earlier: ``),
    so none can be read without it; ``""`` when there are none."""
    if not values:
        return ""
    parts = [label, values[0]]
    reach = len(values[0])
    for value in values[1:]:
        if reach + 2 + len(value) > _REPLACED_REACH:
            parts += ["; earlier: ", value]
            reach = len(value)
        else:
            parts += [", ", value]
            reach += 2 + len(value)
    return "".join(parts) + ")"


def choose(items: Sequence[tuple[str, int]], room: int) -> list[int]:
    """Which of ``items`` (kind, cost), oldest first, fit ``room``: by priority (rules, facts,
    goals), newest first within a kind, each whole or not at all; answered in the order shown
    (by priority, oldest first within a kind)."""
    chosen: list[int] = []
    for kind in sorted(PRIORITY, key=PRIORITY.__getitem__, reverse=True):
        picked = []
        for index in range(len(items) - 1, -1, -1):
            if items[index][0] == kind and items[index][1] <= room:
                picked.append(index)
                room -= items[index][1]
        chosen.extend(reversed(picked))
    return chosen


def _section(title: str, items: Sequence[str], room: int, sep: str) -> tuple[str, int]:
    """``title: a, b (+n more).`` within ``room`` characters; items in the order given."""
    if not items or room <= len(title) + 8:
        return "", room
    shown: list[str] = []
    used = len(title) + 4
    for item in items:
        cost = len(item) + len(sep)
        if used + cost + 12 > room:
            break
        shown.append(item)
        used += cost
    if not shown:
        return "", room
    more = len(items) - len(shown)
    text = f"{title}: {sep.join(shown)}" + (f" (+{more} more)" if more else "") + "."
    return text, room - len(text) - 1
