"""Where a cut falls in a text, and what the cut counts, from tiktoken's own tokens.

A layer that cuts a message in its middle (the last resort, a tool output too big to clear
whole, the part kept of a dropped step) needs the offset where the first ``n`` tokens end and
where the last ``n`` begin, then the count of the cut. Found by guessing and re-encoding, a cut
costs several encodings of the whole text; here the edges come from one encoding of a window a
little wider than what is kept, and the cut's count from those windows plus about a line at
each end (``CutEdges.count_cut``). [`TiktokenCounter`][compaction.tokens.TiktokenCounter] takes
these methods from ``CutEdges``; the texts they keep to read a text once are held only for the
length of a run (``CutEdges.forget_texts``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

__all__ = ["CutEdges"]

#: UTF-8 continuation bytes: deleting them leaves one byte per character.
_CONTINUATION = bytes(range(0x80, 0xC0))

_WHITESPACE = re.compile(r"\s*")

#: How many texts read whole by a cut a counter keeps the encoding of, and up to what size
#: (a bound on what the counter holds: about a hundred kilobytes of text at most).
_WHOLE_TEXTS = 16
_WHOLE_CHARS = 8_192
#: The pre-tokeniser patterns of cl100k (tiktoken's older and newer spelling) in which a line
#: start is always a piece boundary (see ``TiktokenCounter.count_cut``).
_LINES_SPLIT = frozenset(
    {
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
        r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    }
)
#: How far from a cut's edge the line start it is counted from may be.
_LINE_REACH = 4_096


def _line_start(text: str, at: int, *, back: bool) -> int | None:
    """A line start of ``text`` (see ``TiktokenCounter.count_cut``) at or before ``at``
    (``back``) or after ``at`` (its newline at or after ``at``); the start or the end of the
    text when there is none but it is near; None when neither is within reach."""
    edge = at
    for _ in range(8):
        if back:
            newline = text.rfind("\n", max(0, at - _LINE_REACH), at)
        else:
            newline = text.find("\n", at, at + _LINE_REACH)
        if newline < 0:
            break
        start = newline + 1
        if start == len(text):
            return start
        first = text[start]
        if not first.isspace() and first != "/":
            return start
        at = newline if back else start
    if back:
        return 0 if edge <= _LINE_REACH else None
    return len(text) if len(text) - edge <= _LINE_REACH else None


#: How much wider than the text's average density says a window around a cut is read.
_WINDOW_SLACK = 1.25


def _long_runs(text: str, least: int) -> list[tuple[int, int]]:
    """``(start, end)`` of every whitespace run in ``text`` at least ``least`` long.

    A run that long holds a multiple of ``step = least // 2``, so only those positions are
    looked at (a regex over every position cost a quarter of the encoding time on a megabyte of
    code). The first multiple inside a run is less than ``step`` past its start, which bounds
    the look back.
    """
    step = max(least // 2, 1)
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        if not text[i].isspace():
            i += step
            continue
        before = text[max(i - step, 0) : i]
        start = i - (len(before) - len(before.rstrip()))
        match = _WHITESPACE.match(text, i)
        end = match.end() if match is not None else i + 1
        if end - start >= least:
            runs.append((start, end))
        i = max(i + step, -(-end // step) * step)  # the next multiple at or past the run's end
    return runs


def _is_panic(exc: BaseException) -> bool:
    # pyo3's PanicException lives in a module ("pyo3_runtime") that cannot be imported, so it
    # is known by name. Other BaseExceptions (KeyboardInterrupt, SystemExit) must pass.
    return type(exc).__name__ == "PanicException"


class CutEdges:
    """The cut-finding half of [`TiktokenCounter`][compaction.tokens.TiktokenCounter] (a mixin)."""

    # Set by TiktokenCounter; declared here for the type checker.
    _encoding: Any
    _encode: Callable[[str], list[int]]
    max_run: int
    panics: int
    _wholes: dict[str, list[int] | None]
    _windows: dict[bool, tuple[str, list[int], int, int, int]]
    _lines_split: bool

    def count_text(self, text: str) -> int:  # pragma: no cover - the counter's own
        raise NotImplementedError

    def _start_cuts(self, counts_as_tiktoken: bool) -> None:
        """Set up the cut state (``counts_as_tiktoken``: whether ``count_text`` is
        tiktoken's own count, which ``count_cut`` relies on)."""
        # The encodings of the last few texts a cut read whole (see ``_whole``).
        self._wholes = {}
        # The window each edge last read, for ``count_cut``: the text, its tokens, where
        # the window starts, the token at the edge and that token's character offset.
        self._windows = {}
        # Whether a line start is a boundary of this encoding's pre-tokeniser (see count_cut).
        self._lines_split = counts_as_tiktoken and self._encoding._pat_str in _LINES_SPLIT

    def forget_texts(self) -> None:
        """Drop every text held to read it once (the engine calls this when a run ends): a
        counter shared by many conversations keeps counts between runs, never their text."""
        self._wholes.clear()
        self._windows.clear()
        rest = getattr(super(), "forget_texts", None)
        if rest is not None:
            rest()

    def _tokens(self, piece: str) -> list[int] | None:
        """The tokens of ``piece`` from one encoding; None when tiktoken cannot encode it whole
        (the caller then estimates)."""
        if len(piece) >= self.max_run and _long_runs(piece, self.max_run):
            return None  # counted in pieces: its tokens are not one encoding's
        try:
            return self._encode(piece)
        except BaseException as exc:
            if not _is_panic(exc):
                raise
            return None

    def _offset(self, tokens: list[int], k: int) -> int:
        """Character offset where token ``k`` starts, as ``decode_with_offsets`` answers it.

        That tiktoken helper walks every byte of every token in Python, and only one offset is
        wanted: decode the prefix once in Rust and count its UTF-8 lead bytes in C (same rule:
        a token that starts inside a character starts at that character).
        """
        prefix = self._encoding.decode_bytes(tokens[:k])
        chars = len(prefix.translate(None, _CONTINUATION))
        first = self._encoding.decode_single_token_bytes(tokens[k])[0]
        return max(0, chars - (0x80 <= first < 0xC0))

    def _whole(self, text: str) -> list[int] | None:
        """The tokens of ``text`` (see ``_tokens``), for a window that is the whole text.

        A short text is read whole by both of its edges, by every candidate of one cut, and by
        every pass of a layer that re-cuts the same original (the last resort does, each pass
        tighter): it is encoded once. Only a few texts of bounded size are kept, by the
        counter (one run's state), never between counters."""
        wholes = self._wholes
        if text in wholes:
            return wholes[text]
        tokens = self._tokens(text)
        if len(text) <= _WHOLE_CHARS:
            if len(wholes) >= _WHOLE_TEXTS:
                wholes.pop(next(iter(wholes)), None)  # the oldest: a cut re-reads what it read
            wholes[text] = tokens
        return tokens

    def _edge(self, text: str, n: int, *, tail: bool, known: int | None) -> int | None:
        if n <= 0:
            return len(text) if tail else 0
        # Encode only a window a little wider than ``n`` tokens from the edge (doubled while
        # it holds fewer): the cost follows what is kept, not the size of the text. Sized from
        # the text's own density when its count is known (a quarter more, for a head denser
        # than the rest), else for six characters a token (few texts are sparser).
        span = n * 6 + 64
        if known:
            span = min(span, math.ceil(n * len(text) / known * _WINDOW_SLACK) + 64)
        while True:
            span = min(span, len(text))
            if span == len(text):
                tokens = self._whole(text)
            else:
                tokens = self._tokens(text[len(text) - span :] if tail else text[:span])
            if tokens is None:
                return None
            start = len(text) - span if tail else 0
            if len(tokens) > n + (1 if tail else 0):
                # The tail window's first token may be a fragment; the last n are whole.
                k = len(tokens) - n if tail else n
                at = start + self._offset(tokens, k)
            elif span == len(text):
                k, at = (0, 0) if tail else (len(tokens), len(text))
            else:
                span *= 2
                continue
            self._windows[tail] = (text, tokens, start, k, at)
            return at

    def count_cut(self, text: str, a: int, b: int, marker: str) -> int | None:
        """What ``text[:a] + marker + text[b:]`` counts, ``a`` and ``b`` being the edges the
        last ``head_end`` and ``tail_start`` of ``text`` answered; None when it cannot
        be told without encoding the cut whole.

        The windows read to find the edges hold the tokens of the kept head and tail already.
        A line start (a newline, then a character that is neither whitespace nor ``/``) is a
        boundary of the pre-tokeniser of the cl100k patterns: no piece spans a newline and a
        visible character after it, and nothing before it depends on what follows. Pieces,
        and so tokens, before the last line start of the head and after the first line start
        of the tail are then those of the windows, and only what lies between (about a line
        at each end, and the marker) is encoded: exactly the count of the whole cut."""
        # The windows are read once: a counter holds no text after the cut it was read for.
        heads, tails = self._windows.pop(False, None), self._windows.pop(True, None)
        if not self._lines_split or not 0 <= a <= b <= len(text):
            return None
        head = 0
        p: int | None = 0
        if a > 0:
            window = heads
            if window is None or window[0] is not text or window[4] != a:
                return None
            p = _line_start(text, a - 1, back=True)
            if p is None:
                return None
            found = self._walk(window[1], window[3], text[p:a], back=True)
            if found is None:
                return None
            head = found
        tail = 0
        q = len(text)
        if b < len(text):
            window = tails
            if window is None or window[0] is not text or window[4] != b:
                return None
            q_found = _line_start(text, b, back=False)
            if q_found is None:
                return None
            q = q_found
            found = self._walk(window[1], window[3], text[b:q], back=False)
            if found is None:
                return None
            tail = len(window[1]) - found
        middle = text[p:a] + marker + text[b:q]
        if len(middle) >= self.max_run and _long_runs(middle, self.max_run):
            return None  # counted in pieces, not as one encoding would
        panics = self.panics
        n = self.count_text(middle)
        return head + n + tail if self.panics == panics else None

    def _walk(self, tokens: list[int], k: int, span: str, *, back: bool) -> int | None:
        """Where ``span`` ends in ``tokens``, counted in tokens from token ``k`` (where the text
        ``span`` is next to starts): walking back, the index of the token ``span`` starts
        with; walking forward, the index after the token it ends with. None when no token
        boundary falls exactly there (then the line start was no boundary: the caller encodes
        the cut whole), or when token ``k`` starts inside a character."""
        try:
            need = len(span.encode("utf-8"))
        except UnicodeEncodeError:
            return None  # lone surrogates: tiktoken read other bytes
        token_bytes = self._encoding.decode_single_token_bytes
        if k < len(tokens) and 0x80 <= token_bytes(tokens[k])[0] < 0xC0:
            return None
        got = 0
        j = k
        while got < need:
            if back:
                j -= 1
                if j < 0:
                    return None
                got += len(token_bytes(tokens[j]))
            else:
                if j >= len(tokens):
                    return None
                got += len(token_bytes(tokens[j]))
                j += 1
        return j if got == need else None

    def head_end(self, text: str, n: int, *, tokens: int | None = None) -> int | None:
        return self._edge(text, n, tail=False, known=tokens)

    def tail_start(self, text: str, n: int, *, tokens: int | None = None) -> int | None:
        return self._edge(text, n, tail=True, known=tokens)
