"""A reader of raw agent logs of its own: the JSON read directly, never through
``compaction.formats``, so a check of the library is graded against an independent account.

A log becomes a ``Log``: the task as the person wrote it, the agent's actions in order
(each with its command text and the files it edited), and the environment's outputs in order.

- **mini-swe-agent** (``*.traj.json``: ``{"messages": [...]}``): the task is the first user
  message; an action is the fenced ``bash`` block of an assistant message; every later user
  message is an output.
- **SWE-agent** (``*.traj``: ``{"trajectory": [...], "history": [...]}``): the task is the
  first user message of ``history`` that is not a demonstration; an action is a
  trajectory step's ``action``, its output the step's ``observation``.
- **Claude Code** (``*.jsonl``, one record a line): the task is the first user record whose
  content is text a person typed (not a tool result, not ``isMeta``, not a
  ``<command-...>``/``<local-command-...>``/``<system-reminder>`` wrapper); actions are
  ``tool_use`` blocks (``Bash`` gives a command), outputs are ``tool_result`` blocks.

What counts as an edit is in [`compaction.check.edits`][].
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Final

import attrs

from .edits import shell_edits

__all__ = ["Action", "Log", "UnreadableLog", "read_log"]


class UnreadableLog(ValueError):
    """A file this reader does not read (another format, broken JSON, a shape it does not
    know); the message names the file, ``reason`` says why."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.reason = reason


class _Refused(ValueError):
    """Raised inside a reader, which does not know the file's name."""


@attrs.frozen
class Action:
    """One thing the agent did: its command text (``None`` for a non-shell tool) and the
    files it edited, as the log names them."""

    command: str | None
    edited: tuple[str, ...] = ()


@attrs.frozen
class Log:
    format: str
    task: str
    actions: tuple[Action, ...]
    outputs: tuple[str, ...]


# mini-swe-agent runs an answer only when it holds exactly one such block (its own rule).
_BASH_BLOCK: Final = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_PR: Final = re.compile(r"<pr_description>(.*?)</pr_description>", re.DOTALL)
_WRAPPERS: Final = (
    "<command-",
    "<local-command-",
    "<system-reminder>",
    "Caveat:",
    "[Request interrupted",
)


def _text(content: Any) -> str:
    """Text of a message content: a string, or the text of its text/tool_result blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif "content" in block:
                    parts.append(_text(block["content"]))
        return "\n".join(parts)
    return ""


def _mini(data: dict[str, Any]) -> Log:
    messages = data["messages"]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        raise _Refused("no user message")
    task = _text(messages[users[0]].get("content"))
    # The task is the PR description; the rest of that message is the harness's instructions.
    if (pr := _PR.search(task)) is not None:
        task = pr.group(1)
    actions, outputs = [], []
    for m in messages[users[0] + 1 :]:
        text = _text(m.get("content"))
        if m.get("role") == "assistant":
            blocks = _BASH_BLOCK.findall(text)
            if len(blocks) == 1:
                command = blocks[0].strip()
                actions.append(Action(command, shell_edits(command)))
        elif m.get("role") == "user":
            outputs.append(text)
    return Log("mini-swe-agent", task, tuple(actions), tuple(outputs))


_SWE_EDITOR: Final = re.compile(
    r"^str_replace_editor\s+(?:create|str_replace|insert|undo_edit)\s+(\S+)"
)


def _unquote(word: str) -> str:
    return word.strip().strip("\"'")


def _swe(data: dict[str, Any]) -> Log:
    history = data.get("history") or []
    task = next(
        (
            _text(h.get("content"))
            for h in history
            if h.get("role") == "user" and not h.get("is_demo")
        ),
        None,
    )
    if task is None:
        raise _Refused("no user message in history")
    # The issue, not the harness's INSTRUCTIONS that follow it in the same message.
    task = task.split("\nINSTRUCTIONS:", 1)[0]
    actions, outputs = [], []
    open_file: str | None = None
    for action, observation in _swe_steps(data, history):
        command = action.strip()
        first = command.partition("\n")[0]
        words = first.split()
        edited: tuple[str, ...] = ()
        if words and words[0] in ("open", "create") and len(words) > 1:
            open_file = _unquote(words[1])
            if words[0] == "create":
                edited = (open_file,)
        elif words and words[0] in ("edit", "insert", "append") and open_file:
            # SWE-agent's editor commands change the file that is open.
            edited = (open_file,)
        elif (found := _SWE_EDITOR.match(first)) is not None:
            edited = (_unquote(found.group(1)),)
        else:
            edited = shell_edits(command)
        actions.append(Action(command, edited))
        outputs.append(observation)
    return Log("swe-agent", task, tuple(actions), tuple(outputs))


def _swe_steps(data: dict[str, Any], history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(action, observation) per step: from ``trajectory``, or, in files that keep only the
    ``history``, each assistant ``action`` with the message that answers it."""
    trajectory = data.get("trajectory")
    if isinstance(trajectory, list) and trajectory:
        return [(str(s.get("action") or ""), _text(s.get("observation"))) for s in trajectory]
    steps = []
    for i, h in enumerate(history):
        if h.get("role") == "assistant" and isinstance(h.get("action"), str):
            answer = history[i + 1] if i + 1 < len(history) else {}
            answered = answer.get("role") in ("tool", "user")
            steps.append((h["action"], _text(answer.get("content")) if answered else ""))
    return steps


_CC_EDITORS: Final = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}


def _claude(lines: list[dict[str, Any]]) -> Log:
    task: str | None = None
    uses: list[tuple[str, str | None, tuple[str, ...]]] = []  # (tool_use id, command, edited)
    failed: set[str] = set()
    outputs = []
    for record in lines:
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if record.get("type") == "user":
            blocks = content if isinstance(content, list) else []
            results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            for block in results:
                outputs.append(_text(block.get("content")))
                if block.get("is_error"):
                    failed.add(str(block.get("tool_use_id")))
            if task is None and not results and not record.get("isMeta"):
                text = _text(content).strip()
                if text and not text.startswith(_WRAPPERS):
                    task = text
        elif record.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                name, args = block.get("name"), block.get("input") or {}
                key = str(block.get("id"))
                if name == "Bash" and isinstance(args.get("command"), str):
                    uses.append((key, args["command"], shell_edits(args["command"])))
                elif name in _CC_EDITORS and isinstance(args.get(_CC_EDITORS[name]), str):
                    uses.append((key, None, (args[_CC_EDITORS[name]],)))
    if task is None:
        raise _Refused("no message a person typed")
    # An edit the tool refused (rejected by the person, old string not found) changed nothing.
    actions = tuple(
        Action(command, () if key in failed else edited) for key, command, edited in uses
    )
    return Log("claude-code", task, actions, tuple(outputs))


def read_log(path: Path) -> Log:
    """One raw log, read; [`UnreadableLog`][] for anything else (a link, a directory, a
    device, a file of another shape)."""
    try:
        return _read(path)
    except _Refused as exc:
        raise UnreadableLog(path.name, str(exc)) from exc
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        # A file of an unexpected shape is refused by name, never a crash of the suite.
        raise UnreadableLog(path.name, f"{type(exc).__name__}: {exc}") from exc


def _read(path: Path) -> Log:
    # lstat: a link is refused, never followed; only a regular file is read.
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise _Refused("not a regular file")
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
        return _claude([r for r in lines if isinstance(r, dict)])
    data = json.loads(raw)
    if isinstance(data, dict) and isinstance(data.get("history"), list):
        return _swe(data)
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return _mini(data)
    raise _Refused("not a mini-swe-agent, SWE-agent or Claude Code log")
