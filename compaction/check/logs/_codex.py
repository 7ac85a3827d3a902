"""Codex CLI rollouts (``rollout-*.jsonl``: ``{"timestamp", "type", "payload"}`` a line),
read from the raw records the way Codex's rollout writer lays them out."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, after_marker, json_object, patch_files, text

__all__ = ["CODEX_TYPES", "read_codex"]

CODEX_TYPES: Final = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
)

#: Openings of the text Codex itself writes into the user role.
_HARNESS: Final = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
    "<turn_aborted>",
)
#: The IDE extension wraps the person's words in context; they follow this heading.
_REQUEST: Final = "## My request for Codex:"
_SHELLS: Final = frozenset(
    {"shell", "container.exec", "shell_command", "local_shell", "exec_command"}
)
_BASH: Final = re.compile(r"^(?:/usr)?(?:/bin/)?(?:ba|z)?sh$")
_EXIT: Final = re.compile(r"^(?:Exit code|Process exited with code):? (-?\d+)")


def _person(content: Any) -> str | None:
    """The person's words of a user message, or None for text Codex wrote itself."""
    words = text(content).strip()
    if not words or words.startswith(_HARNESS):
        return None
    request = after_marker(words, _REQUEST)
    return request if request else words


def _command(args: Mapping[str, Any]) -> str | None:
    """A shell call's command: ``["bash", "-lc", script]`` is the script; another argv is
    its words joined; a string (``shell_command``, ``exec_command``'s ``cmd``) is itself."""
    command = args.get("command", args.get("cmd"))
    if isinstance(command, str):
        return command
    if isinstance(command, list) and all(isinstance(w, str) for w in command) and command:
        if len(command) >= 3 and _BASH.match(command[0]) and command[1] in ("-lc", "-c"):
            return str(command[2])
        return " ".join(command)
    return None


def _failed(output: Any) -> bool:
    """Whether a tool output reports failure: ``success: false``, a non-zero
    ``metadata.exit_code`` in its JSON, or an ``Exit code: N`` first line with N ≠ 0."""
    value = json_object(output)
    if value.get("success") is False:
        return True
    meta = value.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
        return bool(meta["exit_code"] != 0)
    if isinstance(output, str) and (m := _EXIT.match(output)) is not None:
        return m.group(1) != "0"
    return False


def _output_text(output: Any) -> str:
    """What the model was shown: the ``output`` (or ``content``) inside a JSON result,
    else the text itself."""
    value = json_object(output)
    for key in ("output", "content"):
        if isinstance(value.get(key), (str, list)):
            return text(value[key])
    return text(output) if isinstance(output, (str, list)) else ""


class _Run:
    def __init__(self) -> None:
        self.task: str | None = None
        self.fallback: str | None = None
        self.actions: list[tuple[str, Action]] = []
        self.at: dict[str, int] = {}
        self.failed: set[str] = set()
        self.outputs: list[str] = []

    def act(self, key: str, action: Action) -> None:
        self.at.setdefault(key, len(self.actions))
        self.actions.append((key, action))

    def item(self, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        key = str(item.get("call_id") or item.get("id") or f"\0{len(self.actions)}")
        if kind == "message" and item.get("role") == "user" and self.task is None:
            self.task = _person(item.get("content"))
        elif kind == "function_call":
            name, args = item.get("name"), json_object(item.get("arguments"))
            if name in _SHELLS and (command := _command(args)) is not None:
                edited = patch_files(command) if "*** Begin Patch" in command else ()
                self.act(key, Action(command, edited or shell_edits(command)))
            elif name == "apply_patch" and isinstance(args.get("input"), str):
                self.act(key, Action(None, patch_files(args["input"])))
        elif kind == "local_shell_call":
            action = item.get("action")
            command = _command(action) if isinstance(action, dict) else None
            if command is not None:
                self.act(key, Action(command, shell_edits(command)))
        elif kind == "custom_tool_call" and item.get("name") == "apply_patch":
            patch = item.get("input")
            if isinstance(patch, str):
                self.act(key, Action(None, patch_files(patch)))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            self.outputs.append(_output_text(output))
            if _failed(output):
                self.failed.add(key)

    def event(self, payload: Mapping[str, Any]) -> None:
        kind = payload.get("type")
        if kind == "user_message" and self.fallback is None:
            self.fallback = _person(payload.get("message"))
        elif kind == "patch_apply_end":
            # A patch applied inside a tool's script (an ``exec`` cell) shows only here.
            key = str(payload.get("call_id"))
            changes = payload.get("changes")
            if payload.get("success") is not True:
                self.failed.add(key)
            elif key not in self.at and isinstance(changes, dict):
                self.act(key, Action(None, tuple(str(c) for c in changes)))

    def log(self) -> Log:
        task = self.task if self.task is not None else self.fallback
        if task is None:
            raise Refused("no message a person typed")
        actions = tuple(
            Action(a.command, () if key in self.failed else a.edited) for key, a in self.actions
        )
        return Log("codex", task, actions, tuple(self.outputs))


def read_codex(lines: Iterable[dict[str, Any]]) -> Log:
    """Codex: the task is the first ``response_item`` user message Codex did not write itself
    (``<environment_context>``, ``<user_instructions>``, AGENTS.md), what follows
    ``## My request for Codex:`` when the IDE wrapped it (the ``user_message`` event when no
    item has it). Actions: ``shell`` calls (``["bash", "-lc", script]`` is the script; an
    ``apply_patch`` heredoc edits its patch's files), ``apply_patch`` calls, and patches
    applied inside a script (``patch_apply_end`` events); a call whose output reports failure
    edited nothing. Outputs: the ``*_call_output`` items, in order."""
    run = _Run()
    for record in lines:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        if record.get("type") == "response_item":
            run.item(payload)
        elif record.get("type") == "event_msg":
            run.event(payload)
    return run.log()
