"""The facts one message holds, read from its text and its tool calls.

Each reader is one linear pass over a bounded prefix of the text, far cheaper than the token
count the ladder already paid for the message:

- [`error_names`][]: exception class names (``ValueError``, ``IntegrityError``);
- [`failing_tests`][]: failing test ids, as the runner printed them: pytest node ids on a
  ``FAILED``/``ERROR`` line (``tests/test_x.py::test_y``), Django/unittest ids
  (``test_x (module.Class)``), SymPy's (``path.py:test_x``) and ExUnit's (``x_test.exs:93``);
- [`exit_code`][]: a command's exit status as the harness reported it
  (``<returncode>1</returncode>``, ``Exit code 2``);
- [`call_files`][]: the files a tool call reads and the ones it edits (an ``Edit``/``Write``
  tool edits; a shell command is read by [`compaction.memory.shell`][]);
- [`paths_in`][]: path-like tokens in free text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from .shell import MAX_COMMAND_SCAN, command_files, looks_like_path, paths_in

__all__ = [
    "COMMAND_KEYS",
    "EDIT_TOOLS",
    "MAX_COMMAND_CHARS",
    "call_arguments",
    "call_files",
    "command_line",
    "error_names",
    "exit_code",
    "failing_tests",
    "open_todos",
    "paths_in",
]

#: A command is named by its first line, at most this long.
MAX_COMMAND_CHARS: Final = 80
#: Test output is read up to here (the failure summary is at the end, so both ends are read).
_MAX_TEST_SCAN: Final = 200_000

_ERROR: Final = re.compile(r"[A-Z][A-Za-z0-9_]*(?:Error|Exception)")
_ERROR_END: Final = re.compile(r"(?:Error|Exception)(?![A-Za-z0-9_])")
#: Argument keys whose value is a path as it stands (Claude Code's and most tools' names).
_PATH_KEYS: Final = frozenset(
    {"file_path", "path", "notebook_path", "filename", "file", "paths", "dir", "directory"}
)
COMMAND_KEYS: Final = frozenset({"command", "cmd", "script"})
#: Tools whose file arguments are edits.
EDIT_TOOLS: Final = frozenset(
    {"Write", "Edit", "MultiEdit", "NotebookEdit", "write", "create", "edit_file", "write_file"}
)
#: Argument keys holding Python an agent runs (OpenHands' ``run_ipython``), read for its file
#: helpers' calls alone: the first argument of an agentskills function names its file.
_CODE_KEYS: Final = frozenset({"code"})
_SKILL_CALL: Final = re.compile(
    r"\b(edit_file_by_replace|insert_content_at_line|append_file|create_file|open_file)"
    r"\(\s*(?:(?:file_name|filename|path|file_path)\s*=\s*)?"
    r"(?:'([^'\n]{1,300})'|\"([^\"\n]{1,300})\")"
)
_SKILL_EDITS: Final = frozenset(
    {"edit_file_by_replace", "insert_content_at_line", "append_file", "create_file"}
)
#: ``str_replace_editor``'s sub-commands that change the file (``view`` only reads it).
_EDITOR_EDITS: Final = frozenset({"create", "str_replace", "insert", "undo_edit", "write"})

_FAILED_WORD: Final = re.compile(r"\b(?:FAILED|FAIL|ERROR)\b")
_NODE_ID: Final = re.compile(r"[\w./-]+\.py::[\w\[\]().,:/=+-]*[\w\]]")
#: The pieces of a node id, each a run read once: the path before ``.py::`` (matched on the
#: reversed text, so it is found from ``.py::`` backwards) and what follows it.
_NODE_HEAD: Final = re.compile(r"[\w./-]*")
_NODE_TAIL: Final = re.compile(r"[\w\[\]().,:/=+-]*")
#: What a node id's tail may hold but not end with (the tail's characters less ``\w`` and ``]``).
_NODE_TAIL_TRIM: Final = "[().,:/=+-"
_DJANGO: Final = re.compile(r"^(?:FAIL|ERROR): (test\w*) \(([\w.]+)\)", re.MULTILINE)
#: SymPy's runner heads each failure ``____ sympy/core/tests/test_arit.py:test_Mod ____``.
_SYMPY: Final = re.compile(r"^_{3,} ([\w./-]+\.py:\w+) _{3,}$", re.MULTILINE)
#: ExUnit numbers each failure, its location on the next line: ``  1) test x (Mod)`` then
#: ``     test/x_test.exs:93``.
#: The indent is read within its line (``\s`` would take a run of blank lines from every one of
#: them: quadratic on a text of newlines).
_EXUNIT: Final = re.compile(r"^[^\S\n]+\d+\) test .*\n\s+([\w./-]+\.exs:\d+)", re.MULTILINE)
_EXIT: Final = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>|\bexit(?:ed with)? (?:code|status)[: ]+(-?\d+)",
    re.IGNORECASE,
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


def failing_tests(text: str) -> list[str]:
    """Failing test ids in ``text`` (a test run's output), in order, each once."""
    if "FAIL" not in text and "ERROR" not in text and "___ " not in text and ") test " not in text:
        return []
    if len(text) > _MAX_TEST_SCAN:  # the summary of a long run is at its end
        half = _MAX_TEST_SCAN // 2
        text = text[:half] + "\n" + text[-half:]
    found: dict[str, None] = {}
    # Each pattern runs only where its literal can be (a skipped pass would find nothing, so
    # the order of what is found does not change), and a failing line is found from its
    # keyword: a multi-line regex anchored at every line start is several times slower.
    if "FAIL" in text or "ERROR" in text:
        for start, end in _keyword_lines(text):
            for node in _node_ids(text, start, end):
                found[node] = None
        if ": test" in text:
            for match in _DJANGO.finditer(text):
                found[f"{match.group(1)} ({match.group(2)})"] = None
    if "___ " in text:
        for match in _SYMPY.finditer(text):
            found[match.group(1)] = None
    if ") test " in text:
        for match in _EXUNIT.finditer(text):
            found[match.group(1)] = None
    return list(found)


def _node_ids(text: str, start: int, end: int) -> list[str]:
    """The pytest node ids in ``text[start:end]``: what ``_NODE_ID.findall(text, start, end)``
    finds, in time linear in ``end - start``.

    The regex alone tries every position of a run of path characters and reads the run to its
    end from each: quadratic on one long line (a JSON log line, a base64 payload) that holds
    no ``.py::``. Here each ``.py::`` is found by a substring search, its path read backwards
    (the run of path characters before it) and its tail forwards, each run once: a run before
    a ``.py::`` ends at it (``:`` is no path character), and the search goes on after what was
    taken, as ``findall`` does."""
    found: list[str] = []
    pos = start
    while True:
        at = text.find(".py::", pos, end)
        if at < 0:
            return found
        # Both patterns are a bare ``*`` run: they always match (at worst, nothing).
        path = _NODE_HEAD.match(text[pos:at][::-1])
        after = _NODE_TAIL.match(text, at + 5, end)
        head = at - (path.end() if path else 0)
        tail = after.group().rstrip(_NODE_TAIL_TRIM) if after else ""
        if head == at or not tail:
            # No path before it, or nothing after it: no id starts anywhere in this run (each
            # start in it reaches the same ``.py::`` and the same tail).
            pos = at + 1
            continue
        found.append(text[head : at + 5] + tail)
        pos = at + 5 + len(tail)


def _keyword_lines(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each line that holds ``FAILED``, ``FAIL`` or ``ERROR`` as a word,
    in order: the lines a runner names its failures on.

    Found from the literals (a substring search, fast on megabytes) and each candidate line
    checked with the word regex: the regex alone tries every position of the text, several
    times slower. Each keyword's next occurrence is kept, so the text is read once."""
    lines: list[tuple[int, int]] = []
    fail = text.find("FAIL")
    error = text.find("ERROR")
    while fail >= 0 or error >= 0:
        at = error if fail < 0 or 0 <= error < fail else fail
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        # A line end is a non-word character, as the text's end is: \b reads the same.
        if _FAILED_WORD.search(text, start, end) is not None:
            lines.append((start, end))
        if 0 <= fail < end:
            fail = text.find("FAIL", end)
        if 0 <= error < end:
            error = text.find("ERROR", end)
    return lines


def exit_code(text: str) -> int | None:
    """The exit status a harness reported at the start of a command's output, if any."""
    head = text[:300]
    # Either form holds a "<" or "exit" in any case, whose lower-case form holds "exi" or
    # "ex\u0131" (the case-blind regex also takes the dotless and the dotted capital i for "i"):
    # a head with neither is not searched by that regex, which is slow to find nothing.
    if "<" not in head:
        lower = head.lower()
        if "exi" not in lower and "ex\u0131" not in lower:
            return None
    match = _EXIT.search(head)
    if match is None:
        return None
    return int(match.group(1) or match.group(2))


def call_arguments(arguments: str | Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool call's arguments as a mapping (a bare string is a command)."""
    if isinstance(arguments, Mapping):
        return arguments
    try:
        args: Any = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"command": arguments}
    return args if isinstance(args, Mapping) else {"command": str(args)}


def command_line(args: Mapping[str, Any]) -> str | None:
    """The first line of a call's command, bounded, or None."""
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            line = value.strip().split("\n", 1)[0]
            if len(line) > MAX_COMMAND_CHARS:
                line = line[: MAX_COMMAND_CHARS - 1] + "…"
            return line
    return None


def call_files(name: str, args: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``(read, edited)``: the files a tool call reads and the ones it changes."""
    read: dict[str, None] = {}
    edited: dict[str, None] = {}
    edits = name in EDIT_TOOLS or (
        name == "str_replace_editor" and str(args.get("command", "")) in _EDITOR_EDITS
    )
    for key, value in args.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if not isinstance(item, str) or not item:
                continue
            if key in _PATH_KEYS and "\n" not in item and len(item) < 300:
                (edited if edits else read)[item] = None
            elif key in _CODE_KEYS:
                for match in _SKILL_CALL.finditer(item[:MAX_COMMAND_SCAN]):
                    path = match[2] or match[3]
                    (edited if match[1] in _SKILL_EDITS else read)[path] = None
            elif key in COMMAND_KEYS and name != "str_replace_editor":
                got, changed, named = command_files(item[:MAX_COMMAND_SCAN], mentions=True)
                read.update(dict.fromkeys(got))
                edited.update(dict.fromkeys(changed))
                read.update(dict.fromkeys(p for p in named if p not in edited))
            elif key not in COMMAND_KEYS and len(item) < 300 and looks_like_path(item):
                read[item] = None
    return [p for p in read if p not in edited], list(edited)


def open_todos(args: Mapping[str, Any]) -> list[str] | None:
    """The open items of a todo-list tool call (Claude Code's ``TodoWrite``), or None when the
    call is no todo list. The list replaces the previous one whole."""
    todos = args.get("todos")
    if not isinstance(todos, list):
        return None
    out: list[str] = []
    for item in todos:
        if isinstance(item, Mapping) and item.get("status") != "completed":
            text = str(item.get("content") or item.get("activeForm") or "").strip()
            if text:
                out.append(text[:160])
    return out
