"""Event logs: GitHub Copilot CLI (``events.jsonl``) and OpenHands (event lists, and evaluation
``output.jsonl`` records with ``history``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, after_marker, json_object, path_arg, text

__all__ = ["is_copilot_record", "openhands_events", "read_copilot", "read_openhands"]

_COPILOT_SHELLS: Final = frozenset({"bash", "shell", "powershell"})
_COPILOT_EDITORS: Final = frozenset({"create", "edit"})
_EDITOR_COMMANDS: Final = frozenset({"create", "str_replace", "insert", "undo_edit", "write"})


def is_copilot_record(record: dict[str, Any]) -> bool:
    kind = record.get("type")
    return (
        isinstance(kind, str)
        and kind.startswith(("session.", "user.", "assistant.", "tool.", "system."))
        and isinstance(record.get("data"), dict)
    )


def _copilot_action(name: Any, args: Any) -> Action | None:
    args = json_object(args)
    if name in _COPILOT_SHELLS and isinstance(args.get("command"), str):
        return Action(args["command"], shell_edits(args["command"]))
    if name in _COPILOT_EDITORS or (
        name == "str_replace_editor" and args.get("command") in _EDITOR_COMMANDS
    ):
        edited = path_arg(args)
        return Action(None, edited) if edited else None
    return None


def read_copilot(lines: Iterable[dict[str, Any]]) -> Log:
    """Copilot CLI: the task is the first ``user.message`` whose ``content`` (what the person
    typed; ``transformedContent`` adds the CLI's ``<current_datetime>`` and reminders) is not
    empty; actions are ``assistant.message`` ``toolRequests`` (``bash`` gives a command,
    ``create``/``edit`` a file), and a ``tool.execution_start`` no message asked for; outputs
    are ``tool.execution_complete`` results in order (an edit that did not succeed changed
    nothing)."""
    task: str | None = None
    uses: list[tuple[str, Action]] = []
    seen: set[str] = set()
    failed: set[str] = set()
    outputs: list[str] = []
    for record in lines:
        kind, data = record.get("type"), record.get("data")
        if not isinstance(data, dict):
            continue
        if kind == "user.message" and task is None:
            typed = data.get("content")
            task = typed.strip() or None if isinstance(typed, str) else None
        elif kind in ("assistant.message", "tool.execution_start"):
            requests = data.get("toolRequests") if kind == "assistant.message" else [data]
            for request in requests if isinstance(requests, list) else ():
                if not isinstance(request, dict):
                    continue
                key = str(request.get("toolCallId"))
                if key in seen:
                    continue
                seen.add(key)
                name = request.get("name", request.get("toolName"))
                action = _copilot_action(name, request.get("arguments"))
                if action is not None:
                    uses.append((key, action))
        elif kind == "tool.execution_complete":
            result, error = data.get("result"), data.get("error")
            if isinstance(result, dict):
                outputs.append(text(result.get("content")))
            elif isinstance(error, dict):
                outputs.append(text(error.get("message")))
            if data.get("success") is not True:
                failed.add(str(data.get("toolCallId")))
    if task is None:
        raise Refused("no message a person typed")
    actions = tuple(Action(a.command, () if key in failed else a.edited) for key, a in uses)
    return Log("copilot-cli", task, actions, tuple(outputs))


#: OpenHands' agentskills editing functions (run as IPython), with the file they edit first.
_SKILLS: Final = re.compile(
    r"\b(?:edit_file_by_replace|create_file|append_file|insert_content_at_line)\(\s*"
    r"(?:file_name\s*=\s*)?['\"]([^'\"\n]+)['\"]"
)
#: How agentskills reports an edit it did not make.
_SKILL_REFUSED: Final = ("[Your proposed edit has introduced", "[No exact match found", "ERROR:")
_RESOLVER: Final = ("# Problem Statement\n", "\n\nIMPORTANT:")


def openhands_events(history: Any) -> list[dict[str, Any]]:
    """The events of a run: a list of events, or old ``[action, observation]`` pairs."""
    out: list[dict[str, Any]] = []
    for item in history if isinstance(history, list) else ():
        if isinstance(item, dict):
            out.append(item)
        elif isinstance(item, list):
            out += [e for e in item if isinstance(e, dict)]
    return out


def _args(event: dict[str, Any]) -> dict[str, Any]:
    """An action's arguments: ``args`` (events) or the event's own fields (old history)."""
    args = event.get("args")
    return args if isinstance(args, dict) else event


def _person(event: dict[str, Any]) -> str | None:
    args = _args(event)
    words = args.get("content") if isinstance(args.get("content"), str) else event.get("message")
    if not isinstance(words, str) or not words.strip():
        return None
    # The resolver's template around the issue: the person wrote the problem statement.
    statement = after_marker(words, *_RESOLVER)
    return statement if statement else words.strip()


def _oh_action(event: dict[str, Any]) -> Action | None:
    kind, args = event.get("action"), _args(event)
    if kind == "run" and isinstance(args.get("command"), str):
        return Action(args["command"], shell_edits(args["command"]))
    if kind in ("edit", "write"):
        if args.get("command") in ("view", "read"):
            return None
        edited = path_arg(args)
        return Action(None, edited) if edited else None
    if kind == "run_ipython" and isinstance(args.get("code"), str):
        edited = tuple(dict.fromkeys(m.group(1) for m in _SKILLS.finditer(args["code"])))
        return Action(None, edited) if edited else None
    return None


def _refused(observation: dict[str, Any] | None) -> bool:
    if observation is None:
        return False
    if observation.get("observation") == "error":
        return True
    content = observation.get("content")
    return isinstance(content, str) and content.lstrip().startswith(_SKILL_REFUSED)


def read_openhands(runs: list[list[dict[str, Any]]]) -> Log:
    """OpenHands, one run or several (an ``output.jsonl`` holds one per line, read one after
    another): the task is the first run's first ``message`` action from the user (the problem
    statement inside the resolver's template); actions are ``run`` (a command), ``edit`` /
    ``write`` (a file) and ``run_ipython`` agentskills edits; an edit answered by an
    ``error`` observation, or that agentskills refused, changed nothing. Outputs are the
    observations' ``content`` in order."""
    task: str | None = None
    actions: list[Action] = []
    outputs: list[str] = []
    for events in runs:
        answers: dict[Any, dict[str, Any]] = {}
        for event in events:
            cause = event.get("cause")
            if "observation" in event and isinstance(cause, int) and cause not in answers:
                answers[cause] = event
        pending: list[Action] = []  # old history (no ids): answered by the next observation
        for event in events:
            if "observation" in event:
                content = event.get("content")
                if isinstance(content, str) and event.get("observation") not in (
                    "agent_state_changed",
                    "null",
                ):
                    outputs.append(content)
                for waiting in pending:
                    actions.append(waiting if not _refused(event) else Action(waiting.command))
                pending.clear()
                continue
            if event.get("action") == "message" and event.get("source", "user") == "user":
                if task is None:
                    task = _person(event)
                continue
            found = _oh_action(event)
            if found is None:
                continue
            if isinstance(event.get("id"), int):
                answer = answers.get(event["id"])
                actions.append(found if not _refused(answer) else Action(found.command))
            else:
                pending.append(found)
        actions += pending
    if task is None:
        raise Refused("no message a person typed")
    return Log("openhands", task, tuple(actions), tuple(outputs))
