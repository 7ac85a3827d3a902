"""Qwen Code sessions (``~/.qwen/tmp/<project>/chats/<session>.jsonl``): one record a line,
``{"uuid", "parentUuid", "sessionId", "type", "subtype"?, "message": {"role", "parts"}}``,
read from the JSON itself. The conversation is the chain of ``parentUuid`` links back from
the last record: what a ``/rewind`` left on another branch is not part of the run."""

from __future__ import annotations

from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, json_object, path_arg

__all__ = ["is_qwen_record", "read_qwen"]

_TYPES: Final = frozenset({"user", "assistant", "tool_result", "system"})
_SHELLS: Final = frozenset({"run_shell_command"})
#: ``edit`` is Qwen's name for Gemini CLI's ``replace``; both are read.
_EDITORS: Final = frozenset({"write_file", "edit", "replace"})
#: What Qwen adds beside the person's words: the hook context part, reminder blocks.
_HOOK_CONTEXT: Final = "<qwen:user-prompt-submit-context>"
_OPEN, _CLOSE = "<system-reminder>", "</system-reminder>"


def is_qwen_record(record: dict[str, Any]) -> bool:
    """A Qwen record: the tree fields, and what no Claude Code record has (a Gemini
    ``parts`` list, a ``tool_result`` type, a ``systemPayload``)."""
    if record.get("type") not in _TYPES or not isinstance(record.get("uuid"), str):
        return False
    if "parentUuid" not in record or "sessionId" not in record:
        return False
    message = record.get("message")
    return (
        (isinstance(message, dict) and isinstance(message.get("parts"), list))
        or record.get("type") == "tool_result"
        or isinstance(record.get("systemPayload"), dict)
    )


def _chain(records: list[dict[str, Any]]) -> set[int]:
    """The places of the records on the active chain, walked back from the last record
    through ``parentUuid``. Records sharing a ``uuid`` are fragments of one message, all on
    the chain together. A parent the file lost (a cut line) is bridged to the record just
    before, as Qwen does. Each record is visited once."""
    places: dict[str, list[int]] = {}
    for at, record in enumerate(records):
        places.setdefault(record["uuid"], []).append(at)
    on: set[int] = set()
    seen: set[str] = set()
    uuid: str | None = records[-1]["uuid"] if records else None
    while uuid is not None and uuid not in seen:
        seen.add(uuid)
        mine = places[uuid]
        on.update(mine)
        parent = records[mine[0]].get("parentUuid")
        if isinstance(parent, str) and parent in places:
            uuid = parent
        elif isinstance(parent, str) and parent and mine[0] > 0:
            uuid = records[mine[0] - 1]["uuid"]
        else:
            uuid = None
    return on


def _without_reminders(text: str) -> str:
    """``text`` without its closed ``<system-reminder>`` blocks (one pass)."""
    kept: list[str] = []
    at = 0
    while (start := text.find(_OPEN, at)) >= 0:
        end = text.find(_CLOSE, start)
        if end < 0:
            break
        kept.append(text[at:start])
        at = end + len(_CLOSE)
    kept.append(text[at:])
    return "".join(kept)


def _parts(record: dict[str, Any]) -> list[Any]:
    message = record.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return parts if isinstance(parts, list) else []


def _person(record: dict[str, Any]) -> str | None:
    """The words of a user record the person typed: no ``subtype`` (a notification, a cron
    prompt, another agent's message are Qwen's), no other provenance, without the hook
    context part and reminder blocks; thoughts are not words."""
    if record.get("subtype") is not None or record.get("provenance") not in (None, "real_user"):
        return None
    words = []
    for part in _parts(record):
        text = part.get("text") if isinstance(part, dict) else part
        if not isinstance(text, str) or (isinstance(part, dict) and part.get("thought")):
            continue
        if not text.lstrip().startswith(_HOOK_CONTEXT):
            words.append(_without_reminders(text))
    said = "\n".join(w for w in words if w.strip()).strip()
    return said or None


def _response(response: Any) -> tuple[str, bool]:
    """A ``functionResponse``'s text and whether it reports an error."""
    if isinstance(response, dict):
        if isinstance(response.get("error"), str):
            return response["error"], True
        if isinstance(response.get("output"), str):
            return response["output"], False
    return (response if isinstance(response, str) else ""), False


def _action(call: dict[str, Any]) -> Action | None:
    name, args = call.get("name"), json_object(call.get("args"))
    if name in _SHELLS and isinstance(args.get("command"), str):
        return Action(args["command"], shell_edits(args["command"]))
    if name in _EDITORS:
        edited = path_arg(args)
        return Action(None, edited) if edited else None
    return None


def read_qwen(lines: list[dict[str, Any]]) -> Log:
    """Qwen Code: the task is the first user record on the chain the person typed (not a
    slash command Qwen handled itself, whose ``slash_command`` record follows it); actions
    are ``assistant`` records' ``functionCall`` parts (``run_shell_command`` gives a command,
    ``write_file``/``edit`` a file), an edit whose ``tool_result`` reports an error
    (``toolCallResult.status``, or ``response.error``) edited nothing; outputs are the
    ``functionResponse`` texts, in order. ``system`` records (Qwen's compaction among them)
    hold no action of the run."""
    # A line without the tree fields is one Qwen's own loader skips.
    records = [
        r
        for r in lines
        if isinstance(r.get("uuid"), str) and r.get("type") in _TYPES and "parentUuid" in r
    ]
    on = _chain(records)
    said: list[tuple[str, str]] = []  # (uuid, words): slash commands are struck off later
    uses: list[tuple[str, Action]] = []
    failed: set[str] = set()
    outputs: list[str] = []
    for at, record in enumerate(records):
        if at not in on:
            continue
        kind = record["type"]
        if kind == "user":
            words = _person(record)
            if words is not None:
                said.append((record["uuid"], words))
        elif kind == "system" and record.get("subtype") == "slash_command":
            payload = record.get("systemPayload")
            payload = payload if isinstance(payload, dict) else {}
            raw, sent = payload.get("rawCommand"), payload.get("sentToModel")
            if said and said[-1][1] == raw and sent is not True:
                said.pop()  # the command's own text: Qwen ran it, the model never saw it
        elif kind == "assistant":
            for n, part in enumerate(_parts(record)):
                call = part.get("functionCall") if isinstance(part, dict) else None
                action = _action(call) if isinstance(call, dict) else None
                if isinstance(call, dict) and action is not None:
                    uses.append((str(call.get("id") or f"\0{at}-{n}"), action))
        elif kind == "tool_result":
            status = record.get("toolCallResult")
            status = status.get("status") if isinstance(status, dict) else None
            for part in _parts(record):
                response = part.get("functionResponse") if isinstance(part, dict) else None
                if not isinstance(response, dict):
                    continue
                output, error = _response(response.get("response"))
                outputs.append(output)
                if error or status not in (None, "success"):
                    failed.add(str(response.get("id")))
    if not said:
        raise Refused("no message a person typed")
    actions = tuple(Action(a.command, () if key in failed else a.edited) for key, a in uses)
    return Log("qwen-code", said[0][1], actions, tuple(outputs))
