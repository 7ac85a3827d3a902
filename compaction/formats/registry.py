"""Every reader, how a file is matched to one, and the checks every read goes through.

A reader is a [`Reader`][]: a name (what ``--format`` takes), a ``sniff`` that tells its
shape apart by content, and a ``read`` that turns the parsed file into a [`Loaded`][].
Detection tries the readers in ``priority`` order (the most specific shapes first, the plain
OpenAI/Anthropic chats last) and takes the first whose ``sniff`` says yes; a file no reader
claims is an error that names every format considered.

Whatever the reader, [`read_document`][] then holds it to the same rules:

- a request reader (``log=False``: OpenAI/Anthropic chats) refuses a JSONL file with a bad
  line; a log reader reads the other lines and reports the bad ones as ``skipped_line``
  repairs, so one truncated line never loses the whole log;
- an error names the format the file was taken for (``FormatError.format``);
- a file that yields no messages, or only empty ones, is an error saying which format was
  tried and what the file held instead: never an empty conversation with exit 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path
from typing import Final

import attrs

from ..adapters import AdapterError
from ..messages import Message
from .detect import EXPECTED, Document
from .errors import FormatError
from .loaded import Loaded, Repair

__all__ = ["Reader", "considered", "detect", "get", "read_document", "readers"]


@attrs.frozen(slots=True)
class Reader:
    """One format's reader, as detection and ``--format`` see it.

    - ``name``: the format's name (``Loaded.format``, ``--format NAME``).
    - ``title``: what the format is, one line (``compaction formats`` lists it).
    - ``shape``: what a file of it looks like, named in detection errors.
    - ``sniff(doc, path)``: True when ``doc`` is this format. Cheap and never raising on odd
      input; it may look at the file name, but the content must agree.
    - ``read(doc, path)``: the [`Loaded`][] transcript, or a [`FormatError`][].
    - ``output``: the provider shape it is written back in (``openai``/``anthropic``).
    - ``log``: True for agent logs (bad JSONL lines skipped and reported, tool pairs
      repaired); False for requests, which are read strictly.
    - ``text``: True when it reads files that are not JSON (markdown histories).
    - ``priority``: lower is tried first. Specific shapes 10-40, agent trajectories 50-70,
      plain chats 90.
    """

    name: str
    title: str
    shape: str
    sniff: Callable[[Document, str], bool]
    read: Callable[[Document, str], Loaded]
    output: str = "openai"
    log: bool = True
    text: bool = False
    priority: int = 50


#: The modules that hold readers, each with a ``READERS`` tuple of [`Reader`][]s. A module
#: not (yet) present is passed over; any other import error is ours and raised.
_MODULES: Final = (
    "chat_json",
    "claude_code",
    "claude_web",
    "cline",
    "codex",
    "mini_swe_agent",
    "openai_log",
    "swe_agent",
    "copilot_cli",
    "cursor",
    "factory_droid",
    "gemini_cli",
    "markdown",
    "openhands",
    "opencode",
    "goose",
    "qwen_code",
    "continue_dev",
)

_loaded: dict[str, Reader] = {}


def _load() -> dict[str, Reader]:
    if _loaded:
        return _loaded
    found: dict[str, Reader] = {}
    for module in _MODULES:
        full = f"{__package__}.{module}"
        try:
            mod = import_module(full)
        except ModuleNotFoundError as exc:
            if exc.name == full:
                continue
            raise
        for reader in getattr(mod, "READERS", ()):
            if reader.name in found:
                raise RuntimeError(f"two readers are named {reader.name!r}")
            found[reader.name] = reader
    ordered = sorted(found.values(), key=lambda r: (r.priority, r.name))
    _loaded.update((r.name, r) for r in ordered)
    return _loaded


def readers() -> tuple[Reader, ...]:
    """Every reader, in the order detection tries them."""
    return tuple(_load().values())


def get(name: str, path: str | Path = "<format>") -> Reader:
    """The reader named ``name``; a [`FormatError`][] listing the names when there is none."""
    found = _load().get(name)
    if found is None:
        names = ", ".join(sorted(_load()))
        raise FormatError(path, f"no reader named {name!r}; the formats are: {names}")
    return found


def _sniffs(reader: Reader, doc: Document, path: str) -> bool:
    if doc.is_text and not reader.text:
        return False
    try:
        return bool(reader.sniff(doc, path))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError):
        return False  # an odd file is simply not this format


def considered(doc: Document, path: str | Path) -> list[tuple[str, bool]]:
    """Every reader with whether it claims ``doc``, in detection order."""
    return [(r.name, _sniffs(r, doc, str(path))) for r in readers()]


def _describe(doc: Document) -> str:
    if doc.is_text:
        return doc.json_error or "not JSON"
    if doc.records is not None:
        no, first = doc.records[0]
        keys = ", ".join(sorted(map(str, first))[:8]) or "none"
        return f"unknown record shape (line {no} is an object with keys {keys})"
    value = doc.value
    if isinstance(value, Mapping):
        keys = ", ".join(sorted(map(str, value))[:8]) or "none"
        return f"unknown shape: a JSON object with keys {keys}"
    if isinstance(value, list):
        kinds = {type(v).__name__ for v in value[:50]}
        return f"unknown shape: a JSON list of {len(value)} items ({', '.join(sorted(kinds))})"
    return f"unknown shape: a JSON {type(value).__name__}"


def _hint(path: str) -> str:
    name = Path(path).name
    if name.endswith(".traj.json"):
        return (
            " A *.traj.json file should be a mini-swe-agent trajectory: an object with a "
            "'messages' list."
        )
    if name.endswith(".traj"):
        return " A *.traj file should be a SWE-agent trajectory: an object with a 'history' list."
    return ""


def detect(doc: Document, path: str | Path) -> Reader:
    """The reader for ``doc``: the first, in priority order, whose ``sniff`` claims it."""
    name = str(path)
    for reader in readers():
        if _sniffs(reader, doc, name):
            return reader
    tried = ", ".join(r.name for r in readers() if r.text or not doc.is_text)
    line = doc.records[0][0] if doc.records is not None else None
    if not tried:
        raise FormatError(path, f"{_describe(doc)}; {EXPECTED}{_hint(name)}", line=line)
    # The formats by name only: their shapes, one per reader, made an error line thousands of
    # characters long; 'compaction formats --json' gives each shape to whoever needs it.
    raise FormatError(
        path,
        f"{_describe(doc)}; expected one of the formats considered: {tried}.{_hint(name)} "
        "('compaction formats --json' shows the shape of each; --format NAME reads it as one "
        "of them)",
        line=line,
    )


def _empty(message: Message) -> bool:
    if message.content.strip() or message.tool_calls:
        return False
    stored = message.meta.values()
    return not any(isinstance(v, Mapping) and (v.get("parts") or v.get("blocks")) for v in stored)


def _held(loaded: Loaded, doc: Document) -> str:
    parts = [f"{n} {kind}" for kind, n in sorted(loaded.skipped.items())]
    if doc.bad:
        parts.append(f"{len(doc.bad)} unreadable line(s)")
    return f"; the file held only: {', '.join(parts)}" if parts else ""


def _skipped_lines(doc: Document) -> tuple[Repair, ...]:
    return tuple(Repair("skipped_line", "", -1, reason, line=no) for no, reason in doc.bad)


def read_document(doc: Document, path: str | Path, format: str | None = None) -> Loaded:
    """``doc`` read by the reader named ``format`` (detected when None), held to the rules in
    the module docstring."""
    reader = get(format, path) if format else detect(doc, path)
    if doc.is_text and not reader.text:
        raise FormatError(path, doc.json_error or "not JSON", format=reader.name)
    if doc.bad and not reader.log:
        no, reason = doc.bad[0]
        raise FormatError(path, f"{reason}; expected one JSON object per line", line=no)
    try:
        loaded = reader.read(doc, str(path))
    except FormatError as exc:
        if exc.format is not None:
            raise
        raise FormatError(exc.path, exc.reason, exc.line, format=reader.name) from None
    except (AdapterError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        # A reader met a shape it did not expect deep inside: say so plainly, not with a
        # traceback from the middle of it.
        raise FormatError(path, f"could not make sense of it: {exc}", format=reader.name) from exc
    if not loaded.messages:
        raise FormatError(
            path,
            f"it yields no messages; expected {reader.shape}{_held(loaded, doc)}",
            format=reader.name,
        )
    if all(_empty(m) for m in loaded.messages):
        raise FormatError(
            path,
            f"every one of its {len(loaded.messages)} messages is empty (no text, no tool "
            f"call): the fields this format keeps its text in are missing; expected "
            f"{reader.shape}",
            format=reader.name,
        )
    repairs = (*_skipped_lines(doc), *loaded.repairs) if doc.bad else loaded.repairs
    return attrs.evolve(loaded, output=loaded.output or reader.output, repairs=repairs)
