"""What the agents print headless, one event a line: Claude Code's and the Cursor CLI's
``--output-format stream-json``, ``codex exec --json`` and Gemini CLI's
``--output-format stream-json``, read from their events the way each printer lays them out.

A printed stream says ``session_id`` where a session log says ``sessionId`` and has none of a
log's tree fields, so the two are told apart by their records alone (``stream_kind``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, json_object, path_arg, text
from ._claude import claude_run

__all__ = ["STREAM_FORMATS", "read_stream", "stream_kind"]

STREAM_FORMATS: Final = ("claude-code-stream", "cursor-stream", "codex-exec", "gemini-cli-stream")

#: Fields of a session log's records (Claude Code's, Qwen Code's), never of a printed stream.
_LOG_FIELDS: Final = ("sessionId", "parentUuid", "leafUuid")
#: What an Anthropic API message holds besides ``role`` and ``content``: Claude Code prints
#: the API message itself, Cursor only the role and the content.
_API_FIELDS: Final = ("id", "model", "usage", "stop_reason")
_CODEX_ITEMS: Final = frozenset({"item.started", "item.updated", "item.completed"})
#: A shell run with its script as one argument, as Codex prints its commands.
_SHELL_C: Final = re.compile(r"^(?:/usr)?(?:/bin/)?(?:ba|z)?sh -l?c ")


def _printed(record: Mapping[str, Any]) -> bool:
    return "session_id" in record and not any(k in record for k in _LOG_FIELDS)


def _chat_kind(record: Mapping[str, Any]) -> str | None:
    """Claude Code or Cursor, for a printed ``user``/``assistant``/``system``/``result``/
    ``tool_call`` record; None when this record alone does not tell."""
    kind = record.get("type")
    message = record.get("message")
    if kind in ("user", "assistant") and isinstance(message, dict):
        if "parent_tool_use_id" in record:
            return "claude-code-stream"
        if "model_call_id" in record or "timestamp_ms" in record:
            return "cursor-stream"
        if kind == "assistant":
            api = any(k in message for k in _API_FIELDS)
            return "claude-code-stream" if api else "cursor-stream"
        return None
    if kind == "tool_call" and "call_id" in record and isinstance(record.get("tool_call"), dict):
        return "cursor-stream"
    if kind == "thinking":
        return "cursor-stream"
    if kind == "system" and "claude_code_version" in record:
        return "claude-code-stream"
    if kind == "result" and ("total_cost_usd" in record or "num_turns" in record):
        return "claude-code-stream"
    return None


def stream_kind(record: Mapping[str, Any]) -> str | None:
    """The printed stream ``record`` belongs to, when it tells; ``""`` for a record of a
    printed Claude Code or Cursor stream that does not say which (a bare prompt echo), so no
    session-log reader takes it; None for a record of no printed stream."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return None
    if kind in _CODEX_ITEMS and isinstance(record.get("item"), dict):
        return "codex-exec"
    if kind == "thread.started" and isinstance(record.get("thread_id"), str):
        return "codex-exec"
    if kind in ("turn.started", "turn.completed", "turn.failed"):
        return "codex-exec"
    if "session_id" not in record and "timestamp" in record and "text" not in record:
        if kind == "tool_use" and "tool_name" in record and "tool_id" in record:
            return "gemini-cli-stream"
        if kind == "tool_result" and "tool_id" in record and "status" in record:
            return "gemini-cli-stream"
        if kind == "message" and record.get("role") in ("user", "assistant"):
            return "gemini-cli-stream" if isinstance(record.get("content"), str) else None
    if kind == "init" and isinstance(record.get("session_id"), str) and "model" in record:
        return "gemini-cli-stream"
    no_log = not any(k in record for k in _LOG_FIELDS)
    if kind in ("user", "assistant") and "parent_tool_use_id" in record and no_log:
        # The Agent SDK's messages, saved by a script of the person's, may lack the
        # ``session_id`` the CLI prints; the sub-agent link is still Claude Code's alone.
        return "claude-code-stream"
    if _printed(record):
        found = _chat_kind(record)
        if found is not None:
            return found
        if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
            return ""
    return None


def read_stream(kind: str, lines: list[dict[str, Any]]) -> Log:
    """The stream ``kind`` (one of ``STREAM_FORMATS``) read from its records."""
    if kind == "claude-code-stream":
        return _read_claude_stream(lines)
    if kind == "cursor-stream":
        return _read_cursor_stream(lines)
    if kind == "codex-exec":
        return _read_codex_exec(lines)
    return _read_gemini_stream(lines)


def _read_claude_stream(lines: Iterable[dict[str, Any]]) -> Log:
    """Claude Code's stream: the records of a session log under other names, read by the
    Claude Code reader. A sub-agent's records (a non-null ``parent_tool_use_id``: the ``Task``
    call that started it) are its own context, not the run's: they are left out of the task,
    the actions and the outputs, as a session log's sidechain is; the main run sees only the
    ``Task`` call's result. ``isSynthetic`` text is the harness's, as a log's ``isMeta``.

    ``claude -p`` prints the prompt only when asked to replay it (``--replay-user-messages``);
    without it the stream is read with no task, as Codex exec's is, so its actions' facts are
    still asked. A stream with neither a prompt nor a call of the main run is refused."""
    main = []
    for record in lines:
        if record.get("parent_tool_use_id") is not None:
            continue
        if record.get("isSynthetic") is True:
            record = {**record, "isMeta": True}
        main.append(record)
    run, task = claude_run(main)
    if task is None and not (run.uses or run.outputs):
        raise Refused("no message a person typed and no call of the main run")
    return run.log("claude-code-stream", task or "")


#: Cursor's tool kinds (``<kind>ToolCall``) and function names that run a command or write a
#: file.
_CURSOR_SHELLS: Final = frozenset({"shell", "Shell", "run_terminal_cmd", "Bash"})
_CURSOR_EDITORS: Final = frozenset(
    {"edit", "write", "delete", "strReplace", "multiEdit", "searchReplace", "editNotebook"}
    | {"Edit", "Write", "Delete", "StrReplace", "MultiEdit", "edit_file", "search_replace"}
)


def _cursor_tool(value: Any) -> tuple[Any, dict[str, Any], Any] | None:
    """(kind, args, result) of a ``tool_call`` object: its one ``<kind>ToolCall`` or its
    ``function`` (``name``, ``arguments``)."""
    if not isinstance(value, dict):
        return None
    function = value.get("function")
    if isinstance(function, dict):
        return function.get("name"), json_object(function.get("arguments")), function.get("result")
    for key, body in value.items():
        if isinstance(key, str) and key.endswith("ToolCall") and isinstance(body, dict):
            return key[: -len("ToolCall")], json_object(body.get("args")), body.get("result")
    return None


def _cursor_output(result: Any) -> tuple[str, bool]:
    """What a completed call returned, and whether it failed: ``success`` holds the output
    (a read's ``content``, a shell's ``stdout``/``stderr``); anything else (``error``,
    ``rejected``) is a failure."""
    if not isinstance(result, dict):
        return (text(result), False)
    success = result.get("success")
    if isinstance(success, dict):
        if isinstance(success.get("content"), str):
            return (success["content"], False)
        parts = [success.get(k) for k in ("stdout", "stderr")]
        if any(isinstance(p, str) for p in parts):
            return ("\n".join(p for p in parts if isinstance(p, str)), False)
        return (json.dumps(success, ensure_ascii=False), False)
    if success is not None:
        return (text(success), False)
    return ("Error: " + json.dumps(result, ensure_ascii=False), True)


def _read_cursor_stream(lines: Iterable[dict[str, Any]]) -> Log:
    """Cursor's stream: the task is the ``user`` event's text (the prompt echoed); actions are
    ``tool_call`` events, once per ``call_id`` (``shellToolCall`` gives a command,
    ``editToolCall``/``writeToolCall``/``deleteToolCall``… a file), a call whose completion
    holds no ``success`` (an error, a rejection) edited nothing; outputs are the completions'
    results, in order."""
    task: str | None = None
    calls: dict[str, Action] = {}
    failed: set[str] = set()
    outputs: list[str] = []
    for line, record in enumerate(lines):
        kind = record.get("type")
        if kind == "user" and task is None:
            message = record.get("message")
            task = text(message.get("content")).strip() if isinstance(message, dict) else ""
            task = task or None
        if kind != "tool_call":
            continue
        tool = _cursor_tool(record.get("tool_call"))
        if tool is None:
            continue
        name, args, result = tool
        key = str(record.get("call_id") or f"\0{line}")
        if key not in calls:
            command = args.get("command")
            if name in _CURSOR_SHELLS and isinstance(command, str):
                calls[key] = Action(command, shell_edits(command))
            elif name in _CURSOR_EDITORS:
                calls[key] = Action(None, path_arg(args))
        if record.get("subtype") == "completed":
            output, bad = _cursor_output(result)
            outputs.append(output)
            if bad:
                failed.add(key)
    if task is None:
        raise Refused("no message a person typed")
    actions = tuple(Action(a.command, () if k in failed else a.edited) for k, a in calls.items())
    return Log("cursor-stream", task, actions, tuple(outputs))


def _unwrap(command: str) -> str:
    """The script of ``bash -lc '<script>'`` (how Codex prints the commands it runs: ``bash``,
    ``zsh`` or ``sh``, by name or path), else the command as printed."""
    if _SHELL_C.match(command) is None:
        return command
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote: not a wrapped script
        return command
    return words[2] if len(words) == 3 else command


def _codex_output(item: Mapping[str, Any]) -> str | None:
    kind = item.get("type")
    if item.get("status") == "in_progress":
        return None  # the run was killed before it finished: nothing came back
    if kind == "command_execution" and isinstance(item.get("aggregated_output"), str):
        return str(item["aggregated_output"])
    if kind == "mcp_tool_call":
        result, error = item.get("result"), item.get("error")
        if isinstance(result, dict):
            return text(result.get("content"))
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return "Error: " + error["message"]
    return None


def _codex_action(item: Mapping[str, Any]) -> Action | None:
    """A finished item's action: a command (its edits, unless it failed), a file change's
    paths (none when it failed)."""
    kind, status = item.get("type"), item.get("status")
    if kind == "command_execution" and isinstance(item.get("command"), str):
        command = _unwrap(item["command"])
        code = item.get("exit_code")
        ok = status != "failed" and (code is None or code == 0)
        return Action(command, shell_edits(command) if ok else ())
    if kind == "file_change":
        changes = item.get("changes")
        paths = (
            [c.get("path") for c in changes if isinstance(c, dict)]
            if isinstance(changes, list)
            else []
        )
        edited = tuple(dict.fromkeys(p for p in paths if isinstance(p, str) and p))
        return Action(None, edited if status != "failed" else ())
    return None


def _read_codex_exec(lines: Iterable[dict[str, Any]]) -> Log:
    """``codex exec --json``: each item's last state (``item.started``/``updated``/
    ``completed`` carry it whole) where it was first seen, ids counted anew by each
    ``thread.started``. Actions: ``command_execution`` (its ``command``, a ``bash -lc``
    script unwrapped) and ``file_change`` (its ``changes`` paths); a failed one edited
    nothing. Outputs: commands' ``aggregated_output``, MCP results and errors.

    The prompt is the command line's, never printed: the stream has no task, so the log is
    read with an empty one (no task ids are asked of it; its actions' facts still are). A
    stream with no item at all is refused: nothing in it is the agent's."""
    thread = 0
    items: dict[tuple[int, str], Mapping[str, Any]] = {}
    for record in lines:
        kind = record.get("type")
        if kind == "thread.started":
            thread += 1
        item = record.get("item")
        if kind in _CODEX_ITEMS and isinstance(item, dict) and isinstance(item.get("id"), str):
            items[(thread, item["id"])] = item
    if not items:
        raise Refused(
            "a codex exec stream with no item: no prompt (it is never printed), no action"
        )
    actions = tuple(a for a in map(_codex_action, items.values()) if a is not None)
    outputs = tuple(o for o in map(_codex_output, items.values()) if o is not None)
    return Log("codex-exec", "", actions, outputs)


_GEMINI_SHELLS: Final = frozenset({"run_shell_command", "shell"})
_GEMINI_EDITORS: Final = frozenset({"write_file", "replace", "edit"})


def _read_gemini_stream(lines: Iterable[dict[str, Any]]) -> Log:
    """Gemini CLI's stream: the task is the ``user`` ``message`` (the prompt as given);
    actions are ``tool_use`` events (``run_shell_command`` gives a command, ``write_file``/
    ``replace`` a file), one whose ``tool_result`` ``status`` is not ``success`` edited nothing;
    outputs are the results' ``output`` or ``error.message``, in order."""
    task: str | None = None
    calls: dict[str, Action] = {}
    failed: set[str] = set()
    outputs: list[str] = []
    for line, record in enumerate(lines):
        kind = record.get("type")
        key = str(record.get("tool_id") or f"\0{line}")
        if kind == "message" and record.get("role") == "user" and task is None:
            task = text(record.get("content")).strip() or None
        elif kind == "tool_use" and key not in calls:
            name, args = record.get("tool_name"), json_object(record.get("parameters"))
            command = args.get("command")
            if name in _GEMINI_SHELLS and isinstance(command, str):
                calls[key] = Action(command, shell_edits(command))
            elif name in _GEMINI_EDITORS:
                calls[key] = Action(None, path_arg(args))
        elif kind == "tool_result":
            error = record.get("error")
            said = error.get("message") if isinstance(error, dict) else None
            output = record.get("output")
            shown = [s for s in (said, output) if isinstance(s, str) and s]
            outputs.append("\n".join(dict.fromkeys(shown)))
            if record.get("status") != "success":
                failed.add(key)
    if task is None:
        raise Refused("no message a person typed")
    actions = tuple(Action(a.command, () if k in failed else a.edited) for k, a in calls.items())
    return Log("gemini-cli-stream", task, actions, tuple(outputs))
