"""Cutting tool-call arguments for [`compaction.strategies.fit`][], wherever their bulk is.

A call's arguments are JSON as the model wrote them: the bulk may sit in a top-level string
(``Write``'s ``content``), in a list of objects (``MultiEdit``'s ``edits``), in dozens of keys,
or the arguments may not be JSON at all. The largest string leaves are cut in their middle,
anywhere in the structure, so the JSON stays valid and keeps its shape (the same keys, the
same list lengths); arguments that are not JSON are cut as text.

What identifies a step is never cut: a value shorter than [`ARG_FLOOR`][] characters stays
whole, and a value that is cut keeps its head (and tail) around a marker, as a cut result
does, however tight the pass ([`ARG_KEEP_TOKENS`][], never the empty marker).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any, Final

from ..memory.trace import cut_counted, cut_middle
from ..messages import ToolCall
from ..tokens import TokenCounter

__all__ = ["ARG_FLOOR", "ARG_KEEP_TOKENS", "SHORT_MARKER", "shrink_call"]

#: Argument values (string leaves, or arguments that are not JSON) shorter than this many
#: characters are never cut. They are what names a step: a path, an id, a tool or a branch
#: name, a URL, a pattern, a query, a one-line command. On the shared real transcripts every
#: path, id, name, URL, pattern and query is under 170 characters and nine commands in ten
#: under 300 (the median is under 50), while the bulk Fit must reach is far longer (a
#: ``Write``'s content, median 2,750; an edit's new text, median 460; a heredoc command).
#: It is the length the ledger still reads as a path ([`compaction.memory.facts`][]), so what
#: the ledger names a step by is what the model is shown. A cut of a shorter value frees a
#: few tokens and leaves ``read_file(path="")`` followed by a file.
ARG_FLOOR: Final = 300
#: What a cut value keeps of its own text, head and tail together, besides its marker, in
#: every pass (about 50 characters at each end: the head of a command names what it runs).
ARG_KEEP_TOKENS: Final = 24
#: The marker of the tight passes, when even the marked cuts do not fit (a target of a few
#: dozen tokens for several messages): it still says that, and how much, was cut.
SHORT_MARKER: Final = "[…{cut:,} cut…]"


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], str]]:
    """Every string leaf of a JSON value, with the path to it."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))


def _put(value: Any, path: tuple[Any, ...], leaf: str) -> Any:
    if not path:
        return leaf
    value[path[0]] = _put(value[path[0]], path[1:], leaf)
    return value


#: Strings at least this long are sized from their message's density, not encoded again.
_ESTIMATE_FROM: Final = 8_192


def _count(text: str, counter: TokenCounter, seen: dict[str, int] | None) -> int:
    """What ``text`` counts; remembered in ``seen`` (one rewrite's), since the last resort
    sizes the same values and markers pass after pass, and each tightening of a call again."""
    if seen is None or len(text) >= _ESTIMATE_FROM:
        return counter.count_text(text)
    n = seen.get(text)
    if n is None:
        n = seen[text] = counter.count_text(text)
    return n


def _tokens(
    text: str, counter: TokenCounter, density: float, seen: dict[str, int] | None = None
) -> int:
    if len(text) < _ESTIMATE_FROM:
        return _count(text, counter, seen)
    return max(math.ceil(len(text) * density), 1)


def _cut_leaf(
    value: str,
    want: int,
    ref: str,
    counter: TokenCounter,
    marker: str,
    tokens: int,
    seen: dict[str, int] | None = None,
) -> tuple[str, int] | None:
    """``value`` cut so that, as a JSON string, it costs about ``want`` tokens, and what the
    cut costs as a JSON string: the cut is of the raw text, and escapes (a newline is two
    characters in JSON) make it dearer, so a cut that came out over is tightened by the
    excess (a bounded few times, each on the kept part only)."""
    aim = want
    found = None
    marks = _count(marker.format(cut=len(value), ref=ref), counter, seen)
    for _ in range(3):
        cut = cut_counted(value, aim, ref, counter, marker, tokens=tokens, marker_tokens=marks)
        if cut is None:
            return None
        found = cut[0], _count(json.dumps(cut[0], ensure_ascii=False), counter, seen)
        over = found[1] - want
        if over <= 0 or aim <= 0:
            break
        aim = max(aim - over, 0)
    return found


def shrink_call(
    call: ToolCall,
    need: int,
    ref: str,
    counter: TokenCounter,
    marker: str,
    least: int,
    density: float,
    seen: dict[str, int] | None = None,
) -> tuple[ToolCall, int, bool]:
    """``call`` with its longest string values cut in the middle by about ``need`` tokens in
    all, wherever they sit in the arguments (nested objects, lists: the JSON stays valid), or
    its arguments cut as text when they are not JSON; what is still needed after it; and
    whether every value was cut to its floor (``least``), so that needing more gives the
    same call (the caller stops tightening). ``density`` (tokens per character of the
    arguments) sizes the large values; ``seen`` remembers the counts of short texts for the
    caller's next tries. Values shorter than [`ARG_FLOOR`][] are never cut; a value is cut
    to no less than [`ARG_KEEP_TOKENS`][] of its own text and always keeps a marker (the
    tight pass's short one when ``marker`` is empty)."""
    if len(call.arguments) < ARG_FLOOR:
        return call, need, True  # no value in it is long enough to cut
    if need <= 0:
        return call, need, False
    marker = marker or SHORT_MARKER
    least = max(least, ARG_KEEP_TOKENS)
    try:
        args = json.loads(call.arguments)
    except ValueError:
        tokens = _tokens(call.arguments, counter, density, seen)
        floored = tokens - need <= least
        cut = cut_middle(
            call.arguments, max(tokens - need, least), ref, counter, marker, tokens=tokens
        )
        if cut is None:
            return call, need, floored
        left = need - (tokens - counter.count_text(cut))
        return ToolCall(call.id, call.name, cut), left, floored
    changed = False
    floored = True
    for path, value in sorted(_leaves(args), key=lambda item: -len(item[1])):
        if len(value) < ARG_FLOOR:
            break  # the rest are as short: what names the step stays whole
        if need <= 0:
            floored = False  # a value left whole that more need would cut
            break
        # Sized as it stands in the JSON (escapes and quotes count too), so that the cuts
        # together save what is needed, not a token per escaped character less.
        tokens = _tokens(json.dumps(value, ensure_ascii=False), counter, density, seen)
        floored = floored and tokens - need <= least
        found = _cut_leaf(value, max(tokens - need, least), ref, counter, marker, tokens, seen)
        if found is not None:
            need -= tokens - found[1]
            args = _put(args, path, found[0])
            changed = True
    if not changed:
        return call, need, floored
    return ToolCall(call.id, call.name, json.dumps(args, ensure_ascii=False)), need, floored
