"""A cut message keeps its images: writing back the non-text parts of a message whose text
was cut in the middle.

A message read with content parts (images, documents, audio beside its text) holds only the
text in ``content``; the adapters keep the parts in ``meta`` and write them back while the
text is unchanged. A rewritten message is written from its new text alone, so a placeholder
never resurrects what it replaced. A *cut* (``meta["compaction"]["kind"] == "truncated"``) is
different: it is the same message with less text, and its images are still what the model
must see. So for a cut, every adapter writes the original parts back, with the text parts
replaced by the cut text, in the place of the first of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..memory.transcript import PROVENANCE_KEY
from ..messages import Message

__all__ = ["is_cut", "with_text"]

P = TypeVar("P")


def is_cut(message: Message) -> bool:
    """True when ``message`` is an original cut in its middle (its non-text parts stay)."""
    record = message.meta.get(PROVENANCE_KEY)
    return isinstance(record, dict) and record.get("kind") == "truncated"


def with_text(
    parts: Sequence[P],
    text: str,
    is_text: Callable[[P], bool],
    make_text: Callable[[str], P],
) -> list[P] | None:
    """``parts`` with their text parts replaced by one holding ``text`` (where the first text
    part was; at the end when there was none), every other part kept in order; None when the
    parts hold nothing but text (the message is then written from its text, as before)."""
    if all(is_text(p) for p in parts):
        return None
    out: list[Any] = []
    placed = False
    for part in parts:
        if not is_text(part):
            out.append(part)
        elif not placed:
            placed = True
            if text:
                out.append(make_text(text))
    if not placed and text:
        out.append(make_text(text))
    return out
