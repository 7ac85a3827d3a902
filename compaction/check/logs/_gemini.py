"""Gemini CLI sessions: the JSON file (``{"sessionId", …, "messages": [...]}``) and the JSONL
file (a metadata line, then one line per message write, ``$set`` and ``$rewindTo`` lines),
read the way Gemini CLI's chat recorder reads them back."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, json_object, path_arg, text

__all__ = ["is_gemini_record", "read_gemini", "replay_gemini"]

_SHELLS: Final = frozenset({"run_shell_command", "shell"})
_EDITORS: Final = frozenset({"write_file", "replace"})
#: User text the CLI wrote itself: its "continue" nudge, session and hook context, and the
#: prompt of its ``/init`` command (sent in the user role, written by the CLI).
_SYNTHETIC: Final = ("Please continue.", "System: Please continue.")
_SYNTHETIC_OPENINGS: Final = (
    "<session_context>",
    "<hook_context>",
    "You are an AI agent that brings the power of Gemini directly into the terminal.",
)


def is_gemini_record(record: dict[str, Any]) -> bool:
    """A line only a Gemini CLI session has: its metadata, an update, or a ``gemini``
    message."""
    return (
        ("sessionId" in record and "projectHash" in record)
        or "$set" in record
        or "$rewindTo" in record
        or (record.get("type") == "gemini" and "id" in record)
    )


def replay_gemini(lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as Gemini CLI loads them: a write with a known ``id`` replaces that
    message in place, ``$rewindTo`` drops that message and all after it, ``$set`` with
    ``messages`` replaces them all. Each step costs what it adds or drops."""
    order: list[str] = []
    at: dict[str, int] = {}
    data: dict[str, dict[str, Any]] = {}

    def put(message: Any) -> None:
        if not isinstance(message, dict):
            return
        key = message.get("id")
        key = key if isinstance(key, str) else f"\0{len(order)}-{len(data)}"
        if key not in data:
            at[key] = len(order)
            order.append(key)
        data[key] = message

    def rewind(target: Any) -> None:
        cut = at.get(target, 0) if isinstance(target, str) else 0
        for gone in order[cut:]:
            del at[gone], data[gone]
        del order[cut:]

    for record in lines:
        if "$rewindTo" in record:
            rewind(record["$rewindTo"])
        elif "$set" in record:
            update = record["$set"]
            if isinstance(update, dict) and isinstance(update.get("messages"), list):
                rewind(None)
                for message in update["messages"]:
                    put(message)
        elif "sessionId" in record and not isinstance(record.get("type"), str):
            messages = record.get("messages")
            for message in messages if isinstance(messages, list) else ():
                put(message)
        else:
            put(record)
    return [data[key] for key in order]


def _person(message: dict[str, Any]) -> str | None:
    words = text(message.get("content")).strip()
    if not words or words in _SYNTHETIC or words.startswith(_SYNTHETIC_OPENINGS):
        return None
    if words.startswith(("/", "?")):  # a slash command: it never reached the model
        return None
    return words


def _response(part: dict[str, Any]) -> str:
    response = part.get("response")
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return str(response[key])
    return json.dumps(response, ensure_ascii=False)


def _results(value: Any) -> list[str]:
    """The ``functionResponse`` texts of a call's ``result`` or of a content's parts."""
    if isinstance(value, str):
        return [value]
    out = []
    for part in value if isinstance(value, list) else [value]:
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            out.append(_response(part["functionResponse"]))
    return out


def _action(name: Any, args: Any, ok: bool) -> Action | None:
    args = json_object(args)
    if name in _SHELLS and isinstance(args.get("command"), str):
        return Action(args["command"], shell_edits(args["command"]) if ok else ())
    if name in _EDITORS:
        edited = path_arg(args)
        return Action(None, edited if ok else ()) if edited else None
    return None


def read_gemini(messages: list[dict[str, Any]]) -> Log:
    """Gemini CLI: the task is the first ``user`` message the person wrote (not the CLI's
    ``Please continue.``, session or hook context, its ``/init`` prompt, or a slash command);
    actions are a ``gemini`` message's ``toolCalls`` (or ``functionCall`` parts):
    ``run_shell_command`` gives a command, ``write_file``/``replace`` a file, only when the
    call's ``status`` is ``success``; outputs are their ``functionResponse`` results, in
    order. ``info``/``error``/``warning`` notices never reached the model and are passed over."""
    task: str | None = None
    actions: list[Action] = []
    outputs: list[str] = []
    for message in messages:
        kind = message.get("type")
        content = message.get("content")
        parts = content if isinstance(content, list) else []
        if kind == "user":
            responses = [r for p in parts for r in _results(p)]
            outputs += responses
            if task is None and not responses:
                task = _person(message)
        elif kind == "gemini":
            for call in message.get("toolCalls") or ():
                if not isinstance(call, dict):
                    continue
                ok = call.get("status") in (None, "success")
                action = _action(call.get("name"), call.get("args"), ok)
                if action is not None:
                    actions.append(action)
                if call.get("result") is not None:
                    outputs += _results(call.get("result"))
            for part in parts:
                call = part.get("functionCall") if isinstance(part, dict) else None
                if isinstance(call, dict):
                    action = _action(call.get("name"), call.get("args"), True)
                    if action is not None:
                        actions.append(action)
    if task is None:
        raise Refused("no message a person typed")
    return Log("gemini-cli", task, tuple(actions), tuple(outputs))
