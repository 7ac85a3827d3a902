"""What Summary's planner reads of the person's words in a message, read once while it lives.

The planner weighs every message of the view for every plan it considers, in every round
and every run of a loop; the notes a loop carries from run to run hold hundreds of the
person's statements each. What a message says does not change while it lives (a message is
frozen, and these are keyed by its value: role, text, calls and ``meta`` all take part in its
equality), so it is read once and held weakly: a changed message is another key, read again,
and nothing is held past the message itself.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Final

import attrs

from ..memory.transcript import Transcript, is_note, is_person_written, provenance
from ..memory.words import PRIORITY, Statement, statements
from ..messages import Message
from ..tokens import TokenCounter

_SAID: Final[weakref.WeakKeyDictionary[Message, tuple[Statement, ...]]] = (
    weakref.WeakKeyDictionary()
)
#: ``(kind, tokens + 1)`` of each statement ``said`` reads, by counter, then by message.
_SIZED: Final[
    weakref.WeakKeyDictionary[
        TokenCounter, weakref.WeakKeyDictionary[Message, tuple[tuple[str, int], ...]]
    ]
] = weakref.WeakKeyDictionary()
#: What each statement's text counts, by counter: the same statement rides in the ledger of
#: every note and summary that carries it (a long session's summaries share most of theirs),
#: so it is counted once, not once per message. Texts are held while the counter lives, at
#: most ``_TEXTS`` of them.
_TEXT_TOKENS: Final[weakref.WeakKeyDictionary[TokenCounter, dict[str, int]]] = (
    weakref.WeakKeyDictionary()
)
_TEXTS: Final = 4096
#: Whether a message's text holds a statement (``said_words``).
_SAYS: Final[weakref.WeakKeyDictionary[Message, bool]] = weakref.WeakKeyDictionary()


#: The mappings under ``_SAID`` and ``_SAYS``, read directly (``data[ref(key)]``, as the
#: mapping itself would): the planner asks for every message of the view each round.
_SAID_DATA: Final[dict[weakref.ref[Message], tuple[Statement, ...]]] = _SAID.data  # type: ignore[attr-defined]
_SAYS_DATA: Final[dict[weakref.ref[Message], bool]] = _SAYS.data  # type: ignore[attr-defined]
_ref = weakref.ref


def said(message: Message) -> tuple[Statement, ...]:
    """The person's statements ``message`` carries: its own, or the ledger a note of ours
    records (read once per message)."""
    if _silent(message):
        return ()
    found = _SAID_DATA.get(_ref(message))
    if found is None:
        found = _SAID[message] = tuple(_read_said(message))
    return found


def _silent(message: Message) -> bool:
    """Whether ``message`` can carry none of the person's statements, told at a glance: not
    theirs (a user message) and no note or summary of ours. Most of a long history is such
    (the agent's calls and their results, cleared or not): nothing is held for them, which
    would cost more than telling it again."""
    return message.role != "user" and not is_note(message)


def said_sized(message: Message, counter: TokenCounter) -> tuple[tuple[str, int], ...]:
    """Each statement of ``said(message)`` as ``(kind, what its text counts + 1)`` (its
    line), counted once per message and counter."""
    if _silent(message):
        return ()
    try:
        by_message = _SIZED.get(counter)
        if by_message is None:
            by_message = _SIZED[counter] = weakref.WeakKeyDictionary()
    except TypeError:  # a counter that cannot be held weakly: counted every time
        return tuple((s.kind, counter.count_text(s.text) + 1) for s in said(message))
    sized = by_message.get(message)
    if sized is None:
        texts = _TEXT_TOKENS.get(counter)
        if texts is None or len(texts) >= _TEXTS:
            texts = _TEXT_TOKENS[counter] = {}
        out = []
        for s in said(message):
            n = texts.get(s.text)
            if n is None:
                n = texts[s.text] = counter.count_text(s.text)
            out.append((s.kind, n + 1))
        sized = by_message[message] = tuple(out)
    return sized


def _says(message: Message) -> bool:
    says = _SAYS_DATA.get(_ref(message))
    if says is None:
        says = _SAYS[message] = bool(statements(message.content))
    return says


def _read_said(message: Message) -> list[Statement]:
    if is_person_written(message):
        return statements(message.content)
    record = provenance(message) if is_note(message) else None
    facts = record.get("facts") if record is not None else None
    found = facts.get("said") if isinstance(facts, Mapping) else None
    if not isinstance(found, (list, tuple)):
        return []
    return [
        Statement(item[0], str(item[1]))
        for item in found
        if isinstance(item, (list, tuple)) and len(item) == 2 and item[0] in PRIORITY
    ]


def said_words(t: Transcript) -> Transcript:
    """``t`` with the words' share protecting only the person's messages that say something
    (a statement the ledger would carry: an instruction, a value, a goal). A summary writes
    the person's statements verbatim into its text; a message of theirs that holds none
    ("ok", "let us keep going") spends room that their older rules would use, so it gives
    way first, as filler does in the ledger."""
    if not t.words:
        return t
    keep = frozenset(i for i in t.words if _says(t.messages[t.groups[i].start]))
    return t if keep == t.words else attrs.evolve(t, words=keep)
