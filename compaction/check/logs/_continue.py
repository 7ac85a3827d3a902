"""Continue sessions (``~/.continue/sessions/<id>.json``, the IDE extensions' and the ``cn``
CLI's): one object, ``{"sessionId", "workspaceDirectory", "history": [{"message",
"contextItems", "toolCallStates"}]}``, read from the JSON itself."""

from __future__ import annotations

from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, json_object, path_arg

__all__ = ["is_continue", "read_continue"]

#: The extension's built-in tools were once named ``builtin_<name>``; the CLI's are
#: capitalised (``Bash``, ``Write``...). Every spelling is read.
_SHELLS: Final = frozenset({"run_terminal_command", "Bash"})
_EDITORS: Final = frozenset(
    {"create_new_file", "edit_existing_file", "single_find_and_replace", "multi_edit"}
    | {"search_and_replace_in_file", "Write", "Edit", "MultiEdit"}
)
#: A call state that says the tool did not do its work.
_FAILED: Final = frozenset({"errored", "canceled"})


def is_continue(data: dict[str, Any]) -> bool:
    """A session: ``sessionId``, ``workspaceDirectory`` and a ``history`` of items that
    hold a ``message``."""
    history = data.get("history")
    return (
        "sessionId" in data
        and "workspaceDirectory" in data
        and isinstance(history, list)
        and all(isinstance(i, dict) and isinstance(i.get("message"), dict) for i in history[:1])
    )


def _text(content: Any) -> str:
    """A message's ``content``: text, or the text of its parts (images have none)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p if isinstance(p, str) else p["text"]
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
        )
    return ""


def _action(call: Any, fallback: str) -> tuple[str, Action] | None:
    """A tool call (``{"id", "function": {"name", "arguments"}}``) as an action, by its id
    (``fallback`` for a call without one)."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return None
    function = call["function"]
    name = function.get("name")
    name = name.removeprefix("builtin_") if isinstance(name, str) else None
    args = json_object(function.get("arguments"))
    key = str(call["id"]) if isinstance(call.get("id"), str | int) else fallback
    if name in _SHELLS and isinstance(args.get("command"), str):
        return key, Action(args["command"], shell_edits(args["command"]))
    if name in _EDITORS:
        path = args.get("filepath")
        edited = (path,) if isinstance(path, str) and path else path_arg(args)
        return (key, Action(None, edited)) if edited else None
    return None


def _output(state: dict[str, Any]) -> str | None:
    """What a call state holds as the tool's output (its output items' ``content``)."""
    items = state.get("output")
    texts = [
        o["content"]
        for o in (items if isinstance(items, list) else ())
        if isinstance(o, dict) and isinstance(o.get("content"), str)
    ]
    return "\n\n".join(texts) if texts else None


def read_continue(data: dict[str, Any]) -> Log:
    """Continue: the task is the first ``user`` item's ``content``, what the person typed
    (its ``contextItems`` are what the IDE attached: never the task); actions are an
    ``assistant`` item's ``toolCalls`` (``run_terminal_command``/``Bash`` give a command,
    the file-writing tools their ``filepath``), an edit whose call state is ``errored`` or
    ``canceled`` edited nothing; outputs are the call states' output items, and a ``tool``
    item only for a call no state answered, in order."""
    task: str | None = None
    uses: list[tuple[str, Action]] = []
    seen: set[str] = set()
    failed: set[str] = set()
    answered: set[str] = set()
    outputs: list[str] = []
    for at, item in enumerate(data["history"]):
        message = item.get("message") if isinstance(item, dict) else None
        if not isinstance(message, dict):
            raise Refused(f"history[{at}]: expected an object with a 'message'")
        role = message.get("role")
        if role == "user" and task is None:
            task = _text(message.get("content")).strip() or None
        elif role == "assistant":
            states = item.get("toolCallStates")
            states = [s for s in states if isinstance(s, dict)] if isinstance(states, list) else []
            calls = message.get("toolCalls")
            calls = calls if isinstance(calls, list) else []
            listed = [*calls, *(s.get("toolCall") for s in states)]
            for n, call in enumerate(listed):
                found = _action(call, f"\0{at}-{n}")
                if found is not None and found[0] not in seen:
                    seen.add(found[0])
                    uses.append(found)
            for state in states:
                call = state.get("toolCall")
                ident = call.get("id") if isinstance(call, dict) else None
                key = str(state.get("toolCallId") or ident)
                if state.get("status") in _FAILED:
                    failed.add(key)
                output = _output(state)
                if output is not None and key not in answered:
                    answered.add(key)
                    outputs.append(output)
        elif role == "tool":
            key = str(message.get("toolCallId"))
            if key not in answered:
                answered.add(key)
                outputs.append(_text(message.get("content")))
    if task is None:
        raise Refused("no message a person typed")
    actions = tuple(Action(a.command, () if key in failed else a.edited) for key, a in uses)
    return Log("continue", task, actions, tuple(outputs))
