"""The ledger's text: what the model reads where messages were removed.

Deterministic (the same ledger gives the same text) and bounded: at most half the characters
the ledger stands for, at most [`ledger_cap`][] of the target, whichever is less. When the
bound forces a cut, the lowest priority goes first: earlier commands, then files read and
todos, then the last command, files edited, errors and failing tests, then the person's
goals, their facts, and their rules last. Recall ids are shown as one range; the full list is
in ``meta``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from .words import statements, superseded

if TYPE_CHECKING:
    from .ledger import Ledger

__all__ = [
    "FLOOR_NOTE_CHARS",
    "LEDGER_SHARE",
    "MAX_NOTE_CHARS",
    "MIN_NOTE_CHARS",
    "ledger_cap",
    "ledger_text",
]

#: The absolute cap on a ledger's text (characters): about 1,500 tokens, whatever it replaces.
MAX_NOTE_CHARS: Final = 6000
MIN_NOTE_CHARS: Final = 100
#: Room a ledger always has (about 300 tokens), however small the target, as notes had before:
#: below it the files and errors of a run no longer fit, and what it costs is still bounded by
#: half of what it replaces.
FLOOR_NOTE_CHARS: Final = 1200
#: The share of the target a ledger may take (its text, at about four characters a token):
#: the rest is for what is still there verbatim.
LEDGER_SHARE: Final = 0.3
_CHARS_PER_TOKEN: Final = 4


def ledger_cap(target: int) -> int:
    """The most characters a ledger may take in a conversation compacted to ``target`` tokens:
    [`LEDGER_SHARE`][] of it, never less than [`FLOOR_NOTE_CHARS`][] (what a note always
    had room for) nor more than [`MAX_NOTE_CHARS`][]. The bound by what it replaces (half)
    applies as well, in [`ledger_text`][]."""
    share = int(target * LEDGER_SHARE * _CHARS_PER_TOKEN)
    return min(MAX_NOTE_CHARS, max(FLOOR_NOTE_CHARS, share))


def _recall(refs: Sequence[str]) -> str:
    unique = list(dict.fromkeys(refs))
    if not unique:
        return ""
    if len(unique) == 1:
        return f"Recall id: {unique[0]}."
    return f"Recall ids: {unique[0]} … {unique[-1]} ({len(refs)}, all listed in meta)."


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
) -> str:
    """The ledger's text, within ``min(max_chars, max(MIN_NOTE_CHARS, stands_for_chars // 2))``
    characters, the lowest priority cut first (see the module docstring).

    ``messages`` overrides the number of messages said to be removed; ``later`` are the
    person's messages still in the conversation after the ledger: a statement one of them
    supersedes is not shown as current. ``show_task``: the task message itself is gone.
    ``title`` replaces the opening count (a summary carries the ledger under its own header);
    ``said_only``: only what the person said, or ``""`` when none of it fits."""
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
    room = bound - len(head) - 1
    recall = _recall(ledger.refs)

    # Only a statement of the ledger can be superseded: with none, the later messages need not
    # be read (reading them is the costly part of a note).
    later_sentences = [s.text for text in later for s in statements(text)] if ledger.said else []
    stale = superseded(later_sentences, [s.text for s in ledger.said])
    said = [s for s in ledger.said if s.text not in stale]
    # The person's words by priority (rules, facts, goals), newest first within each; once one
    # does not fit, nothing of lower priority takes its room.
    said_head = "\nThe person said (verbatim, latest values):"
    chosen: set[int] = set()
    said_room = room - len(said_head)
    full = False
    for kind in ("rule", "fact", "goal"):
        for index in range(len(said) - 1, -1, -1):
            if said[index].kind != kind:
                continue
            cost = len(said[index].text) + 3
            if cost <= said_room:
                chosen.add(index)
                said_room -= cost
            else:
                full = True
                break
        if full:
            break
    said_lines = [said[i].text for i in sorted(chosen)]
    said_text = ""
    if said_lines:
        said_text = said_head + "".join("\n- " + line for line in said_lines)
        room -= len(said_text)

    if said_only:
        return head + said_text + "]" if said_text else ""
    sections: dict[str, str] = {}
    # (title, items newest first, separator), in the order they give way: first listed is kept.
    commands = [
        f"`{c}`" + (f" (exit {code})" if code is not None else "")
        for c, code in reversed(ledger.commands.items())
    ]
    plan: list[tuple[str, list[str], str]] = []
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
    for title, items, sep in plan:
        text, room = _section(title, items, room, sep)
        if text:
            sections[title] = text
    order = (
        "Task",
        "Errors seen",
        "Failing tests",
        "Files edited",
        "Files read",
        "Last command",
        "Earlier commands",
        "Open todos",
    )
    # The recall range goes last: it is in meta in full whatever the text shows, and a tiny
    # note is not worth a range longer than what it names.
    if recall and (room < len(recall) + 1 or stands_for_chars < 2 * len(recall)):
        recall = ""
    # One line of facts after the opening count (as notes always read); the person's words,
    # when there are any, one sentence a line between them.
    rest = " ".join([*(sections[t] for t in order if t in sections), *([recall] if recall else [])])
    if said_text:
        text = head + said_text + ("\n" + rest if rest else "")
    else:
        text = head + (" " + rest if rest else "")
    return text.rstrip() + "]"


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
