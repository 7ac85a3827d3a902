"""A reader of raw agent logs of its own: the JSON read directly, never through
``compaction.formats``, so a check of the library is graded against an independent account.

A log becomes a ``Log``: the task as the person wrote it (never the harness's wrapper around
it), the agent's actions in order (each with its command text and the files it edited), and
the environment's outputs in order. The shape is told from the records themselves:

- **mini-swe-agent** (``{"messages": [...]}``, 1.x and 2.x, or 2.x's bare message list):
  the task is the first user message (its ``<pr_description>``); an action is a ``bash``
  tool call, or an assistant message's one fenced ``bash`` / ``mswea_bash_command`` block;
  every later ``user`` or ``tool`` message is an output.
- **SWE-agent** (``{"trajectory", "history"}``): the first user message of ``history`` that
  is not a demonstration; a step's ``action`` and ``observation``.
- **Claude Code** (``type`` ``user``/``assistant`` records, or the web export's
  ``loglines``): the first text a person typed;
  ``tool_use`` blocks (``Bash``, ``Edit``/``Write``/…), ``tool_result`` blocks.
- **Codex** (``{"type", "payload"}`` records): the first user message Codex did not write
  (no ``<environment_context>``), after ``## My request for Codex:``; ``shell`` calls,
  ``apply_patch`` patches (and those a script applied, from ``patch_apply_end``); the
  ``*_call_output`` items.
- **Gemini CLI** (the JSON session or its JSONL with ``$set``/``$rewindTo``): the first user
  text not the CLI's own (``System: Please continue.``, the ``/init`` prompt);
  ``run_shell_command``, ``write_file``/``replace``; the ``functionResponse`` results.
- **Copilot CLI** (``events.jsonl``): ``user.message`` ``content`` (not the
  ``<current_datetime>`` of ``transformedContent``); ``toolRequests``; the
  ``tool.execution_complete`` results.
- **OpenHands** (event lists, ``output.jsonl`` records with ``history``): the user's first
  ``message`` (the problem statement in the resolver's template); ``run``, ``edit``,
  agentskills edits; the observations.
- **Cline / Roo Code** (``api_conversation_history.json``: Anthropic messages): inside the
  first ``<task>``; ``tool_use`` blocks or the older XML calls (``execute_command``,
  ``write_to_file``/``replace_in_file``); the text after each ``[tool] Result:`` header.
- **Cursor** (``{"role", "message": {"content"}}``): the first user line inside
  ``<user_query>``; ``Shell``, ``Write``/``StrReplace``/…; ``tool_result`` blocks.
- **Factory Droid** (``stream-json`` events or the session store): the first user text
  after Droid's ``<system-reminder>``; ``Execute``, ``Edit``/``Create``, ``ApplyPatch``;
  the ``tool_result`` values.
- **OpenCode** (``opencode export``: ``{"info", "messages": [{"info", "parts"}]}``): the
  first user message's text parts the person typed (not ``synthetic``, not ``ignored``);
  ``tool`` parts (``bash``, ``edit``/``write``/``multiedit``, ``patch``/``apply_patch``);
  their ``output`` or ``error``.
- **Goose** (the JSONL session, ``goose session export``'s ``conversation``): the first user
  text the person saw (not ``userVisible: false``); ``toolRequest`` items (``shell``,
  ``text_editor``'s writing commands, ``write``/``edit``); the ``toolResponse`` content the
  model was sent.
- **Qwen Code** (``{"uuid", "parentUuid", "type", "message": {"parts"}}`` records): on the
  chain back from the last record, the first ``user`` record with no ``subtype`` (without
  reminders or hook context, not a slash command Qwen handled); ``run_shell_command``,
  ``write_file``/``edit``; the ``functionResponse`` results.
- **Continue** (``{"sessionId", "workspaceDirectory", "history"}``): the first user item's
  ``content`` (never its ``contextItems``); ``toolCalls`` (``run_terminal_command``/``Bash``,
  the file-writing tools); the call states' output, and ``tool`` items no state answered.

- **Claude Code's stream** (``claude -p --output-format stream-json``, the Agent SDK's
  messages): as a Claude Code session, a sub-agent's records (a non-null
  ``parent_tool_use_id``) left out of the task, the actions and the outputs; no task when
  the prompt was not replayed into the stream.
- **Cursor's stream** (``cursor-agent -p --output-format stream-json``): the ``user`` echo of
  the prompt; ``tool_call`` events once per ``call_id`` (``shellToolCall``,
  ``editToolCall``/``writeToolCall``/``deleteToolCall``…); the completions' results.
- **Codex exec** (``codex exec --json``): no task, since the stream never prints the prompt
  (its facts are its actions' and outputs'); ``command_execution`` commands and
  ``file_change`` paths, each item's last state; commands' output and MCP results.
- **Gemini CLI's stream** (``gemini -p --output-format stream-json``): the ``user``
  ``message``; ``tool_use`` events (``run_shell_command``, ``write_file``/``replace``);
  the ``tool_result`` outputs and errors.

In every format an edit whose result reports failure changed nothing. What counts as a shell
edit is in [`compaction.check.edits`][]. A file of no shape above, or with no message a person
typed (for the Claude Code and Codex exec streams, which may not print the prompt: no
call of the run either), is refused with
[`UnreadableLog`][compaction.check.logs.UnreadableLog] naming why; every reader is one pass
over the file (Qwen Code's two: its chain, then its records).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Final

from ._base import Action, Log, Refused, UnreadableLog, records
from ._claude import is_cline, read_claude, read_cline, read_cursor, read_droid
from ._codex import CODEX_TYPES, read_codex
from ._continue import is_continue, read_continue
from ._events import is_copilot_record, openhands_events, read_copilot, read_openhands
from ._gemini import is_gemini_record, read_gemini, replay_gemini
from ._goose import is_goose_record, read_goose
from ._opencode import is_opencode, read_opencode
from ._qwen import is_qwen_record, read_qwen
from ._streams import STREAM_FORMATS, read_stream, stream_kind
from ._swe import is_mini_message, read_mini, read_swe

__all__ = ["FORMATS", "Action", "Log", "UnreadableLog", "read_log"]

#: Every format this reader knows, as ``Log.format`` names them.
FORMATS: Final = (
    "mini-swe-agent",
    "swe-agent",
    "claude-code",
    "cline",
    "codex",
    "gemini-cli",
    "copilot-cli",
    "openhands",
    "cursor",
    "factory-droid",
    "opencode",
    "goose",
    "qwen-code",
    "continue",
    *STREAM_FORMATS,
)
_UNKNOWN: Final = "not a log of a format this reader knows (" + ", ".join(FORMATS) + ")"
_DROID_TYPES: Final = frozenset({"message", "tool_call", "tool_result", "completion"})


def read_log(path: Path) -> Log:
    """One raw log, read; [`UnreadableLog`][compaction.check.logs.UnreadableLog] for anything
    else (a link, a directory, a device, a file of another shape)."""
    try:
        return _read(path)
    except Refused as exc:
        raise UnreadableLog(path.name, str(exc)) from exc
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # A file of an unexpected shape is refused by name, never a crash of the suite.
        raise UnreadableLog(path.name, f"{type(exc).__name__}: {exc}") from exc


def _read(path: Path) -> Log:
    # lstat: a link is refused, never followed; only a regular file is read.
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise Refused("not a regular file")
    raw = path.read_text(encoding="utf-8")
    if path.suffix != ".jsonl":
        try:
            data = json.loads(raw)
        except ValueError as exc:
            if raw.count("\n") < 2:
                raise Refused(f"not JSON: {exc}") from exc
        else:
            return _document(data)
    lines = list(records(raw.splitlines()))
    if not lines:
        raise Refused("no line of the file is a JSON object")
    return _jsonl(lines)


def _document(data: Any) -> Log:
    """A whole-file JSON log."""
    if isinstance(data, dict):
        # The four below each say what they are (their session fields) before the generic
        # ``history`` / ``messages`` shapes would take them.
        if is_opencode(data):
            return read_opencode(data)
        if is_continue(data):
            return read_continue(data)
        if isinstance(data.get("conversation"), list):  # ``goose session export``
            return read_goose(data["conversation"])
        if isinstance(data.get("history"), list):
            # SWE-agent's history is chat messages (with ``role``); OpenHands' is events.
            events = openhands_events(data["history"])
            if events and not any("role" in e for e in events[:3]):
                return read_openhands([events])
            return read_swe(data)
        if isinstance(data.get("loglines"), list):  # Claude Code's web export
            return read_claude([r for r in data["loglines"] if isinstance(r, dict)])
        if isinstance(data.get("messages"), list):
            if "sessionId" in data or "projectHash" in data:
                return read_gemini(replay_gemini([data]))
            return read_mini(data["messages"])
    if isinstance(data, list):
        # The Claude Agent SDK's messages saved as one JSON list: the stream's records.
        printed = [e for e in data if isinstance(e, dict)]
        if any(stream_kind(e) for e in printed[:8]):
            return _jsonl(printed)
        events = openhands_events(data)
        head = events[:3]
        if any("action" in e or "observation" in e for e in head):
            return read_openhands([events])
        if any("role" in e for e in head):
            if is_cline(events):
                return read_cline(events)
            if not any(map(is_mini_message, events)):
                raise Refused("a list of chat messages with no agent action: not an agent log")
            return read_mini(data)
    raise Refused(_UNKNOWN)


def _kind(record: dict[str, Any]) -> str | None:
    """The format one JSONL record belongs to, when it tells."""
    kind = record.get("type")
    if kind in CODEX_TYPES and isinstance(record.get("payload"), dict):
        return "codex"
    # A printed stream before the session logs whose record names it shares (Claude Code's,
    # Factory Droid's ``message``/``tool_call``/``tool_result``); "" is a stream's record
    # that does not say which agent printed it, left for the next to tell.
    stream = stream_kind(record)
    if stream is not None:
        return stream or None
    if is_qwen_record(record):  # before Claude Code, whose records share the tree fields
        return "qwen-code"
    if is_goose_record(record):
        return "goose"
    if is_copilot_record(record):
        return "copilot-cli"
    if is_gemini_record(record):
        return "gemini-cli"
    if isinstance(record.get("history"), list):
        return "openhands"
    if kind == "session_start" or (
        kind in _DROID_TYPES and ("toolName" in record or "text" in record or "value" in record)
    ):
        return "factory-droid"
    if kind is None and "role" in record and isinstance(record.get("message"), dict):
        return "cursor"
    if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
        return "claude-code"
    return None


def _jsonl(lines: list[dict[str, Any]]) -> Log:
    kind = next((k for k in map(_kind, lines) if k is not None), "claude-code")
    if kind in STREAM_FORMATS:
        return read_stream(kind, lines)
    if kind == "codex":
        return read_codex(lines)
    if kind == "copilot-cli":
        return read_copilot(lines)
    if kind == "gemini-cli":
        return read_gemini(replay_gemini(lines))
    if kind == "openhands":
        return read_openhands([openhands_events(r.get("history")) for r in lines])
    if kind == "factory-droid":
        return read_droid(lines)
    if kind == "cursor":
        return read_cursor(lines)
    if kind == "qwen-code":
        return read_qwen(lines)
    if kind == "goose":
        # The metadata line (the first) is the session's, not a message.
        return read_goose([r for r in lines if not (is_goose_record(r) and "role" not in r)])
    return read_claude(lines)
