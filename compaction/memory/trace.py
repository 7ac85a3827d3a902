"""What a cut leaves behind: the middle of a text cut with a marker, and recall ids.

A layer that cuts a message keeps its head and tail around a marker naming the recall id of the
original ([`cut_middle`][], [`cut_message`][]); a layer that removes messages leaves the
running ledger ([`compaction.memory.ledger`][]) where they were, naming them by [`refs_of`][].
The
round-2 names of the ledger (``Facts``, ``facts_of``, ``note_text``) are kept here so that code
written against them still runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

from ..messages import Message
from ..tokens import ApproximateCounter, CachingCounter, TiktokenCounter, TokenCounter
from .facts import MAX_COMMAND_CHARS, error_names, failing_tests, paths_in
from .ledger import MAX_FACTS, Ledger, ledger_of
from .note import MAX_NOTE_CHARS, MIN_NOTE_CHARS, ledger_text
from .transcript import is_note, mark, message_ref, original_refs, provenance

#: The round-2 name of the ledger.
Facts = Ledger

__all__ = [
    "CUT_MARKER",
    "MAX_COMMAND_CHARS",
    "MAX_FACTS",
    "MAX_NOTE_CHARS",
    "MIN_NOTE_CHARS",
    "Facts",
    "Memo",
    "cut_counted",
    "cut_message",
    "cut_middle",
    "error_names",
    "facts_of",
    "note_text",
    "paths_in",
    "refs_of",
]

#: Where a text was cut in its middle. ``{cut}``: characters cut; ``{ref}``: the recall id of
#: the original message (a session's ``recall`` gives it back whole).
CUT_MARKER: Final = "\n[… {cut:,} characters cut to fit the context window; recall id {ref} …]\n"


#: The edges that take a text's known count (``tokens=``).
_SIZED: Final = frozenset(
    {
        CachingCounter.head_end,
        CachingCounter.tail_start,
        ApproximateCounter.head_end,
        ApproximateCounter.tail_start,
        TiktokenCounter.head_end,
        TiktokenCounter.tail_start,
    }
)


def cut_middle(
    text: str,
    want: int,
    ref: str,
    counter: TokenCounter,
    marker: str = CUT_MARKER,
    *,
    tokens: int | None = None,
) -> str | None:
    """``text`` with its middle cut so that it counts about ``want`` tokens at most, head and
    tail kept around ``marker`` (formatted with ``cut`` and ``ref``); None when no cut makes it
    smaller. ``tokens`` is what ``text`` counts, when known (it saves encoding it).

    The cut points come from the counter's token offsets when it has them (``head_end`` and
    ``tail_start``: one encoding of the part kept, whatever the size of the text); otherwise
    the cut is sized from the text's own density. Either way only the shorter candidate is
    counted, a bounded few times."""
    found = cut_counted(text, want, ref, counter, marker, tokens=tokens)
    return None if found is None else found[0]


def cut_counted(
    text: str,
    want: int,
    ref: str,
    counter: TokenCounter,
    marker: str = CUT_MARKER,
    *,
    tokens: int | None = None,
    marker_tokens: int | None = None,
) -> tuple[str, int] | None:
    """[`cut_middle`][], with what the cut counts: the cut was encoded whole to check it,
    and a caller that counts it again (or the message made of it) would encode it twice.
    ``marker_tokens`` is what the formatted marker counts, when the caller knows it."""
    if tokens is None:
        tokens = counter.count_text(text)
    if tokens <= want or len(text) < 2:
        return None
    if marker_tokens is None:
        marker_tokens = counter.count_text(marker.format(cut=len(text), ref=ref))
    room = max(want - marker_tokens, 0)
    head_end = getattr(counter, "head_end", None)
    tail_start = getattr(counter, "tail_start", None)
    # Our edges take the text's count, to read a window sized from its density (a counter of
    # someone else's, or a subclass with edges of its own, is asked as the protocol says).
    edges = (getattr(type(counter), "head_end", None), getattr(type(counter), "tail_start", None))
    sized = edges[0] in _SIZED and edges[1] in _SIZED
    count_cut = getattr(counter, "count_cut", None) if sized else None
    for _ in range(6):
        a = b = None
        if head_end is not None and tail_start is not None:
            if sized:
                a = head_end(text, room - room // 2, tokens=tokens)
                b = tail_start(text, room // 2, tokens=tokens)
            else:
                a, b = head_end(text, room - room // 2), tail_start(text, room // 2)
        if a is None or b is None or a > b:
            kept = min(len(text) - 1, len(text) * room // max(tokens, 1))
            a, b = kept - kept // 2, len(text) - kept // 2
        middle = marker.format(cut=b - a, ref=ref)
        candidate = text[:a] + middle + text[b:]
        cost = None
        if a == 0 and b == len(text):
            cost = marker_tokens  # nothing kept: the marker alone, the very text just counted
        elif count_cut is not None:
            cost = count_cut(text, a, b, middle)  # from the windows the edges just read
        if cost is None:
            cost = counter.count_text(candidate)
        if cost <= want or room == 0:
            return (candidate, cost) if cost < tokens and len(candidate) < len(text) else None
        room = max(room - (cost - want) - 1, 0)
    return None


def _marker(text: str) -> str:
    """The cut marker, naming the failing tests and errors the text reports (at most three of
    each, the last ones: a test run's verdict sits in the middle of its output as often as at
    its end, and a cut must not be where it vanishes)."""
    names = error_names(text)[-3:] + [f"failing {t}" for t in failing_tests(text)[-3:]]
    if not names:
        return CUT_MARKER
    said = "; it reported " + ", ".join(names)
    said = said.replace("{", "{{").replace("}", "}}")
    return CUT_MARKER.replace(" …]", said + " …]")


def original_chars(message: Message) -> int:
    """How long the original text of ``message`` was: a message cut again (a tighter limit
    later) still tells the size of the text before the first cut."""
    record = provenance(message)
    if record is not None and record.get("kind") == "truncated":
        original: int = record.get("original_chars", len(message.content))
        return original
    return len(message.content)


def cut_message(
    message: Message, keep: int, counter: TokenCounter, *, strategy: str, least: int = 0
) -> Message | None:
    """``message`` with its content cut in the middle so that the whole message costs at most
    ``keep`` tokens (at least ``least`` of its text kept), marked (kind ``"truncated"``, with
    ``original_chars``/``kept_chars``) as ``strategy``'s; None when no cut fits or helps."""
    if not message.content:
        return None
    size = counter.count(message)
    # The envelope, counted on the message without its text (a few tokens to encode, not the
    # whole text again).
    overhead = counter.count(message.replace(content="", tokens=None))
    want = keep - overhead
    if want < least:
        return None
    # What the marker names and what ``mark`` records, read once (a fingerprint reads the
    # whole text).
    refs = original_refs(message)
    ref = str(refs[0])
    # A message with a known token count (``tokens``) says nothing of its text's density.
    known = max(size - overhead, 1) if message.tokens is None else None
    found = cut_counted(
        message.content, want, ref, counter, marker=_marker(message.content), tokens=known
    )
    if found is None:
        return None
    text, text_tokens = found
    original = original_chars(message)
    cut = mark(
        message.replace(content=text),
        strategy=strategy,
        kind="truncated",
        replaces=[message],
        refs=refs,
        original_chars=original,
        kept_chars=len(text),
    )
    # The caller counts the cut next (it must fit): its text was just encoded, so the counter
    # learns the count instead of encoding the text a second time.
    learn = getattr(counter, "learn", None)
    if learn is not None:
        learn(cut, text_tokens)
    return cut


def facts_of(messages: Sequence[Message], cache: dict[int, Ledger] | None = None) -> Ledger:
    """The ledger of ``messages`` (kept under its round-2 name): see [`ledger_of`][]."""
    return ledger_of(messages, cache)


def note_text(facts: Ledger, stands_for_chars: int, *, messages: int | None = None) -> str:
    """The ledger's text (kept under its round-2 name): see [`ledger_text`][]."""
    return ledger_text(facts, stands_for_chars, messages=messages)


def refs_of(replaced: Sequence[Message], memo: dict[int, str] | None = None) -> tuple[str, ...]:
    """The originals ``replaced`` stands for, as [`compaction.memory.transcript.mark`][] records
    them.

    An older note or summary folds in the messages it stood for. A transcript can keep the raw
    history next to a summary of it (Claude Code does): then an original still present *before*
    the summary is counted once, one for one. Equal messages share a fingerprint, so nothing
    else is merged: a "continue" dropped now is one more than the "continue" an older note
    (which stands before it) already stood for.
    """
    refs: list[str] = []
    present: Counter[str] = Counter()  # plain messages met so far, not yet matched to a note
    for m in replaced:
        if not is_note(m):
            earlier = (provenance(m) or {}).get("replaces")
            if earlier:
                # A placeholder or a cut stands for its original: the note names that one,
                # which recall finds, never the stand-in's own fingerprint, which no history has.
                refs.extend(earlier)
                present.update(earlier)
                continue
            if memo is None:
                ref = message_ref(m)
            else:
                ref = memo.get(id(m)) or memo.setdefault(id(m), message_ref(m))
            refs.append(ref)
            present[ref] += 1
            continue
        older = (provenance(m) or {}).get("replaces", ())
        if not present:
            # nothing plain met yet that it could stand for as well (the usual case: a note
            # stands before what followed it): all of its originals, as one copy
            refs.extend(older)
            continue
        for ref in older:
            if present[ref] > 0:
                present[ref] -= 1  # that original is here itself, already counted
            else:
                refs.append(ref)
    return tuple(refs)


class Memo:
    """What one rewrite learns about its messages once (recall ids, facts), by ``id``: the
    messages live for the whole rewrite, and several cuts may be tried."""

    __slots__ = ("facts", "refs")

    def __init__(self) -> None:
        self.refs: dict[int, str] = {}
        self.facts: dict[int, Ledger] = {}
