"""What a removal leaves behind: the facts of dropped messages, and the note that names them.

Nothing vanishes without a trace (issue 12, decision 3). A layer that removes messages puts a
note where they were, naming what went: the files read or edited, the commands run, the error
names seen, how many messages and tool steps, and the ids to recall them (a session's
``recall`` finds a message by these ids). The note is deterministic (the same dropped messages
give the same text) and bounded:

- its text is at most :data:`MAX_NOTE_CHARS` characters, and at most half the characters it
  stands for (never less than :data:`MIN_NOTE_CHARS`), so a note costs a small, known share
  of what it saves; what does not fit is counted ("+12 more"), never cut mid-name;
- the facts kept in its ``meta`` are bounded too (:data:`MAX_FACTS` per kind).

Facts live in the note's provenance (``meta["compaction"]["facts"]``), so a newer note that
absorbs an older one merges the older facts without reading its text: consecutive notes become
one running note instead of piling up.

Extraction is one regular-expression pass over each dropped message, far cheaper than the token
count the ladder already paid for it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .messages import Message
from .tokens import TokenCounter
from .transcript import is_note, mark, message_ref, provenance

__all__ = [
    "CUT_MARKER",
    "MAX_FACTS",
    "MAX_NOTE_CHARS",
    "MIN_NOTE_CHARS",
    "Facts",
    "Memo",
    "cut_message",
    "cut_middle",
    "error_names",
    "facts_of",
    "note_text",
    "paths_in",
    "refs_of",
]

MAX_NOTE_CHARS: Final = 1200
MIN_NOTE_CHARS: Final = 100
MAX_FACTS: Final = 200
#: A command is named by its first line, at most this long.
MAX_COMMAND_CHARS: Final = 80

#: Exception class names: ``ValueError``, ``ModuleNotFoundError``, ``django.core.exceptions.
#: ImproperlyConfigured`` is named by its last part only when it ends in Error/Exception.
_ERROR: Final = re.compile(r"[A-Z][A-Za-z0-9_]*(?:Error|Exception)")
_ERROR_END: Final = re.compile(r"(?:Error|Exception)(?![A-Za-z0-9_])")
_EXTENSIONS: Final = (
    "py|pyi|pyx|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|rst|txt|toml|yaml|yml|cfg|ini|lock|c|h|cc|"
    "cpp|hpp|rs|go|java|kt|rb|php|sh|bash|zsh|html|css|scss|sql|xml|csv|log|patch|diff|ipynb|"
    "vue|svelte|swift|m|mm|cs|fs|scala|lua|pl|r|jl|dart|ex|exs|erl|hs|ml|tf|proto|gradle|mk|"
    "dockerfile|env|conf|properties|tex|bib|in|j2|jinja|tpl|bat|ps1"
)
#: A path: a run with a slash in it (``src/a.py``, ``/testbed/x``), or a bare file name with a
#: known extension (``setup.py``). URLs are not paths.
_PATH: Final = re.compile(
    r"(?<![\w:/.~-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*[\w@+-]"
    rf"|(?<![\w/.-])[\w@+-][\w.@+-]*\.(?:{_EXTENSIONS})\b(?![/\w])",
    re.IGNORECASE,
)
#: Argument keys whose value is a path as it stands (Claude Code's and most tools' names).
_PATH_KEYS: Final = frozenset(
    {"file_path", "path", "notebook_path", "filename", "file", "paths", "dir", "directory"}
)
_COMMAND_KEYS: Final = frozenset({"command", "cmd", "script", "code"})
#: Tools whose file arguments are edits (listed first: what changed matters most).
_EDIT_TOOLS: Final = frozenset(
    {"Write", "Edit", "MultiEdit", "NotebookEdit", "str_replace_editor", "edit", "write", "create"}
)


#: Where a text was cut in its middle. ``{cut}``: characters cut; ``{ref}``: the recall id of
#: the original message (a session's ``recall`` gives it back whole).
CUT_MARKER: Final = "\n[… {cut:,} characters cut to fit the context window; recall id {ref} …]\n"


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
    if tokens is None:
        tokens = counter.count_text(text)
    if tokens <= want or len(text) < 2:
        return None
    room = max(want - counter.count_text(marker.format(cut=len(text), ref=ref)), 0)
    head_end = getattr(counter, "head_end", None)
    tail_start = getattr(counter, "tail_start", None)
    for _ in range(6):
        a = b = None
        if head_end is not None and tail_start is not None:
            a, b = head_end(text, room - room // 2), tail_start(text, room // 2)
        if a is None or b is None or a > b:
            kept = min(len(text) - 1, len(text) * room // max(tokens, 1))
            a, b = kept - kept // 2, len(text) - kept // 2
        candidate = text[:a] + marker.format(cut=b - a, ref=ref) + text[b:]
        cost = counter.count_text(candidate)
        if cost <= want or room == 0:
            return candidate if cost < tokens and len(candidate) < len(text) else None
        room = max(room - (cost - want) - 1, 0)
    return None


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
    record = provenance(message)
    earlier = record.get("replaces") if record is not None else None
    ref = str(earlier[0]) if earlier else message_ref(message)
    # A message with a known token count (``tokens``) says nothing of its text's density.
    known = max(size - overhead, 1) if message.tokens is None else None
    text = cut_middle(message.content, want, ref, counter, tokens=known)
    if text is None:
        return None
    original = original_chars(message)
    return mark(
        message.replace(content=text),
        strategy=strategy,
        kind="truncated",
        replaces=[message],
        original_chars=original,
        kept_chars=len(text),
    )


def error_names(text: str) -> list[str]:
    """Exception class names in ``text``, in order, each once."""
    if "Error" not in text and "Exception" not in text:
        return []  # the common case: one substring scan instead of a regex pass
    # Find the suffix (a literal search, fast on megabytes of output), then walk back over the
    # name: a regex that starts at every capital letter is several times slower.
    found: dict[str, None] = {}
    for match in _ERROR_END.finditer(text):
        start = match.start()
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        name = text[start : match.end()]
        if name[:1].isupper() and name.isascii() and _ERROR.fullmatch(name):
            found[name] = None
    return list(found)


def paths_in(text: str) -> list[str]:
    """Path-like tokens in ``text`` (a command line, an argument), in order, each once."""
    found = []
    for match in _PATH.finditer(text):
        token = match.group(0).rstrip(".")
        if "://" in text[max(0, match.start() - 8) : match.start() + 3]:
            continue
        if len(token) > 1:
            found.append(token)
    return list(dict.fromkeys(found))


class Facts:
    """What a stretch of dropped messages held: bounded, ordered, mergeable."""

    __slots__ = ("commands", "edited", "errors", "files", "messages", "refs", "steps")

    def __init__(self) -> None:
        self.files: dict[str, None] = {}
        self.edited: dict[str, None] = {}
        self.commands: dict[str, None] = {}
        self.errors: dict[str, None] = {}
        self.refs: list[str] = []
        self.messages = 0
        self.steps = 0

    def _add(self, into: dict[str, None], items: Iterable[str]) -> None:
        for item in items:
            if len(into) >= MAX_FACTS:
                return
            into[item] = None

    def add_message(self, message: Message, cache: dict[int, Facts] | None = None) -> None:
        """Fold in one dropped message (a note or summary of ours: its recorded facts).

        ``cache`` (by ``id(message)``, for as long as the messages live) keeps each message's
        own facts, so a layer that tries several cuts reads each message once."""
        record = provenance(message)
        if record is not None and record.get("kind") in ("note", "summary"):
            self.merge(record)
            return
        if cache is not None:
            own = cache.get(id(message))
            if own is None:
                own = cache[id(message)] = Facts()
                own.add_message(message)
            self.absorb(own)
            return
        self.messages += 1
        self.refs.append(message_ref(message))
        if message.tool_calls:
            self.steps += 1
        for call in message.tool_calls:
            self._add_call(call.name, call.arguments)
        if message.content:
            self._add(self.errors, error_names(message.content))

    def _add_call(self, name: str, arguments: str) -> None:
        try:
            args: Any = json.loads(arguments) if arguments else {}
        except ValueError:
            args = {"command": arguments}
        if not isinstance(args, Mapping):
            args = {"command": str(args)}
        files = self.edited if name in _EDIT_TOOLS else self.files
        for key, value in args.items():
            values = value if isinstance(value, list) else [value]
            for item in values:
                if not isinstance(item, str) or not item:
                    continue
                if key in _PATH_KEYS and "\n" not in item and len(item) < 300:
                    self._add(files, [item])
                elif key in _COMMAND_KEYS:
                    line = item.strip().split("\n", 1)[0]
                    if len(line) > MAX_COMMAND_CHARS:
                        line = line[: MAX_COMMAND_CHARS - 1] + "…"
                    if line:
                        self._add(self.commands, [line])
                    self._add(self.files, paths_in(item[:4000]))
                elif len(item) < 300:
                    self._add(self.files, paths_in(item))

    def absorb(self, other: Facts) -> None:
        """Fold in ``other`` (newer) facts."""
        self.messages += other.messages
        self.steps += other.steps
        self.refs.extend(other.refs)
        self._add(self.edited, other.edited)
        self._add(self.files, other.files)
        self._add(self.commands, other.commands)
        self._add(self.errors, other.errors)

    def merge(self, record: Mapping[str, Any]) -> None:
        """Fold in an older note's recorded facts (``record`` is its provenance)."""
        facts = record.get("facts")
        refs = record.get("replaces") or ()
        self.refs.extend(refs)
        if not isinstance(facts, Mapping):
            self.messages += len(refs)
            return
        self.messages += int(facts.get("messages", len(refs)))
        self.steps += int(facts.get("steps", 0))
        for key, into in (
            ("edited", self.edited),
            ("files", self.files),
            ("commands", self.commands),
            ("errors", self.errors),
        ):
            self._add(into, (str(x) for x in facts.get(key, ())))

    def record(self) -> dict[str, Any]:
        """The facts as plain data, for the note's provenance."""
        return {
            "messages": self.messages,
            "steps": self.steps,
            "edited": tuple(self.edited),
            "files": tuple(f for f in self.files if f not in self.edited),
            "commands": tuple(self.commands),
            "errors": tuple(self.errors),
        }


def facts_of(messages: Sequence[Message], cache: dict[int, Facts] | None = None) -> Facts:
    """The facts of ``messages``, oldest first (older notes among them merged in); ``cache``
    as for :meth:`Facts.add_message`."""
    facts = Facts()
    for message in messages:
        facts.add_message(message, cache)
    return facts


def _section(title: str, items: Sequence[str], room: int, sep: str = ", ") -> tuple[str, int]:
    """``title: a, b (+n more)`` within ``room`` characters; newest items first."""
    if not items or room <= len(title) + 8:
        return "", room
    shown: list[str] = []
    used = len(title) + 2
    for item in items:
        cost = len(item) + len(sep)
        if used + cost + 12 > room:
            break
        shown.append(item)
        used += cost
    if not shown:
        return "", room
    more = len(items) - len(shown)
    text = f"{title}: {sep.join(shown)}" + (f" (+{more} more)" if more else "") + ". "
    return text, room - len(text)


def note_text(facts: Facts, stands_for_chars: int, *, messages: int | None = None) -> str:
    """The note's text: counts first, then errors, files edited, files, commands, recall ids,
    as many as the bound allows (see the module docstring). ``messages`` overrides the
    number of messages said to be removed."""
    bound = min(MAX_NOTE_CHARS, max(MIN_NOTE_CHARS, stands_for_chars // 2))
    n = facts.messages if messages is None else messages
    head = (
        f"[{n} earlier message{'s' if n != 1 else ''}"
        + (f" ({facts.steps} tool step{'s' if facts.steps != 1 else ''})" if facts.steps else "")
        + " removed to fit the context window. "
    )
    room = bound - len(head) - 1
    parts = [head]
    edited = list(reversed(facts.edited))
    files = [f for f in reversed(facts.files) if f not in facts.edited]
    commands = [f"`{c}`" for c in reversed(facts.commands)]
    refs = list(dict.fromkeys(reversed(facts.refs)))
    for title, items, sep in (
        ("Errors seen", list(facts.errors), ", "),
        ("Files edited", edited, ", "),
        ("Files read", files, ", "),
        ("Commands", commands, "; "),
        ("Recall ids", refs, ", "),
    ):
        text, room = _section(title, items, room, sep)
        if text:
            parts.append(text)
    return "".join(parts).rstrip() + "]"


def refs_of(replaced: Sequence[Message], memo: dict[int, str] | None = None) -> tuple[str, ...]:
    """The originals ``replaced`` stands for, as :func:`compaction.transcript.mark` records them.

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
            if memo is None:
                ref = message_ref(m)
            else:
                ref = memo.get(id(m)) or memo.setdefault(id(m), message_ref(m))
            refs.append(ref)
            present[ref] += 1
            continue
        for ref in (provenance(m) or {}).get("replaces", ()):
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
        self.facts: dict[int, Facts] = {}
