"""How a conversation is shaped: system block, groups, turns, the task anchor, provenance.

Every strategy reads a conversation through [`parse`][], so they all agree on the units that
may be dropped or kept. The unit is the **group**: a user message, or an assistant message
together with every tool result that answers it. Groups are kept or dropped whole; that is the
whole defence against the split-tool-pair 400 errors the peers keep shipping.

Provenance (which strategy wrote a message, and which messages it stands for) lives in
``meta["compaction"]``, never in the text, so a tool output that merely *looks* like one of our
notes is never taken for one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from .. import _run_memo
from ..messages import Message
from . import _reparse

if TYPE_CHECKING:
    from ..tokens import TokenCounter

__all__ = [
    "PINNED_KEY",
    "WORDS_MAX_TOKENS",
    "WORDS_SHARE",
    "PROVENANCE_KEY",
    "SYNTHETIC_KEY",
    "Group",
    "Transcript",
    "is_compaction_output",
    "is_note",
    "is_person_written",
    "is_pinned",
    "is_synthetic",
    "mark",
    "message_ref",
    "original_refs",
    "parse",
    "provenance",
]

PROVENANCE_KEY: Final = "compaction"

#: The share of the target the person's own messages may take, kept verbatim, newest first.
#: A quarter: what the person typed is what the agent must not forget, and it is small next to
#: tool output (a real coding session's user turns are a few percent of it), so a quarter
#: keeps every recent message whole while three quarters stay for the task, the newest steps
#: and the ledger. Older messages past the share are not lost: the ledger carries their
#: sentences that instruct, constrain or name something, verbatim ([`compaction.memory.words`][]).
WORDS_SHARE: Final = 0.25
#: ... and never more than this many tokens, whatever the target: Codex keeps up to 20k tokens
#: of user messages when it compacts, and past that a window is better spent on the work.
WORDS_MAX_TOKENS: Final = 20_000

#: Kinds of message a strategy writes. "note" and "summary" stand in for messages that are
#: gone, so they are never a real user request; "placeholder" and "truncated" are the same
#: message with less content.
Kind = Literal["note", "summary", "placeholder", "truncated"]
_STAND_IN_KINDS: Final = frozenset({"note", "summary"})


def provenance(message: Message) -> Mapping[str, Any] | None:
    """The provenance record a strategy left on ``message``, or None for original messages."""
    record = message.meta.get(PROVENANCE_KEY)
    if record is None or type(record) is dict:  # the usual answers, without the ABC check
        return record
    return record if isinstance(record, Mapping) else None


#: ``meta`` key marking a user-role message the agent harness wrote, not the user: a system
#: reminder, an interruption marker, a background-task notification. Readers set it; such a
#: message is never the task anchor, so the user's real request keeps that protection.
SYNTHETIC_KEY: Final = "synthetic"


def is_synthetic(message: Message) -> bool:
    """True for a user-role message the harness wrote (``meta["synthetic"]`` is True)."""
    return message.meta.get(SYNTHETIC_KEY) is True


#: ``meta`` key a caller sets (True) on a message no layer may drop or summarise: a
#: constraint, a plan, a fact the agent must keep seeing. Only the last-resort cut
#: ([`compaction.strategies.fit`][]) may shorten one, and only when it alone is too big.
PINNED_KEY: Final = "pinned"


def is_pinned(message: Message) -> bool:
    """True for a message the caller pinned (``meta["pinned"]`` is True)."""
    return message.meta.get(PINNED_KEY) is True


def is_person_written(message: Message) -> bool:
    """True for a user message a person wrote: not synthetic, not a note or summary of ours."""
    return message.role == "user" and not is_synthetic(message) and not is_note(message)


def is_compaction_output(message: Message) -> bool:
    """True when a strategy produced or rewrote this message."""
    return provenance(message) is not None


def is_note(message: Message) -> bool:
    """True for a note or summary standing in for dropped messages (never a task anchor), cut
    or not."""
    record = provenance(message)
    return record is not None and (
        record.get("kind") in _STAND_IN_KINDS or record.get("of") in _STAND_IN_KINDS
    )


def message_ref(message: Message) -> str:
    """A stable reference to ``message`` for provenance records.

    Its ``id`` when it has one (sessions assign them); otherwise a content fingerprint (role,
    text, the call it answers, the calls it makes with their arguments), which is the same
    for the same message in any process.
    """
    if message.id is not None:
        return message.id
    digest = hashlib.sha1(usedforsecurity=False)
    digest.update(message.role.encode())
    digest.update(b"\0")
    digest.update(message.content.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update((message.tool_call_id or "").encode())
    for call in message.tool_calls:
        # The call's name and arguments too: two steps that differ only there (the same call
        # id in two conversations, reading two users' files) are two messages, never one.
        for part in (call.id, call.name, call.arguments):
            digest.update(b"\0")
            digest.update(part.encode("utf-8", "surrogatepass"))
    return "sha1:" + digest.hexdigest()[:16]


def original_refs(message: Message) -> tuple[str, ...]:
    """The recall ids of the originals ``message`` stands for: an earlier stand-in's (a note,
    a placeholder, a cut) whole list, else the message's own fingerprint. What [`mark`][]
    records for it, and what a marker written over it names."""
    record = provenance(message)
    earlier = record.get("replaces") if record is not None else None
    return tuple(earlier) if earlier else (message_ref(message),)


def mark(
    message: Message,
    *,
    strategy: str,
    kind: Kind,
    replaces: Iterable[Message] = (),
    content: str | None = None,
    refs: Sequence[str] | None = None,
    **extra: Any,
) -> Message:
    """Record on ``message`` that ``strategy`` produced it, standing for ``replaces``.

    When a replaced message was itself compaction output (a note, a summary, a placeholder, a
    truncated copy), its own provenance is folded in, so whatever is written over it still
    names the original messages — the ones the raw history holds and ``recall`` can find —
    never an intermediate rewrite that exists nowhere else.

    ``content``, when given, is the message's new text, set in the same copy: a layer that
    rewrites many messages makes one copy of each, not two. ``refs``, when given, are the
    recall ids of ``replaces`` exactly as read below, passed by a caller that names them in
    the new text and so has read them already (a fingerprint reads the whole text).
    """
    olds = list(replaces)
    if refs is None:
        refs = list(chain.from_iterable(original_refs(old) for old in olds))
    carried: dict[str, Any] = {}
    if len(olds) == 1 and kind in ("truncated", "placeholder"):
        # The same message with less text: a cut note or summary is still a stand-in (never a
        # request the person wrote), and it still carries the ledger it recorded.
        before = provenance(olds[0]) or {}
        if before.get("kind") in _STAND_IN_KINDS or before.get("of") in _STAND_IN_KINDS:
            carried["of"] = before.get("of") or before.get("kind")
        if "facts" in before:
            carried["facts"] = before["facts"]
    record = {"strategy": strategy, "kind": kind, "replaces": tuple(refs), **carried, **extra}
    meta = {**message.meta, PROVENANCE_KEY: record}
    if content is not None:
        return message.replace(content=content, meta=meta, tokens=None)
    return message.replace(meta=meta, tokens=None)


GroupKind = Literal["user", "note", "assistant", "step", "orphan"]


@attrs.frozen(slots=True)
class Group:
    """A run of messages kept or dropped whole: ``messages[start:end]``.

    kinds: ``user`` (a real user message), ``note`` (a compaction note or summary),
    ``assistant`` (an assistant message with no tool calls), ``step`` (an assistant message
    and the tool results answering it), ``orphan`` (tool results answering nothing before
    them: invalid input).
    """

    start: int
    end: int
    kind: GroupKind

    def __len__(self) -> int:
        return self.end - self.start


@attrs.frozen(slots=True)
class Transcript:
    """A parsed conversation. Indices refer to ``messages``.

    - ``system_end``: messages before it are the leading system block, never dropped.
    - ``groups``: every message after the system block, in order, in keep-or-drop units.
    - ``anchor``: index in ``groups`` of the newest person-written user message (never a note,
      never a synthetic message the harness wrote), or None when there is none. It splits the
      history from the current request.
    - ``task``: index in ``groups`` of the original task, the *first* person-written user
      message, or None. Harness replies (format errors, timeouts) are synthetic, so they never
      take this place: losing the task is how an agent forgets what it was asked to do.
    - ``pinned``: indices in ``groups`` holding a message the caller pinned.
    - ``words``: indices in ``groups`` of the person's newest messages kept verbatim within
      their share of the target ([`WORDS_SHARE`][]); empty unless [`parse`][] was given a
      counter and a target.

    The protection policy (see the README) in one place: [`protected`][] are the groups no
    layer may drop or summarise.
    """

    messages: tuple[Message, ...]
    system_end: int
    groups: tuple[Group, ...]
    anchor: int | None
    task: int | None = None
    pinned: frozenset[int] = frozenset()
    words: frozenset[int] = frozenset()

    @property
    def protected(self) -> frozenset[int]:
        """Groups never dropped or summarised: the task, the newest person-written user
        message, the person's newest messages within their share (``words``) and every pinned
        group (the system block is outside ``groups``)."""
        found = set(self.pinned) | self.words
        for index in (self.task, self.anchor):
            if index is not None:
                found.add(index)
        return frozenset(found)

    @property
    def history(self) -> tuple[Group, ...]:
        """Groups before the task anchor (all groups when there is no anchor)."""
        return self.groups if self.anchor is None else self.groups[: self.anchor]

    @property
    def current(self) -> tuple[Group, ...]:
        """The current task's own steps: the groups after the anchor (none without an anchor)."""
        return () if self.anchor is None else self.groups[self.anchor + 1 :]

    def turns(self) -> tuple[tuple[Group, ...], ...]:
        """The history split into units a strategy gives up oldest first.

        A unit starts at each real user message and at each note; whatever precedes the first
        of them (an assistant preamble) is a unit of its own.
        """
        units: list[list[Group]] = []
        for group in self.history:
            if not units or group.kind in ("user", "note"):
                units.append([group])
            else:
                units[-1].append(group)
        return tuple(tuple(unit) for unit in units)

    def slice(self, groups: Sequence[Group]) -> tuple[Message, ...]:
        """The messages of ``groups`` (contiguous), in order."""
        if not groups:
            return ()
        return self.messages[groups[0].start : groups[-1].end]


def parse(
    messages: Sequence[Message],
    *,
    counter: TokenCounter | None = None,
    target: int | None = None,
    share: float = WORDS_SHARE,
) -> Transcript:
    """Split ``messages`` into the system block and keep-or-drop groups, in one pass.

    With a ``counter`` and a ``target``, the person's newest messages (the task aside, which is
    protected on its own) are protected too while together they cost at most ``share`` of the
    target (and ``WORDS_MAX_TOKENS``): newest first, stopping at the first that does not
    fit, so what is kept verbatim is always the most recent stretch of what the person said."""
    transcript = _parse(messages)
    if counter is None or target is None or transcript.anchor is None:
        return transcript
    room = min(int(max(target, 0) * share), WORDS_MAX_TOKENS)
    words: set[int] = set()
    msgs = transcript.messages
    for index in range(transcript.anchor, -1, -1):
        group = transcript.groups[index]
        if group.kind != "user" or index == transcript.task:
            continue
        message = msgs[group.start]
        if not is_person_written(message):
            continue
        room -= counter.count(message)
        if room < 0:
            break
        words.add(index)
    return attrs.evolve(transcript, words=frozenset(words))


def _parse(messages: Sequence[Message]) -> Transcript:
    msgs = tuple(messages)
    n = len(msgs)
    i = 0
    while i < n and msgs[i].role == "system":
        i += 1
    memo = _run_memo.memo()
    if memo is not None:
        # Within a run, the view a layer hands down is mostly the previous view's messages:
        # only the stretch that changed is read again (``_reparse``).
        recent: list[Transcript] = memo.setdefault("transcripts", [])
        for old in recent:
            if old.messages is msgs:
                return old
        last = recent[0] if recent else None
        if last is not None and last.system_end == i:
            found = _reparse.reuse(last, msgs, _scan, is_synthetic, is_note, is_pinned)
        else:
            found = _whole(msgs, i)
        recent.insert(0, found)
        del recent[2:]
        return found
    return _whole(msgs, i)


def _whole(msgs: tuple[Message, ...], system_end: int) -> Transcript:
    groups: list[Group] = []
    pinned: set[int] = set()
    _, anchor, task = _scan(msgs, system_end, groups, pinned)
    return Transcript(msgs, system_end, tuple(groups), anchor, task, frozenset(pinned))


def _scan(
    msgs: tuple[Message, ...],
    i: int,
    groups: list[Group],
    pinned: set[int],
    until: int | None = None,
    stop: Callable[[int], bool] | None = None,
) -> tuple[int, int | None, int | None]:
    """Read groups from ``msgs[i]`` on into ``groups`` (pinned ones into ``pinned``), to the
    end or to the first group start from ``until`` on where ``stop`` says the rest is known.
    Answers where it stopped, and the newest and first person-written user groups read."""
    n = len(msgs)
    anchor: int | None = None
    task: int | None = None
    while i < n:
        if until is not None and i >= until and stop is not None and stop(i):
            break
        m = msgs[i]
        if m.meta.get(PINNED_KEY) is True:
            pinned.add(len(groups))  # the group that starts here (or the step it is in)
        if m.role == "assistant" and m.tool_calls:
            calls = m.tool_calls
            # Most steps make one call: its id is matched without building a set (ids are str).
            ids = (calls[0].id,) if len(calls) == 1 else {call.id for call in calls}
            j = i + 1
            while j < n:
                result = msgs[j]
                if result.role != "tool" or result.tool_call_id not in ids:
                    break
                if result.meta.get(PINNED_KEY) is True:
                    pinned.add(len(groups))
                j += 1
            groups.append(Group(i, j, "step"))
            i = j
            continue
        if m.role == "tool":
            j = i + 1
            while j < n and msgs[j].role == "tool":
                j += 1
            groups.append(Group(i, j, "orphan"))
            i = j
            continue
        if m.role == "user":
            if is_note(m):
                groups.append(Group(i, i + 1, "note"))
            else:
                if not is_synthetic(m):
                    anchor = len(groups)
                    if task is None:
                        task = anchor
                groups.append(Group(i, i + 1, "user"))
        elif m.role == "assistant":
            groups.append(Group(i, i + 1, "note" if is_note(m) else "assistant"))
        else:  # a system message after the leading block: invalid, kept as its own unit
            groups.append(Group(i, i + 1, "orphan"))
        i += 1
    return i, anchor, task
