"""The facts asked of a compacted run, computed from the raw log ([`logs`][compaction.check.logs]).

Each fact is a question with one answer, which may be written in a few equivalent literal
forms; it is recovered when any form appears in the compacted messages' visible text.

- **task id**: every issue id (``#1234``, ``ABC-123``), file path (with a ``/`` and an
  extension, or a bare name with a source extension) and function name (a name of 3+
  characters called as ``name(`` or defined with ``def``, builtins left out) in the task
  text, URLs removed first; the first ``TASK_IDS`` of them, in order of appearance.
- **edited file**: the last three distinct files edited (newest first), as the log names
  them ([`edits`][compaction.check.edits]; Claude Code ``Edit``/``Write``/``MultiEdit``/
  ``NotebookEdit`` whose result is not an error; SWE-agent
  ``create``/``edit``/``str_replace_editor``).
- **failing test**: the last test an output reports failing: pytest ``FAILED a.py::t`` /
  ``a.py::t FAILED``; unittest/Django ``FAIL: t (m.C)`` (also ``m.C.t``); sympy's
  ``___ path.py:t ___``; ExUnit ``1) test name (Mod)`` with its ``test/x_test.exs:12``
  (either form); Go ``--- FAIL: TestX``.
- **error type**: the last exception name an output shows: a line starting with
  ``[pkg.]NameError:`` / ``...Exception:`` (the short name is the answer), or Elixir's
  ``** (Name)``.
- **last command**: the last shell command the agent ran (``bash`` block, ``Bash`` tool,
  SWE-agent action): its first line, stripped, at most ``COMMAND_HEAD`` characters.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from .logs import Log

__all__ = ["COMMAND_HEAD", "FACT_KINDS", "TASK_IDS", "Fact", "facts"]

FACT_KINDS: Final = ("task id", "edited file", "failing test", "error type", "last command")
TASK_IDS: Final = 20
COMMAND_HEAD: Final = 80


@attrs.frozen
class Fact:
    kind: str
    forms: tuple[str, ...]

    @property
    def answer(self) -> str:
        return self.forms[0]

    def recovered(self, text: str) -> bool:
        return any(form in text for form in self.forms)


_URL: Final = re.compile(r"\b\w+://\S+")
_ISSUE: Final = re.compile(r"(?<![\w&])#\d{2,}\b|\b[A-Z][A-Z0-9]{1,9}-\d{2,6}\b")
_NOT_ISSUES: Final = ("UTF-", "ISO-", "SHA-", "RFC-", "PEP-", "MD-", "HTTP-", "X-")
_EXT: Final = (
    "py|pyi|js|ts|tsx|jsx|ex|exs|heex|rb|go|rs|java|c|h|cpp|hpp|md|rst|txt|json|toml|yaml|"
    "yml|cfg|ini|html|css|sh|sql|enc"
)
_PATH: Final = re.compile(
    r"(?<![\w/.:-])((?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*\.[A-Za-z]\w{0,5}"
    rf"|[\w-]+(?:\.[\w-]+)*\.(?:{_EXT}))\b"
)
_CALL: Final = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w{2,})\(")
_BUILTINS: Final = frozenset(
    [
        "print",
        "len",
        "str",
        "int",
        "float",
        "list",
        "dict",
        "set",
        "tuple",
        "range",
        "open",
        "type",
        "isinstance",
        "issubclass",
        "super",
        "repr",
        "format",
        "getattr",
        "setattr",
        "hasattr",
        "sorted",
        "map",
        "filter",
        "zip",
        "min",
        "max",
        "sum",
        "abs",
        "any",
        "all",
        "iter",
        "next",
        "bool",
        "bytes",
        "object",
        "input",
        "exec",
        "eval",
        "vars",
        "dir",
        "hash",
        "callable",
        "round",
        "divmod",
        "pow",
    ]
)


def _task_ids(task: str) -> list[Fact]:
    text = _URL.sub(" ", task)
    found: list[tuple[int, str]] = []
    for m in _ISSUE.finditer(text):
        if not m.group(0).startswith(_NOT_ISSUES):
            found.append((m.start(), m.group(0)))
    found += [(m.start(1), m.group(1)) for m in _PATH.finditer(text)]
    found += [(m.start(1), m.group(1)) for m in _CALL.finditer(text) if m.group(1) not in _BUILTINS]
    ordered = list(dict.fromkeys(value for _, value in sorted(found)))
    return [Fact("task id", (v,)) for v in ordered[:TASK_IDS]]


def _edited(log: Log) -> list[Fact]:
    newest: list[str] = []
    for action in reversed(log.actions):
        for path in reversed(action.edited):
            if path not in newest:
                newest.append(path)
    return [Fact("edited file", (p,)) for p in newest[:3]]


_PYTEST: Final = re.compile(r"^(?:FAILED|ERROR) (\S+::\S+)|^(\S+::\S+) (?:FAILED|ERROR)\b", re.M)
_UNITTEST: Final = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", re.M)
_SYMPY: Final = re.compile(r"^_{3,} (\S+\.py:\w+) _{3,}\s*$", re.M)
_EXUNIT: Final = re.compile(r"^\s+\d+\) test (.+?) \(([\w.]+)\)\n\s+(\S+_test\.exs:\d+)", re.M)
_GO: Final = re.compile(r"^\s*--- FAIL: (\w+)", re.M)


def _failures(output: str) -> list[tuple[int, tuple[str, ...]]]:
    out: list[tuple[int, tuple[str, ...]]] = []
    for m in _PYTEST.finditer(output):
        out.append((m.start(), (m.group(1) or m.group(2),)))
    for m in _UNITTEST.finditer(output):
        name, where = m.group(1), m.group(2)
        dotted = where if where.endswith("." + name) else f"{where}.{name}"
        out.append((m.start(), (f"{name} ({where})", dotted)))
    out += [(m.start(), (m.group(1),)) for m in _SYMPY.finditer(output)]
    for m in _EXUNIT.finditer(output):
        out.append((m.start(), (m.group(3), f"test {m.group(1)} ({m.group(2)})")))
    out += [(m.start(), (m.group(1),)) for m in _GO.finditer(output)]
    return sorted(out)


_ERROR: Final = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception))(?::|\s*$)"
    r"|\*\* \(((?:[A-Z]\w*\.)*[A-Z]\w*)\)",
    re.M,
)


def _last(log: Log) -> list[Fact]:
    test: tuple[str, ...] | None = None
    error: str | None = None
    for output in log.outputs:
        failures = _failures(output)
        if failures:
            test = failures[-1][1]
        errors = list(_ERROR.finditer(output))
        if errors:
            m = errors[-1]
            error = m.group(1) or m.group(2).rsplit(".", 1)[-1]
    found = []
    if test is not None:
        found.append(Fact("failing test", test))
    if error is not None:
        found.append(Fact("error type", (error,)))
    commands = [a.command for a in log.actions if a.command and a.command.strip()]
    if commands:
        head = commands[-1].strip().split("\n", 1)[0].strip()[:COMMAND_HEAD]
        found.append(Fact("last command", (head,)))
    return found


def facts(log: Log) -> list[Fact]:
    """Every fact asked of one log."""
    return [*_task_ids(log.task), *_edited(log), *_last(log)]
