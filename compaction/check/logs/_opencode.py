"""OpenCode session exports (``opencode export``): one object, ``{"info", "messages": [{"info":
{"role", ...}, "parts": [...]}]}``, read from the JSON itself."""

from __future__ import annotations

from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, json_object, patch_files, path_arg

__all__ = ["is_opencode", "read_opencode"]

_SHELLS: Final = frozenset({"bash"})
_EDITORS: Final = frozenset({"edit", "write", "multiedit"})
_PATCHES: Final = frozenset({"patch", "apply_patch"})


def _entry(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("info"), dict)
        and isinstance(value.get("parts"), list)
    )


def is_opencode(data: dict[str, Any]) -> bool:
    """An export: a session ``info`` with an ``id``, and ``messages`` of ``{info, parts}``."""
    info, messages = data.get("info"), data.get("messages")
    return (
        isinstance(info, dict)
        and isinstance(info.get("id"), str)
        and isinstance(messages, list)
        and all(_entry(m) for m in messages[:1])
    )


def _person(parts: list[Any]) -> str | None:
    """What the person typed in a user message: its text parts, except OpenCode's own
    (``synthetic``: a mentioned file's contents, reminders) and those never sent
    (``ignored``)."""
    own = [
        p["text"]
        for p in parts
        if isinstance(p, dict)
        and p.get("type") == "text"
        and isinstance(p.get("text"), str)
        and p.get("synthetic") is not True
        and p.get("ignored") is not True
    ]
    words = "\n".join(own).strip()
    return words or None


def _action(name: Any, args: dict[str, Any], ok: bool) -> Action | None:
    if name in _SHELLS and isinstance(args.get("command"), str):
        return Action(args["command"], shell_edits(args["command"]) if ok else ())
    if name in _EDITORS:
        edited = path_arg(args)
        return Action(None, edited if ok else ()) if edited else None
    if name in _PATCHES:
        patch = args.get("patchText", args.get("patch"))
        if isinstance(patch, str):
            return Action(None, patch_files(patch) if ok else ())
    return None


def _output(state: dict[str, Any]) -> str | None:
    status = state.get("status")
    if status == "completed" and isinstance(state.get("output"), str):
        return str(state["output"])
    if status == "error":
        error = state.get("error")
        return error if isinstance(error, str) else str(error)
    return None  # pending or running: the call never finished


def _sent(info: dict[str, Any], parts: list[Any]) -> bool:
    """Whether an assistant message reached the model again: OpenCode drops one that ended
    in an error, unless the person aborted it after it wrote something."""
    error = info.get("error")
    if not error:
        return True
    aborted = isinstance(error, dict) and error.get("name") == "MessageAbortedError"
    return aborted and any(
        isinstance(p, dict) and p.get("type") not in ("step-start", "reasoning") for p in parts
    )


def read_opencode(data: dict[str, Any]) -> Log:
    """OpenCode: the task is the first user message with text the person typed; actions are
    ``tool`` parts (``bash`` gives a command; ``edit``/``write``/``multiedit`` a file;
    ``patch``/``apply_patch`` its patch's files), an edit whose ``state.status`` is
    ``error`` edited nothing; outputs are the finished parts' ``output`` (or ``error``), in
    order."""
    task: str | None = None
    actions: list[Action] = []
    outputs: list[str] = []
    for at, entry in enumerate(data["messages"]):
        if not _entry(entry):
            raise Refused(f"messages[{at}]: expected an object with 'info' and 'parts'")
        info, parts = entry["info"], entry["parts"]
        role = info.get("role")
        if role == "user":
            if task is None:
                task = _person(parts)
            continue
        if role != "assistant" or not _sent(info, parts):
            continue
        for part in parts:
            if not isinstance(part, dict) or part.get("type") != "tool":
                continue
            state = part.get("state")
            state = state if isinstance(state, dict) else {}
            ok = state.get("status") != "error"
            action = _action(part.get("tool"), json_object(state.get("input")), ok)
            if action is not None:
                actions.append(action)
            output = _output(state)
            if output is not None:
                outputs.append(output)
    if task is None:
        raise Refused("no message a person typed")
    return Log("opencode", task, tuple(actions), tuple(outputs))
