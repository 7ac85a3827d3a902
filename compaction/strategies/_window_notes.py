"""SlidingWindow's notes: the note standing for the first ``p`` chunks of its drop order.

Kept apart from [`compaction.strategies.sliding_window`][] because one rewrite writes several
notes: the note grows with what it names, so the window writes one per cut it tries (more
chunks until the note fits, then one chunk less when the last group is kept in part). Each is
a few hundred characters, but its ledger reads every message it stands for, and reading them
again for each cut would cost more than the rest of the layer. So the notes of one rewrite
share what they read: each message's own ledger is read once
([`Memo`][compaction.memory.trace.Memo]),
and while the drop order is the conversation's order (the budget-driven layer: history oldest
first, then the current request's own oldest steps), a longer cut's ledger is the shorter
one's folded on, never folded again from the first message.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from ..memory.ledger import Ledger, ledger_of
from ..memory.note import ledger_cap, ledger_text
from ..memory.trace import Memo, refs_of
from ..memory.transcript import PROVENANCE_KEY, Transcript, is_person_written
from ..messages import Message


class Chunk:
    """One droppable unit of the window, in drop order: one or more groups (not always
    contiguous), with what they count."""

    __slots__ = ("chars", "groups", "messages", "notes_only", "tokens")

    def __init__(self, groups: list[int]) -> None:
        self.groups = groups
        self.tokens = 0
        self.messages = 0
        self.chars = 0
        self.notes_only = True


class _Unkept(dict[int, Ledger]):
    """A cache that keeps nothing: ``Ledger.add_message`` reads the message through its own
    ledger (as with a cache), which is dropped once folded in."""

    def __setitem__(self, key: int, value: Ledger) -> None:
        pass


def _copy(ledger: Ledger) -> Ledger:
    """A ledger that folds on as ``ledger`` would, apart from it: its containers copied (the
    statements and facts in them are not changed in place), and what it derives from them
    (the index of its statements, the last answer of what is current) read again."""
    out = Ledger.__new__(Ledger)
    for name in Ledger.__slots__:
        value = getattr(ledger, name)
        setattr(out, name, value.copy() if isinstance(value, (list, dict, set)) else value)
    out.sentences = None
    out.current = None
    return out


class WindowNotes:
    """The notes of one rewrite, for growing cuts ``chunks[:p]`` (any ``p``, in any order;
    growing ones share their work)."""

    def __init__(
        self, strategy: str, transcript: Transcript, chunks: Sequence[Chunk], target: int
    ) -> None:
        self.strategy = strategy
        self.transcript = transcript
        self.chunks = chunks
        self.target = target
        self.memo = Memo()
        groups = [g for chunk in chunks for g in chunk.groups]
        # A ledger is a fold over its messages in the conversation's order, with the task set
        # after it when the task went: a prefix's ledger folds on only when the drop order is
        # that order and the task is not among them.
        self._folds = (
            all(len(chunk.groups) == 1 for chunk in chunks)
            and all(a < b for a, b in pairwise(groups))
            and transcript.task not in groups
        )
        self._ledger = Ledger()
        self._upto = 0  # chunks folded into ``_ledger``
        # The folded ledger as it stood at each ``_upto`` it was folded on from, for a
        # shorter cut asked after a longer one (the last group kept in part).
        self._marks: dict[int, Ledger] = {}
        # The ledger's cap is in characters and the target in the counter's units: read how
        # many characters this counter takes a unit on what may go (4 for a tokenizer, 1 for
        # a character budget), so the cap scales with the budget either way.
        tokens = sum(chunk.tokens for chunk in chunks)
        self.chars_per_token = sum(chunk.chars for chunk in chunks) / tokens if tokens else 4.0

    def _replaced(self, chunks: Sequence[Chunk]) -> list[Message]:
        msgs = self.transcript.messages
        groups = self.transcript.groups
        replaced: list[Message] = []
        for index in sorted(g for chunk in chunks for g in chunk.groups):
            replaced.extend(msgs[groups[index].start : groups[index].end])
        return replaced

    def _ledger_of(self, p: int, replaced: list[Message], gone: set[int]) -> Ledger:
        if self._folds:
            # Each message is folded in once (through its own ledger, as ``ledger_of`` reads
            # it), and its own ledger is not kept: the memo would hold one per message of the
            # history (most of what the layer holds at its peak) for reads that never come.
            if p >= self._upto:
                ledger = self._ledger
                if p > self._upto:
                    self._marks[self._upto] = _copy(ledger)
                start = self._upto
                self._upto = p
            else:
                start = max(at for at in self._marks if at <= p)
                ledger = _copy(self._marks[start])
            for message in self._replaced(self.chunks[start:p]):
                ledger.add_message(message, _Unkept())
            return ledger
        ledger = ledger_of(replaced, self.memo.facts)
        task = self.transcript.task
        if task is not None and task in gone:
            ledger.set_task(self.transcript.messages[self.transcript.groups[task].start].content)
        return ledger

    def note(self, p: int) -> Message:
        """The note standing for the messages of ``chunks[:p]``: what went, by name (see
        [`compaction.memory.trace`][]), folding in the facts of older notes among them."""
        transcript = self.transcript
        msgs = transcript.messages
        groups = transcript.groups
        chunks = self.chunks[:p]
        replaced = self._replaced(chunks)
        refs = refs_of(replaced, self.memo.refs)
        gone = {g for chunk in chunks for g in chunk.groups}
        ledger = self._ledger_of(p, replaced, gone)
        chars = sum(c.chars for c in chunks)
        # The person's messages still there after the note: a value they changed since is
        # not shown as current in the note.
        first = min(gone, default=-1)
        later = [
            msgs[group.start].content
            for index, group in enumerate(groups)
            if index > first
            and index not in gone
            and group.kind == "user"
            and is_person_written(msgs[group.start])
        ]
        text = ledger_text(
            ledger,
            chars,
            messages=len(refs),
            max_chars=ledger_cap(self.target, self.chars_per_token),
            later=later,
            show_task=True,  # set only when the task itself went, now or earlier
        )
        record = {
            "strategy": self.strategy,
            "kind": "note",
            "replaces": refs,
            "dropped": len(refs),
            "facts": ledger.record(),
            "ledger_chars": len(text),
        }
        return Message("user", text, meta={PROVENANCE_KEY: record})
