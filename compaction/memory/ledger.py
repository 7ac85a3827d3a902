"""One running ledger: the record a compaction leaves where messages went.

Nothing vanishes without a trace (a model that cannot tell what was removed redoes the work or
contradicts it), and traces must not pile up: every layer that
removes messages (the sliding window's note, the summary, the tool-result placeholders) feeds
the same structured, model-free record, and the next compaction carries it forward:

- the task (its opening words, shown when the task message itself is gone);
- what the person said, verbatim sentence by sentence ([`compaction.memory.words`][]), the latest
  value of each subject only;
- files read and files edited ([`compaction.memory.shell`][] tells an edit from a read);
- commands with their exit codes, error names, failing test ids, open todos;
- how many messages and tool steps it stands for, and their recall ids;
- the calls the conversation still waits on when it is written, sub-agents first (tool, call id,
  task line: [`compaction.memory.agents`][]), named afresh by every compaction, never carried.

The record lives in ``meta["compaction"]["facts"]``; a later compaction reads it from there and
never from the note's text, which anyone could have typed. Its text ([`compaction.memory.note`][])
is
deterministic and bounded: at most half the characters it stands for and at most
``MAX_NOTE_CHARS`` (or the smaller cap the strategy passes), whichever is less; when the
bound forces a cut, the lowest priority goes first: commands and files read before errors,
tests and edits, those before the person's facts, and the person's rules last. Recall ids are
shown as one range; the full list stays in ``meta``.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..messages import Message
from .agents import waiting
from .facts import (
    call_arguments,
    call_files,
    command_line,
    error_names,
    exit_code,
    failing_tests,
    open_todos,
)
from .transcript import is_note, is_person_written, original_refs, provenance
from .words import PRIORITY, Statement, Subjects, closed, latest, statements

__all__ = ["MAX_FACTS", "MAX_STATEMENTS", "Ledger", "ledger_of"]

#: Items kept per kind in ``meta`` (the newest win); the person's statements have their own cap.
MAX_FACTS: Final = 200
MAX_STATEMENTS: Final = 400
_TASK_CHARS: Final = 200
#: One message's own ledger (``_OWN``) and the ledger a note of ours recorded (``_RECORDED``),
#: read once while the message lives: a loop's runs and a layer's cuts fold in the same
#: messages and notes again. Keyed by the message's value (its meta takes part in its
#: equality), so a changed message is read again; only ever absorbed, never changed. At most
#: ``_HELD`` of each (a long session's history is not held twice).
_HELD: Final = 4096
_OWN: Final[weakref.WeakKeyDictionary[Message, Ledger]] = weakref.WeakKeyDictionary()
_RECORDED: Final[weakref.WeakKeyDictionary[Message, Ledger]] = weakref.WeakKeyDictionary()


def _put(into: dict[str, Any], item: str, value: Any = None) -> None:
    """Add ``item`` as the newest (moved to the end when present); the oldest goes past the cap."""
    into.pop(item, None)
    into[item] = value
    if len(into) > MAX_FACTS:
        del into[next(iter(into))]


class Ledger:
    """What a stretch of removed messages held: bounded, ordered oldest to newest, mergeable."""

    __slots__ = (
        "chars",
        "commands",
        "current",
        "edited",
        "errors",
        "failing",
        "files",
        "messages",
        "pending",
        "refs",
        "results",
        "said",
        "said_closed",
        "seen",
        "sentences",
        "stale",
        "steps",
        "task",
        "todos",
    )

    def __init__(self) -> None:
        self.task: str | None = None
        self.said: list[Statement] = []
        # True while no statement of ``said`` supersedes an earlier one (as [`latest`][]
        # leaves them): then a new statement need only be compared with those, not the whole
        # list re-read per statement. Only ``from_record`` (a record anyone may have
        # written) leaves it False.
        self.said_closed = True
        # ``said`` indexed by subject (the list it indexes, the index): see ``_subjects``
        self.sentences: tuple[list[Statement], Subjects] | None = None
        self.stale: list[tuple[str, str]] = []  # (superseded sentence, by)
        # What [`compaction.memory.note`][] last found current in ``said`` against the later
        # messages, with what it was asked about (``said``, ``stale``, the later texts): a
        # ledger written again in less room is not read against them again.
        self.current: tuple[tuple[object, ...], tuple[Statement, ...], tuple[str, ...]] | None = (
            None
        )
        self.seen: set[str] = set()
        self.files: dict[str, None] = {}
        self.edited: dict[str, None] = {}
        self.commands: dict[str, int | None] = {}
        self.errors: dict[str, None] = {}
        self.failing: dict[str, None] = {}
        self.todos: list[str] | None = None
        self.refs: list[str] = []
        self.pending: dict[str, str] = {}  # tool call id -> its command, for the exit code
        self.results: dict[str, int] = {}  # tool call id -> exit code, its call not yet seen
        self.messages = 0
        self.steps = 0
        self.chars = 0  # of the original messages it stands for: what bounds its text

    # -- reading messages ----------------------------------------------------------------------

    def add_message(self, message: Message, cache: dict[int, Ledger] | None = None) -> None:
        """Fold in one removed message (a note or summary of ours: its recorded ledger).

        ``cache`` (by ``id(message)``, for as long as the messages live) keeps each message's
        own ledger, so a layer that tries several cuts reads each message once."""
        record = provenance(message)
        if record is not None and is_note(message):
            self.absorb(_read_once(_RECORDED, message, lambda: Ledger.from_record(record)))
            return
        if cache is not None:
            own = cache.get(id(message))
            if own is None:
                own = cache[id(message)] = _read_once(_OWN, message, lambda: _own(message))
            self.absorb(own)
            return
        self.messages += 1
        self.chars += len(message.content) + sum(len(c.arguments) for c in message.tool_calls)
        # A placeholder or a cut is named by its original (what recall finds), not itself.
        self.refs.extend(original_refs(message))
        if is_person_written(message):
            self._said(message.content)
        if message.tool_calls:
            self.steps += 1
        for call in message.tool_calls:
            self._add_call(call.id, call.name, call.arguments)
        if message.role == "tool":
            self._add_result(message, record)
        elif message.content:
            for name in error_names(message.content):
                _put(self.errors, name)

    def set_task(self, text: str) -> None:
        """Record the task (its opening words): the layer that removed it says so."""
        self.task = " ".join(text.split())[:_TASK_CHARS] or None

    def _said(self, text: str) -> None:
        for statement in statements(text, self.seen):
            self._state(statement)

    def _state(self, statement: Statement) -> None:
        if not self.said_closed:
            kept, gone = latest([*self.said, statement])
            self.said = kept[-MAX_STATEMENTS:]
            self.stale.extend((old.text, by) for old, by in gone)
            del self.stale[:-MAX_FACTS]
            self.said_closed = True
            return
        # ``latest`` over the closed list and the new statement: the list's own statements
        # supersede none of their elders, so only the new one can take any out, and only
        # those that share a word of its subject can be (the index says which).
        said, index = self.said, self._subjects()
        text = statement.text
        hit = index.superseded_by(text)
        if hit:
            still: list[Statement] = []
            for old in said:
                if old.text in hit:
                    self.stale.append((old.text, text))
                    index.remove(old.text)
                else:
                    still.append(old)
            said[:] = still
        said.append(statement)
        index.add(text)
        if len(said) > MAX_STATEMENTS:
            for old in said[:-MAX_STATEMENTS]:
                index.remove(old.text)
            del said[:-MAX_STATEMENTS]
        del self.stale[:-MAX_FACTS]

    def _subjects(self) -> Subjects:
        """The index of ``said`` by subject, built again when ``said`` was replaced or
        changed in place by anything but ``_state``."""
        held = self.sentences
        if held is None or held[0] is not self.said or len(held[1]) != len(self.said):
            held = self.sentences = (self.said, Subjects(s.text for s in self.said))
        return held[1]

    def _add_call(self, call_id: str, name: str, arguments: str) -> None:
        args = call_arguments(arguments)
        read, edited = call_files(name, args)
        for path in edited:
            self.files.pop(path, None)
            _put(self.edited, path)
        for path in read:
            if path not in self.edited:
                _put(self.files, path)
        line = command_line(args)
        if line is not None and name != "str_replace_editor":
            _put(self.commands, line)
            self.pending[call_id] = line
        todos = open_todos(args)
        if todos is not None:
            self.todos = todos

    def _add_result(self, message: Message, record: Mapping[str, Any] | None) -> None:
        own = record.get("facts") if record is not None else None
        text = message.content
        code = exit_code(text)
        if isinstance(own, Mapping):  # a placeholder: what its original output held
            if code is None and isinstance(own.get("exit"), int):
                code = own["exit"]
            for name in own.get("errors", ()):
                _put(self.errors, str(name))
            for test in own.get("failing", ()):
                _put(self.failing, str(test))
        if code is not None:
            self._exit(message.tool_call_id or "", code)
        for name in error_names(text):
            _put(self.errors, name)
        for test in failing_tests(text):
            _put(self.failing, test)

    def _exit(self, call_id: str, code: int) -> None:
        command = self.pending.pop(call_id, None)
        if command is None:
            # the call is in another message, read apart (a cached ledger): matched on absorb
            self.results[call_id] = code
        elif command in self.commands:
            self.commands[command] = code

    # -- merging -------------------------------------------------------------------------------

    def absorb(self, other: Ledger) -> None:
        """Fold in ``other``, a ledger of newer messages."""
        self.messages += other.messages
        self.steps += other.steps
        self.chars += other.chars
        self.refs.extend(other.refs)
        if other.task is not None:
            self.task = self.task or other.task
        # Most ledgers absorbed are one message's own, with one or two kinds of facts: the
        # empty kinds are skipped without a loop (a layer absorbs every removed message, for
        # every cut it tries).
        if other.said:
            fresh: list[Statement] = []
            for statement in other.said:
                key = statement.text.lower().rstrip(".!? ")
                if key not in self.seen:
                    self.seen.add(key)
                    fresh.append(statement)
            if not self.said and len(fresh) <= MAX_STATEMENTS:
                # A new ledger taking an older one's statements (a note merged): the same
                # as stating them one by one, answered once for the list.
                kept, gone = latest(fresh)
                self.said, self.said_closed = kept, True
                self.stale.extend((old.text, by) for old, by in gone)
                del self.stale[:-MAX_FACTS]
            else:
                for statement in fresh:
                    self._state(statement)
        if other.stale:
            self.stale.extend(other.stale)
        if other.edited:
            for path in other.edited:
                self.files.pop(path, None)
                _put(self.edited, path)
        if other.files:
            for path in other.files:
                if path not in self.edited:
                    _put(self.files, path)
        if other.commands:
            for command, code in other.commands.items():
                _put(self.commands, command, code)
        if other.pending:
            self.pending.update(other.pending)
        if other.results:
            for call_id, code in other.results.items():
                self._exit(call_id, code)
        if other.errors:
            for name in other.errors:
                _put(self.errors, name)
        if other.failing:
            for test in other.failing:
                _put(self.failing, test)
        if other.todos is not None:
            self.todos = other.todos

    def merge(self, record: Mapping[str, Any]) -> None:
        """Fold in an older note's or summary's recorded ledger (``record``: its provenance)."""
        self.absorb(Ledger.from_record(record))

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Ledger:
        """The ledger an older note recorded (its provenance), read from ``meta`` only."""
        out = cls()
        facts = record.get("facts")
        refs = [str(r) for r in record.get("replaces") or ()]
        out.refs = refs
        if not isinstance(facts, Mapping):
            out.messages = len(refs)
            return out
        out.messages = _int(facts.get("messages"), len(refs))
        out.steps = _int(facts.get("steps"), 0)
        out.chars = _int(facts.get("chars"), 0)
        task = facts.get("task")
        out.task = str(task)[:_TASK_CHARS] if task else None
        for item in _items(facts.get("said")):
            if isinstance(item, Sequence) and len(item) == 2 and item[0] in PRIORITY:
                out.said.append(Statement(item[0], str(item[1])))
                out.seen.add(str(item[1]).lower().rstrip(".!? "))
        out.said_closed = not out.said
        for item in _items(facts.get("stale")):
            if isinstance(item, Sequence) and len(item) == 2:
                out.stale.append((str(item[0]), str(item[1])))
        for key, into in (
            ("edited", out.edited),
            ("files", out.files),
            ("errors", out.errors),
            ("failing", out.failing),
        ):
            for item in _items(facts.get(key)):
                _put(into, str(item))
        for item in _items(facts.get("commands")):
            if isinstance(item, str):  # an older note: commands without exit codes
                _put(out.commands, item)
            elif isinstance(item, Sequence) and len(item) == 2:
                code = item[1] if isinstance(item[1], int) else None
                _put(out.commands, str(item[0]), code)
        todos = facts.get("todos")
        if isinstance(todos, Sequence) and not isinstance(todos, str):
            out.todos = [str(t) for t in todos][:MAX_FACTS]
        return out

    def record(self) -> dict[str, Any]:
        """The ledger as plain data, for the note's provenance."""
        if self.said_closed:
            closed(self.said)  # read back from the note, it need not be checked again
        record: dict[str, Any] = {
            "messages": self.messages,
            "steps": self.steps,
            "chars": self.chars,
            "task": self.task,
            "said": tuple((s.kind, s.text) for s in self.said),
            "stale": tuple(self.stale),
            "edited": tuple(self.edited),
            "files": tuple(f for f in self.files if f not in self.edited),
            "commands": tuple((c, code) for c, code in self.commands.items()),
            "errors": tuple(self.errors),
            "failing": tuple(self.failing),
            "todos": tuple(self.todos) if self.todos is not None else None,
        }
        open_now = waiting()
        if open_now:  # the calls still open in the conversation compacted (not carried on)
            record["waiting"] = tuple((w.call_id, w.name, w.task, w.agent) for w in open_now)
        return record


def _own(message: Message) -> Ledger:
    own = Ledger()
    own.add_message(message)
    return own


def _read_once(
    held: weakref.WeakKeyDictionary[Message, Ledger], message: Message, read: Any
) -> Ledger:
    found = held.get(message)
    if found is None:
        if len(held) >= _HELD:
            held.clear()
        found = held[message] = read()
    return found


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _items(value: Any) -> Iterable[Any]:
    if isinstance(value, (list, tuple)):
        return value[: MAX_STATEMENTS + MAX_FACTS]
    return ()


def ledger_of(messages: Sequence[Message], cache: dict[int, Ledger] | None = None) -> Ledger:
    """The ledger of ``messages``, oldest first (older notes among them merged in); ``cache``
    as for [`Ledger.add_message`][]."""
    ledger = Ledger()
    for message in messages:
        ledger.add_message(message, cache)
    return ledger
