"""Dedupe ("dedupe"): nothing the model would fetch again.

An agent reads the same file again after editing it, re-runs ``git status`` or the same test,
opens the same page twice. Every copy but the newest is something the model would fetch again
rather than read back: it costs tokens and says nothing the newer copy does not. So this layer,
the first and cheapest of the free ones, turns an older copy into a pointer to the newer one:

- a **read** (a tool that reads a file, ``str_replace_editor view``, or a shell command made only
  of viewers such as ``cat``, ``head``, ``nl -ba x | sed -n 1,80p``) called again with the same
  arguments is superseded by the later read, whatever it returned then: the later one is the
  file as it is now (``"superseded by the read at step N"``);
- **any other call** made again with the same arguments is superseded only when it returned the
  very same output (``git status`` twice with nothing done between); a run whose output
  changed (a test before and after a fix) is history and stays.

The pointer names the tool and its arguments, the step and the call of the newer copy, and the
recall id of the older one, which a session's ``recall`` (and every drop-in's recall tool) gives
back whole; what the older output reported (exit code, errors, failing tests) is recorded in its
``meta`` as a cleared output's is, so the ledger still carries it. The pointer keeps the
result's ``tool_call_id``: the call stays answered, the pair whole. Only originals take part: a
copy a layer already shortened (a placeholder, a cut) is neither superseded nor pointed to, and
pinned results (``meta["pinned"]``) are never touched; nor is output that carries images or
documents. Like every layer it stops as soon as the conversation is under target, oldest copy
first, and each message is counted once.
"""

from __future__ import annotations

import json
import re
import shlex
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final

from ..checks import check_names
from ..media.count import media_tokens
from ..memory.facts import error_names, exit_code, failing_tests
from ..memory.transcript import is_pinned, mark, original_refs, parse, provenance
from ..messages import Message, ToolCall
from ..strategy import Capabilities, Strategy
from ..tokens import TokenCounter
from ..validate import validate

__all__ = ["READ_TOOLS", "Dedupe"]

#: Tools whose call reads a file and nothing else: called again with the same arguments, the
#: later call shows the file as it is now (Claude Code's ``Read``, SWE-agent's ``open``, the
#: common ``read_file``/``view_file`` of agent frameworks).
READ_TOOLS: Final = frozenset(
    {"Read", "read_file", "ReadFile", "view_file", "open_file", "open", "cat", "NotebookRead"}
)
#: Shell programs that only show a file (``sed`` without ``-i``): a command made of them alone
#: is a read.
_VIEWERS: Final = frozenset({"cat", "head", "tail", "nl", "sed", "less", "more", "bat"})
#: Tools whose ``command`` argument is a shell command line.
_SHELLS: Final = frozenset({"bash", "Bash", "shell", "sh", "execute_bash", "run_command", "exec"})
#: What a shell line holds when it does more than show files: command lists, substitutions,
#: redirections, variables (``|`` is allowed: a viewer piped into a viewer).
_NOT_A_VIEW: Final = (";", "&", ">", "<", "$", "`", "\n", "(", ")")
#: A line's first word when it holds no quote or escape: then it is shlex's first token.
_FIRST_WORD: Final = re.compile(r"[ \t\r\n]*([^ \t\r\n'\"\\]+)(?:[ \t\r\n]|$)")
#: Commands are read as reads only up to this length (a view is a short line).
_MAX_VIEW_CHARS: Final = 500
#: Arguments longer than this are not repeated in the pointer (as for a cleared output).
MAX_ARGS_CHARS: Final = 120

POINTER: Final = (
    "[Output of {name}({args}) superseded by the {what} at step {step} (call {call_id}){why}; "
    "this earlier copy: recall id {ref}.]"
)


def _render_args(call: ToolCall) -> str:
    text = call.arguments.strip()
    if text in ("", "{}", "null"):
        return ""
    return "…" if len(text) > MAX_ARGS_CHARS else text


def _arguments(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        return call.arguments


#: Each call's ``_key``, and whether its arguments make it a view (``_views``; None until a
#: repeated call asks), held while the call lives (keyed by value: an equal call reads the
#: same). A loop runs this layer on the same view again and again, and every original
#: result's call is read each time: its arguments are parsed once. What is held is small
#: beside the call: the key's text is the call's own arguments when they are already written
#: as the key writes them, and the parsed arguments are not kept. Only arguments up to
#: ``_HELD_CHARS`` are held: a copy of a whole file's ``Write`` would double what the
#: conversation holds, for a parse that is a small part of reading it.
_READ: Final[weakref.WeakKeyDictionary[ToolCall, tuple[tuple[str, Any], bool | None]]] = (
    weakref.WeakKeyDictionary()
)
_READ_DATA: Final[dict[weakref.ref[ToolCall], tuple[tuple[str, Any], bool | None]]] = _READ.data  # type: ignore[attr-defined]


_HELD_CHARS: Final = 4096

#: ``json.dumps(value, sort_keys=True, ensure_ascii=False)``, without building an encoder for
#: every call (most of what writing a short key costs).
_sorted_json: Final = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


def _read(call: ToolCall) -> tuple[str, Any]:
    """``call``'s key (``_key``), read once while it lives."""
    found = _READ_DATA.get(weakref.ref(call))
    if found is not None:
        return found[0]
    key = _key(call, _arguments(call))
    if len(call.arguments) <= _HELD_CHARS:
        _READ[call] = (key, None)
    return key


def _viewing(call: ToolCall) -> bool:
    """Whether ``call``'s arguments make it a view (``_views``), read once while it lives:
    asked only of a repeated call, so a shell line is parsed only then."""
    if call.name not in _SHELLS and call.name != "str_replace_editor":
        return False  # only a shell's line or an editor's command can make a call a view
    found = _READ_DATA.get(weakref.ref(call))
    if found is not None and found[1] is not None:
        return found[1]
    views = _views(call, _arguments(call))
    if found is not None:
        _READ[call] = (found[0], views)
    return views


def _key(call: ToolCall, args: Any) -> tuple[str, Any]:
    """What makes two calls the same call: the tool and its arguments (``args``, as
    ``_arguments`` read them), as JSON with sorted keys (the order a model writes them in does
    not change what runs).

    Most arguments are an object of strings (a command, a path): those are compared by that
    JSON when short (``_object_key``), and by their sorted items when long, which are equal
    exactly when that JSON is (a string's JSON names it alone), without writing a whole
    file's ``Write`` out again as JSON for every result."""
    if isinstance(args, str):
        text = args.strip()
        if text.startswith("{"):
            # A text that is the very JSON of an object of strings is that object's key (as
            # equal to it as the JSON it is equal to).
            try:
                read = json.loads(text)
            except (ValueError, RecursionError):
                return call.name, text
            if _strings(read) and _sorted_json(read) == text:
                return _object_key(call, read)
        return call.name, text
    if _strings(args):
        return _object_key(call, args)
    return call.name, _sorted_json(args)


def _object_key(call: ToolCall, args: dict[str, str]) -> tuple[str, Any]:
    """The key of an object of strings: its JSON with sorted keys while its keys and values
    are short together (the text is the call's own arguments when they are written so: held
    at no cost), else its sorted items. Which of the two depends on the object alone, so
    equal objects always get the same kind of key, and a text never equals a tuple."""
    if sum(len(k) + len(v) for k, v in args.items()) > _HELD_CHARS:
        return call.name, tuple(sorted(args.items()))
    text = _sorted_json(args)
    return call.name, call.arguments if text == call.arguments else text


def _strings(args: Any) -> bool:
    """Whether ``args`` is a JSON object whose values are all strings."""
    return type(args) is dict and all(type(value) is str for value in args.values())


def _is_view(command: str) -> bool:
    """Whether a shell line only shows files: viewers, piped into each other, nothing else."""
    if len(command) > _MAX_VIEW_CHARS or any(c in command for c in _NOT_A_VIEW):
        return False
    first = _FIRST_WORD.match(command)
    if first is not None and first.group(1) not in _VIEWERS and first.group(1) != "|":
        return False  # the first word as shlex reads it (no quote, no escape): no viewer
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    start = True
    for word in words:
        if word == "|":
            start = True
            continue
        if start and word not in _VIEWERS:
            return False
        if word in ("-i", "--in-place") or word.startswith(("-i", "--in-place=")):
            return False  # sed -i edits
        start = False
    return not start


def _views(call: ToolCall, args: Any) -> bool:
    """Whether ``call``'s arguments (``args``, as ``_arguments`` read them) make it a read
    whatever the read tools: a shell line that only shows files, an editor's ``view``."""
    if not isinstance(args, Mapping):
        return call.name in _SHELLS and isinstance(args, str) and _is_view(args)
    if call.name == "str_replace_editor":
        return args.get("command") == "view"
    command = args.get("command") if call.name in _SHELLS else None
    return isinstance(command, str) and _is_view(command.strip())


def _check_int(option: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"Dedupe {option} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"Dedupe {option} must be >= 0, got {value}")
    return value


class Dedupe(Strategy):
    """Turns an older copy of a repeated read, or of a call re-run with the same output, into a
    pointer to the newer copy, oldest first."""

    name: ClassVar[str] = "dedupe"
    # The older copy is out of the prompt (a read that changed since is an older version of
    # the file), so it is not lossless by the base class's rule; it is recallable by id.
    capabilities: ClassVar[Capabilities] = Capabilities(model_call=False, lossless=False)

    def __init__(self, *, min_tokens: int = 50, read_tools: Iterable[str] = READ_TOOLS) -> None:
        """
        - ``min_tokens``: copies smaller than this are left alone (a pointer would save next
          to nothing, and the model would have to look elsewhere for what it had at hand).
        - ``read_tools``: the tools whose repeated call is a read of the same file, superseded
          by the later read even when its output changed (a single name is taken as one name).
        """
        self.min_tokens = _check_int("min_tokens", min_tokens)
        self.read_tools: frozenset[str] = check_names("Dedupe read_tools", read_tools)

    def explain(self) -> str:
        return (
            "Turns the older copy of a file read again, or of a call re-run with the same "
            "output, into a pointer to the newer copy (recallable by id), oldest first, "
            f"leaving copies under {self.min_tokens} tokens alone."
        )

    # -- finding the copies ------------------------------------------------------------------

    def superseded(self, messages: Sequence[Message]) -> list[tuple[int, int, bool]]:
        """``(older, newer, read)`` for every result whose newer copy makes it redundant,
        oldest first: the index of the older result, of the newer one it points to, and
        whether the pair are reads (else the same output)."""
        msgs = tuple(messages)
        calls: dict[str, ToolCall] = {}
        for m in msgs:
            if m.role == "assistant":
                for call in m.tool_calls:
                    calls[call.id] = call
        # The newest original of each call, and its output, walking back from the end.
        newest: dict[tuple[str, Any], tuple[int, str]] = {}
        found: list[tuple[int, int, bool]] = []
        for i in range(len(msgs) - 1, -1, -1):
            m = msgs[i]
            made = calls.get(m.tool_call_id or "") if m.role == "tool" else None
            if made is None or provenance(m) is not None or _has_media(m):
                continue
            key = _read(made)
            later = newest.get(key)
            if later is not None and not is_pinned(m):
                read = made.name in self.read_tools or _viewing(made)
                if read or later[1] == m.content:
                    found.append((i, later[0], read))
                    continue  # the newer copy stays the one pointed to
            newest[key] = (i, m.content)
        found.reverse()
        return found

    # -- the work ------------------------------------------------------------------------------

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        validate(messages)
        total = counter.count_messages(messages)
        if total <= target:
            return None
        pairs = self.superseded(messages)
        if not pairs:
            return None
        steps: dict[int, int] = {}
        calls: dict[str, ToolCall] = {}
        for n, group in enumerate((g for g in parse(messages).groups if g.kind == "step"), 1):
            for i in range(group.start, group.end):
                steps[i] = n
            for call in messages[group.start].tool_calls:
                calls[call.id] = call
        out: list[Message] | None = None
        for older, newer, read in pairs:
            if total <= target:
                break
            old = messages[older]
            old_tokens = counter.count(old)
            if old_tokens < self.min_tokens:
                continue
            made = calls.get(old.tool_call_id or "")
            if made is None:
                continue
            new = self._pointer(old, made, messages[newer], steps.get(newer, 0), read)
            new_tokens = counter.count(new)
            if new_tokens >= old_tokens:
                continue
            if out is None:
                out = list(messages)
            out[older] = new
            total += new_tokens - old_tokens
        return out

    def _pointer(
        self, old: Message, call: ToolCall, newer: Message, step: int, read: bool
    ) -> Message:
        """The pointer that stands for ``old``: what it is, where the newer copy is, and how
        to get this one back; what it reported is recorded in ``meta`` for the ledger."""
        refs = original_refs(old)
        text = POINTER.format(
            name=call.name,
            args=_render_args(call),
            what="read" if read else "same call",
            step=step,
            call_id=newer.tool_call_id,
            why=", which returned the same output" if newer.content == old.content else "",
            ref=refs[0],
        )
        facts = {
            "exit": exit_code(old.content),
            "errors": tuple(error_names(old.content)),
            "failing": tuple(failing_tests(old.content)),
        }
        return mark(
            old,
            content=text,
            refs=refs,
            strategy=self.name,
            kind="placeholder",
            replaces=[old],
            tool=call.name,
            superseded_by=newer.tool_call_id,
            facts=facts,
        )


def _has_media(message: Message) -> bool:
    """Whether ``message`` carries images or documents (compared by text alone, two copies
    could differ in them)."""
    meta = message.meta
    if not meta or not any(key in meta for key in ("openai", "anthropic", "responses", "media")):
        return False
    return media_tokens(meta, message.content, lambda text: 0) > 0
