"""Goose sessions: the JSONL file (a metadata line, then one message a line) and the JSON of
``goose session export`` (the session with its ``conversation``), read from the JSON itself."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, json_object, path_arg

__all__ = ["is_goose_record", "read_goose"]

#: Goose names a tool ``<extension>__<tool>``; these are the developer extension's, old
#: (``shell``, ``text_editor``) and new (``shell``, ``write``, ``edit``).
_SHELLS: Final = frozenset({"shell"})
_WRITERS: Final = frozenset({"write", "edit"})
#: The ``text_editor`` commands that change the file (``view`` reads it).
_EDITOR_COMMANDS: Final = frozenset({"write", "str_replace", "insert", "undo_edit"})
_GOOSE_CONTENT: Final = frozenset({"toolRequest", "toolResponse", "redactedThinking"})


def is_goose_record(record: dict[str, Any]) -> bool:
    """A Goose line: its session metadata, or a message (``role``, a ``content`` list, a
    ``created`` time) with Goose's visibility metadata or content types."""
    if "message_count" in record and "role" not in record:
        return "working_dir" in record or "description" in record
    if record.get("role") not in ("user", "assistant") or "created" not in record:
        return False
    content = record.get("content")
    meta = record.get("metadata")
    return isinstance(content, list) and (
        (isinstance(meta, dict) and ("userVisible" in meta or "agentVisible" in meta))
        or any(isinstance(c, dict) and c.get("type") in _GOOSE_CONTENT for c in content)
    )


def _model_text(items: Any) -> str:
    """The text of a tool result's content items the model was sent: an item meant only
    for the person (``annotations.audience`` without ``assistant``) never reached it."""
    out: list[str] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        notes = item.get("annotations")
        audience = notes.get("audience") if isinstance(notes, dict) else None
        if isinstance(audience, list) and audience and "assistant" not in audience:
            continue
        if isinstance(item.get("text"), str):
            out.append(item["text"])
        elif isinstance(item.get("resource"), dict) and isinstance(
            item["resource"].get("text"), str
        ):
            out.append(item["resource"]["text"])
    return "\n".join(out)


def _result(item: dict[str, Any]) -> tuple[str, bool]:
    """A ``toolResponse``'s text and whether it reports failure."""
    result = item.get("toolResult")
    if not isinstance(result, dict):
        return "", False
    if result.get("status") == "error":
        return str(result.get("error")), True
    value = result.get("value")
    if isinstance(value, dict):  # an MCP CallToolResult
        return _model_text(value.get("content")), value.get("isError") is True
    return _model_text(value), False


def _action(request: Any) -> Action | None:
    call = request.get("toolCall") if isinstance(request, dict) else None
    if not isinstance(call, dict) or call.get("status") != "success":
        return None  # the model's call did not parse: nothing ran
    value = call.get("value")
    value = value if isinstance(value, dict) else {}
    name = value.get("name")
    tool = name.rsplit("__", 1)[-1] if isinstance(name, str) else None
    args = json_object(value.get("arguments"))
    if tool in _SHELLS and isinstance(args.get("command"), str):
        return Action(args["command"], shell_edits(args["command"]))
    if tool in _WRITERS or (tool == "text_editor" and args.get("command") in _EDITOR_COMMANDS):
        edited = path_arg(args)
        return Action(None, edited) if edited else None
    return None


def _person(message: dict[str, Any]) -> str | None:
    """The text of a user message the person saw and typed: text Goose adds for the agent
    only (``userVisible: false``: a compaction summary, context) is Goose's."""
    meta = message.get("metadata")
    if isinstance(meta, dict) and meta.get("userVisible") is False:
        return None
    words = "\n".join(
        c["text"]
        for c in message["content"]
        if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
    ).strip()
    return words or None


def read_goose(messages: Iterable[Any]) -> Log:
    """Goose: the task is the first user message's text the person saw (not Goose's own,
    ``userVisible: false``); actions are ``toolRequest`` items (the developer extension's
    ``shell`` gives a command; ``write``/``edit`` and ``text_editor``'s writing commands a
    file), an edit whose ``toolResponse`` is an error edited nothing; outputs are the
    ``toolResponse`` texts the model was sent, in order. A message no longer shown to the
    agent after a compaction still happened, and is read."""
    task: str | None = None
    uses: list[tuple[str, Action]] = []
    failed: set[str] = set()
    outputs: list[str] = []
    for at, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            raise Refused(f"message {at}: expected an object with a 'content' list")
        role = message.get("role")
        for n, item in enumerate(message["content"]):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "toolRequest" and role == "assistant":
                action = _action(item)
                if action is not None:
                    uses.append((str(item.get("id") or f"\0{at}-{n}"), action))
            elif kind == "toolResponse":
                output, error = _result(item)
                outputs.append(output)
                if error:
                    failed.add(str(item.get("id")))
        if task is None and role == "user":
            task = _person(message)
    if task is None:
        raise Refused("no message a person typed")
    actions = tuple(Action(a.command, () if key in failed else a.edited) for key, a in uses)
    return Log("goose", task, actions, tuple(outputs))
