"""How many of the person's statements a conversation still shows: the measure the ladder
compares two answers by when both fit.

A statement (see [`compaction.memory.words`][]) is shown when the model reads it verbatim: in a
person-written message that is still there, or as a line of the ledger a note or summary of
ours writes ("- <the sentence>"). The statements counted are those of the conversation a layer
was handed: its person-written messages and the ledgers its notes and summaries carry in
``meta`` (never read from their text, which anyone could have typed).

Imported when a layer's answer drops person-written messages, not with the package: reading
sentences is not free, and most answers (tool outputs rewritten) keep every person-written
message as it was.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .engine import Run, reaches_trial
from .memory.note import line_statement
from .memory.transcript import is_note, is_person_written, provenance
from .memory.words import statements
from .messages import Message

__all__ = ["better", "keeps_every_statement", "shown", "trial"]


def _key(text: str) -> str:
    return " ".join(text.split()).lower().rstrip(".!? ")


def _carriers(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.role == "user" and (is_person_written(m) or is_note(m))]


def keeps_every_statement(before: Sequence[Message], after: Sequence[Message]) -> bool:
    """True when every message of ``before`` that carries the person's statements is in
    ``after`` as it was (the same object): nothing of theirs can have gone."""
    kept = {id(m) for m in after}
    return all(id(m) in kept for m in _carriers(before))


def _said(message: Message) -> list[str]:
    if is_person_written(message):
        return [s.text for s in statements(message.content)]
    record = provenance(message) or {}
    facts = record.get("facts")
    said = facts.get("said") if isinstance(facts, Mapping) else None
    if not isinstance(said, (list, tuple)):
        return []
    return [str(item[1]) for item in said if isinstance(item, (list, tuple)) and len(item) == 2]


#: Each message's keys, read once while it lives: the statements it carries (``_WANTED``) and
#: those it shows (``_SHOWN``). The ladder weighs several answers per run, each made mostly of
#: the same messages, and a loop runs the ladder again on what the last run kept. Keyed by
#: the message's value (its meta takes part in its equality), so a changed one is read again.
_WANTED: Final[weakref.WeakKeyDictionary[Message, frozenset[str]]] = weakref.WeakKeyDictionary()
_SHOWN: Final[weakref.WeakKeyDictionary[Message, frozenset[str]]] = weakref.WeakKeyDictionary()


def _wanted(message: Message) -> frozenset[str]:
    keys = _WANTED.get(message)
    if keys is None:
        keys = _WANTED[message] = frozenset(_key(text) for text in _said(message))
    return keys


def _shown(message: Message) -> frozenset[str]:
    keys = _SHOWN.get(message)
    if keys is None:
        if is_person_written(message):
            keys = frozenset(_key(s.text) for s in statements(message.content))
        else:
            lines = (line_statement(line) for line in message.content.splitlines())
            keys = frozenset(_key(said) for said in lines if said is not None)
        _SHOWN[message] = keys
    return keys


def shown(statements_of: Sequence[Message], messages: Sequence[Message]) -> int:
    """How many of the person's statements in ``statements_of`` ``messages`` show verbatim."""
    wanted: set[str] = set()
    for m in _carriers(statements_of):
        wanted.update(_wanted(m))
    if not wanted:
        return 0
    seen: set[str] = set()
    for message in _carriers(messages):
        seen.update(_shown(message))
    return len(wanted & seen)


def trial(run: Run, answer: tuple[Message, ...], call_next: Any = None) -> Run | None:
    """A trial run for the layers below a layer whose ``answer`` fits but shows fewer of the
    person's statements than what it was handed (``run.messages``), or None; None at once
    when no layer below ``call_next`` may answer a trial (the last free layers of a ladder):
    the trial would come back as it went, and reading the statements is the costly part.

    The ladder keeps the better of two answers that both fit, by the rules a layer is judged
    by (fits, smaller, valid) and one more: it never keeps fewer of the person's statements
    than another answer that also fits. The free layer that got under target may have given
    up more of them than a layer below would (the sliding window's note has less room than a
    summary that gives up the raw history around it), so the layers below are run on what it
    was handed, as a trial: not strict, and never a layer that spends a model call (rule 3
    holds: the free layers got the conversation under target)."""
    if not reaches_trial(call_next) or keeps_every_statement(run.messages, answer):
        return None
    if shown(run.messages, answer) >= shown(run.messages, run.messages):
        return None
    return Run(
        run.messages,
        run.tokens,
        run.target,
        run.counter,
        run.labels,
        strict=False,
        depth=run.depth,
        hard_limit=run.hard_limit,
        trial=True,
        pending=run.pending,
    )


def better(run: Run, answer: tuple[Message, ...], trial: Run) -> bool:
    """Whether ``trial`` (the layers below, on what the layer was handed) is the better
    answer: it changed something, it fits, and it shows more of the person's statements than
    the layer's own ``answer`` (a tie keeps the layer's: the cheaper one)."""
    if not trial.applied or trial.over:
        return False
    return shown(run.messages, trial.messages) > shown(run.messages, answer)
