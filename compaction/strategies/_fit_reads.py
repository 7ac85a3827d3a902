"""What the last resort reads of a conversation, once per rewrite.

[`Fit`][compaction.strategies.fit.Fit] cuts the same originals pass after pass (a tighter
marker, a lower floor each time). What it needs to know of them does not change between
passes: which messages are protected, which outputs are the newest, what each text counts,
each original's recall id and what its marker costs. It is read here once per rewrite.
"""

from __future__ import annotations

from ..media.count import media_tokens
from ..memory.transcript import Transcript, original_refs, provenance
from ..messages import Message
from ..tokens import TokenCounter

__all__: list[str] = []


def _guarded(t: Transcript) -> frozenset[int]:
    """Indices of the messages cut only down to the hard limit: the system block, every
    protected group (the task, the newest request, what the policy protects, pinned), the
    notes and the newest step (what the model acts on next)."""
    found = set(range(t.system_end))
    # Notes too: a note is what is left of everything dropped (the ledger), the last trace
    # of it in the prompt; emptying it to reach the aim would make dropping silent.
    groups = [t.groups[g] for g in t.protected] + [g for g in t.groups if g.kind == "note"]
    steps = [g for g in t.groups if g.kind == "step"]
    if steps and steps[-1] is t.groups[-1]:
        groups.append(steps[-1])
    for group in groups:
        found.update(range(group.start, group.end))
    return frozenset(found)


def _newest_outputs(t: Transcript) -> frozenset[int]:
    """The tool outputs of the newest step, when the conversation ends with one."""
    if not t.groups or t.groups[-1].kind != "step":
        return frozenset()
    last = t.groups[-1]
    return frozenset(i for i in range(last.start, last.end) if t.messages[i].role == "tool")


def _text_tokens(message: Message, counter: TokenCounter) -> int:
    """What ``message``'s content counts, encoding only the smaller part of the message: the
    content itself, or (when the content is the bulk) the rest, taken from the cached count."""
    text = message.content
    rest = sum(len(c.arguments) + len(c.name) for c in message.tool_calls)
    if not text:
        return 0
    if message.tokens is not None or len(text) <= rest + 64 or _has_media(message, counter):
        return counter.count_text(text)
    bare = counter.count(message.replace(content=""))
    return max(counter.count(message) - bare, 1)


def _has_media(message: Message, counter: TokenCounter) -> bool:
    """Whether ``message`` carries images or documents that its count includes (the rest of
    the message then is not what its text leaves)."""
    meta = message.meta
    if not meta or not ("openai" in meta or "anthropic" in meta or "responses" in meta):
        return False
    return media_tokens(meta, message.content, counter.count_text) > 0


def _was_cut(message: Message) -> bool:
    record = provenance(message)
    return record is not None and record.get("kind") == "truncated"


class _Known:
    """What one rewrite learns once about the messages it cuts: each pass re-cuts the same
    originals (a tighter marker, a lower floor), and their recall ids and markers do not
    change from pass to pass. Keyed by ``id``: the originals live for the whole rewrite."""

    __slots__ = ("counter", "markers", "read", "texts")

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.read: dict[int, tuple[str, ...]] = {}  # what ``mark`` records each stands for
        self.markers: dict[tuple[int, str], int] = {}
        self.texts: dict[str, int] = {}  # short values of tool-call arguments, their markers

    def ref(self, message: Message) -> str:
        """The recall id of the original ``message`` stands for."""
        return str(self.refs_of(message)[0])

    def refs_of(self, message: Message) -> tuple[str, ...]:
        """The recall ids a cut of ``message`` records, read as ``mark`` reads them (an
        earlier cut's whole list, else the fingerprint): once, not once per pass."""
        refs = self.read.get(id(message))
        if refs is None:
            refs = self.read[id(message)] = original_refs(message)
        return refs

    def marker_tokens(self, message: Message, marker: str) -> int:
        """What ``marker`` costs in a cut of ``message`` (formatted as the cut formats it)."""
        key = (id(message), marker)
        n = self.markers.get(key)
        if n is None:
            # By its text too: a marker without the recall id (the tight pass's) reads the same
            # for every message of the same length, and is encoded once.
            text = marker.format(cut=len(message.content), ref=self.ref(message))
            n = self.texts.get(text) if marker else 0
            if n is None:
                n = self.texts[text] = self.counter.count_text(text)
            self.markers[key] = n
        return n


def _count(counter: TokenCounter, message: Message, text_tokens: int | None) -> int:
    """What ``message`` counts; when its content is a cut just encoded (``text_tokens``),
    learnt from that instead of encoding the cut again."""
    learn = getattr(counter, "learn", None) if text_tokens is not None else None
    return counter.count(message) if learn is None else int(learn(message, text_tokens))
