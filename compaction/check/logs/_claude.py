"""Logs of Anthropic-shaped content blocks: Claude Code sessions, Cursor agent transcripts and
Factory Droid (``stream-json`` events and its session store)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, after_marker, patch_files, path_arg, text

__all__ = ["claude_run", "is_cline", "read_claude", "read_cline", "read_cursor", "read_droid"]

_WRAPPERS: Final = (
    "<command-",
    "<local-command-",
    "<system-reminder>",
    "Caveat:",
    "[Request interrupted",
)

_CC_EDITORS: Final = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}


def _tool_action(
    name: Any, args: Mapping[str, Any], shells: frozenset[str], editors: frozenset[str]
) -> Action | None:
    """A tool call as an action: a shell tool's ``command``, an editing tool's file, an
    ``ApplyPatch``'s patch files; None for any other tool (a read, a search)."""
    if name in shells and isinstance(args.get("command"), str):
        return Action(args["command"], shell_edits(args["command"]))
    if name in editors:
        edited = path_arg(args)
        return Action(None, edited) if edited else None
    if name == "ApplyPatch":
        patch = args.get("patch", args.get("input"))
        return Action(None, patch_files(patch)) if isinstance(patch, str) else None
    return None


class _Blocks:
    """The actions and outputs of a run of ``tool_use`` / ``tool_result`` blocks; an edit
    whose result is an error (rejected, old string not found) changed nothing."""

    def __init__(self, shells: frozenset[str], editors: frozenset[str]) -> None:
        self.shells, self.editors = shells, editors
        self.uses: list[tuple[str, Action]] = []
        self.failed: set[str] = set()
        self.outputs: list[str] = []

    def call(self, key: str, name: Any, args: Any) -> None:
        if isinstance(args, Mapping):
            action = _tool_action(name, args, self.shells, self.editors)
            if action is not None:
                self.uses.append((key, action))

    def result(self, key: str, output: str, is_error: bool) -> None:
        self.outputs.append(output)
        if is_error:
            self.failed.add(key)

    def assistant(self, content: Any, line: int) -> None:
        for n, block in enumerate(content if isinstance(content, list) else ()):
            if isinstance(block, dict) and block.get("type") in ("tool_use", "tool_call"):
                key = str(block.get("id") or f"\0{line}-{n}")
                self.call(key, block.get("name"), block.get("input"))

    def results(self, content: Any) -> bool:
        """Read the ``tool_result`` blocks of a user content; True when it had any."""
        found = False
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") in ("tool_result", "tool-result"):
                found = True
                key = str(block.get("tool_use_id"))
                self.result(key, text(block.get("content")), bool(block.get("is_error")))
        return found

    def log(self, fmt: str, task: str | None) -> Log:
        if task is None:
            raise Refused("no message a person typed")
        actions = tuple(
            Action(a.command, () if key in self.failed else a.edited) for key, a in self.uses
        )
        return Log(fmt, task, actions, tuple(self.outputs))


_CLAUDE_SHELLS: Final = frozenset({"Bash"})


def read_claude(lines: Iterable[dict[str, Any]]) -> Log:
    """Claude Code (one record a line): the task is the first user record whose content is
    text a person typed (not a tool result, not ``isMeta``, not a ``<command-...>`` /
    ``<local-command-...>`` / ``<system-reminder>`` wrapper); actions are ``tool_use``
    blocks (``Bash`` gives a command; ``Edit``/``Write``/``MultiEdit``/``NotebookEdit`` a
    file), outputs are ``tool_result`` blocks."""
    run, task = claude_run(lines)
    return run.log("claude-code", task)


def claude_run(lines: Iterable[dict[str, Any]]) -> tuple[_Blocks, str | None]:
    """What ``read_claude`` reads, before a missing task is refused: Claude Code's printed
    stream holds no prompt unless it was asked to replay it, and is read without one."""
    run = _Blocks(_CLAUDE_SHELLS, frozenset())
    task: str | None = None
    for line, record in enumerate(lines):
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if record.get("type") == "user":
            had_results = run.results(content)
            if task is None and not had_results and not record.get("isMeta"):
                typed = text(content).strip()
                if typed and not typed.startswith(_WRAPPERS):
                    task = typed
        elif record.get("type") == "assistant" and isinstance(content, list):
            for n, block in enumerate(content):
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                name, args = block.get("name"), block.get("input")
                key = str(block.get("id") or f"\0{line}-{n}")
                if name in _CC_EDITORS and isinstance(args, dict):
                    path = args.get(_CC_EDITORS[name])
                    if isinstance(path, str):
                        run.uses.append((key, Action(None, (path,))))
                else:
                    run.call(key, name, args)
    return run, task


_CURSOR_SHELLS: Final = frozenset({"Shell", "run_terminal_cmd", "Bash", "shell"})
_CURSOR_EDITORS: Final = frozenset(
    {"Write", "Edit", "StrReplace", "MultiEdit", "Delete", "edit_file", "search_replace"}
    | {"write", "delete_file", "EditNotebook"}
)


def _cursor_person(content: Any) -> str:
    """The person's words of a Cursor user line: inside ``<user_query>`` when the CLI
    wrapped them (with ``<user_info>``, attached files and rules beside it), else the text."""
    words = text(
        [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if isinstance(content, list)
        else content
    )
    inner = after_marker(words, "<user_query>", "</user_query>")
    return (inner if inner is not None else words).strip()


def read_cursor(lines: Iterable[dict[str, Any]]) -> Log:
    """Cursor agent transcripts (``{"role", "message": {"content": [blocks]}}`` a line): the
    task is the first user line's text, inside its ``<user_query>`` wrapper; actions are
    ``tool_use`` blocks (``Shell`` gives a command, ``Write``/``Edit``/``StrReplace``/
    ``Delete``… a file); outputs are ``tool_result`` blocks (most transcripts keep none)."""
    run = _Blocks(_CURSOR_SHELLS, _CURSOR_EDITORS)
    task: str | None = None
    for line, record in enumerate(lines):
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if record.get("role") == "user":
            if not run.results(content) and task is None:
                task = _cursor_person(content) or None
        elif record.get("role") == "assistant":
            run.assistant(content, line)
    return run.log("cursor", task)


_DROID_SHELLS: Final = frozenset({"Execute", "Shell", "Bash", "execute", "shell"})
_DROID_EDITORS: Final = frozenset({"Edit", "Create", "MultiEdit", "Write", "Delete"})
_REMINDER_END: Final = "</system-reminder>"


def _droid_person(words: str) -> str:
    """The person's words, a leading ``<system-reminder>`` Droid adds cut off."""
    stripped = words.strip()
    if stripped.startswith("<system-reminder>") and _REMINDER_END in stripped:
        return stripped[stripped.index(_REMINDER_END) + len(_REMINDER_END) :].strip()
    return stripped


def _droid_value(value: Any) -> str:
    """A tool result's text: the string, or ``stdout``/``content``/``output`` and
    ``stderr`` of an object, or its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        parts = [value.get(k) for k in ("stdout", "content", "output", "stderr")]
        found = [text(p) for p in parts if isinstance(p, (str, list))]
        if found:
            return "\n".join(found)
    return json.dumps(value, ensure_ascii=False)


def read_droid(lines: Iterable[dict[str, Any]]) -> Log:
    """Factory Droid: ``stream-json`` events (``message`` with ``role``/``text``,
    ``tool_call`` with ``toolName``/``parameters``, ``tool_result`` with ``value``/
    ``isError``) or the session store (``message`` records holding Anthropic content).
    The task is the first user text, a leading ``<system-reminder>`` cut off; ``Execute``
    gives a command, ``Edit``/``Create``/``MultiEdit`` a file, ``ApplyPatch`` its files."""
    run = _Blocks(_DROID_SHELLS, _DROID_EDITORS)
    task: str | None = None
    for line, record in enumerate(lines):
        kind = record.get("type")
        message = record.get("message")
        if kind == "message" and isinstance(message, dict):  # the session store
            role, content = message.get("role"), message.get("content")
            if role == "user" and not run.results(content) and task is None:
                task = _droid_person(text(content)) or None
            elif role == "assistant":
                run.assistant(content, line)
        elif kind == "message" and record.get("role") == "user" and task is None:
            task = _droid_person(text(record.get("text"))) or None
        elif kind == "tool_call":
            key = str(record.get("toolCallId") or record.get("id"))
            run.call(key, record.get("toolName"), record.get("parameters"))
        elif kind == "tool_result":
            key = str(record.get("toolCallId") or record.get("id"))
            run.result(key, _droid_value(record.get("value")), record.get("isError") is True)
    return run.log("factory-droid", task)


#: ``[read_file for 'x.cs'] Result:``: the header Cline and Roo write before a tool's output,
#: in a user text block (they return results as text, not ``tool_result`` blocks).
_CLINE_HEADER: Final = re.compile(r"\A\[([A-Za-z_][\w.:-]{0,80})(?: for [^\n]*?)?\] Result:")
_CLINE_HARNESS: Final = (
    "<environment_details>",
    "[ERROR]",
    "[TASK RESUMPTION]",
    "[Response interrupted",
)
_CLINE_SHELLS: Final = frozenset({"execute_command"})
_CLINE_EDITORS: Final = frozenset(
    {"write_to_file", "replace_in_file", "apply_diff", "insert_content", "search_and_replace"}
)
_DENIED: Final = "The user denied this operation"


def is_cline(messages: list[Any]) -> bool:
    """A list of Anthropic-shaped messages that only Cline or Roo writes: a user text block
    that opens with ``<task>`` or a ``[tool] Result:`` header."""
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                words = block.get("text") if isinstance(block, dict) else None
                if isinstance(words, str) and (
                    words.startswith("<task>") or _CLINE_HEADER.match(words)
                ):
                    return True
    return False


def _xml_value(body: str, tag: str) -> str | None:
    return after_marker(body, f"<{tag}>", f"</{tag}>")


def _cline_xml(words: str) -> list[tuple[str, Action]]:
    """Calls an older Cline wrote as XML in its text: ``<execute_command><command>…``,
    ``<write_to_file><path>…`` (one pass of ``find`` per tool)."""
    found: list[tuple[int, str, Action]] = []
    for name in (*_CLINE_SHELLS, *_CLINE_EDITORS):
        at = words.find(f"<{name}>")
        if at < 0:
            continue
        body = words[at : words.find(f"</{name}>", at) if f"</{name}>" in words else len(words)]
        if name in _CLINE_SHELLS and (command := _xml_value(body, "command")) is not None:
            found.append((at, name, Action(command, shell_edits(command))))
        elif name in _CLINE_EDITORS and (path := _xml_value(body, "path")):
            found.append((at, name, Action(None, (path,))))
    return [(name, action) for _, name, action in sorted(found, key=lambda f: f[0])]


def read_cline(messages: list[Any]) -> Log:
    """Cline and Roo Code (``api_conversation_history.json``): the task is inside the first
    user message's ``<task>``; actions are ``tool_use`` blocks, or the XML calls of older
    histories (``execute_command`` gives a command, ``write_to_file``/``replace_in_file``/
    ``apply_diff`` a file); outputs are the text after each ``[tool] Result:`` header (and
    real ``tool_result`` blocks). A call the person denied edited nothing."""
    task: str | None = None
    actions: list[Action] = []
    outputs: list[str] = []
    waiting: list[tuple[str, Action]] = []  # the last assistant message's calls, unanswered
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if message.get("role") == "assistant":
            actions += [a for _, a in waiting]
            waiting = []
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                    name, args = block.get("name"), block["input"]
                    action = _tool_action(name, args, _CLINE_SHELLS, _CLINE_EDITORS)
                    if action is not None:
                        waiting.append((str(name), action))
                elif isinstance(block.get("text"), str):
                    waiting += _cline_xml(block["text"])
        elif message.get("role") == "user":
            current: list[str] | None = None
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                words = block.get("text") if isinstance(block.get("text"), str) else None
                if block.get("type") in ("tool_result", "tool-result"):
                    outputs.append(text(block.get("content")))
                elif words is None:
                    continue
                elif (header := _CLINE_HEADER.match(words)) is not None:
                    current = [words]
                    outputs.append(words)
                    if _DENIED in words:
                        named = header.group(1)
                        waiting = [(n, Action(a.command) if n == named else a) for n, a in waiting]
                elif words.lstrip().startswith(_CLINE_HARNESS):
                    current = None
                elif current is not None:
                    outputs[-1] += "\n" + words
                    if _DENIED in words:
                        waiting = [(n, Action(a.command)) for n, a in waiting]
                elif task is None:
                    inner = after_marker(words, "<task>", "</task>")
                    task = (inner if inner is not None else words.strip()) or None
    actions += [a for _, a in waiting]
    if task is None:
        raise Refused("no message a person typed")
    return Log("cline", task, tuple(actions), tuple(outputs))
