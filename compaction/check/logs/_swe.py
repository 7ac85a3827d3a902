"""mini-swe-agent (1 and 2) and SWE-agent trajectories, read from their raw JSON."""

from __future__ import annotations

from typing import Any, Final

from ..edits import shell_edits
from ._base import Action, Log, Refused, fenced, json_object, text

__all__ = ["is_mini_message", "read_mini", "read_swe"]

#: mini-swe-agent's action fences: ``bash`` (1.x) and ``mswea_bash_command`` (2.x).
_FENCES: Final = ("bash", "mswea_bash_command")


def is_mini_message(message: dict[str, Any]) -> bool:
    """A message only a mini-swe-agent run has: its closing ``exit``, or an assistant
    message that ran something (a tool call, a fenced action)."""
    if message.get("role") == "exit":
        return True
    if message.get("role") != "assistant":
        return False
    return bool(message.get("tool_calls")) or any(
        f"```{tag}" in text(message.get("content")) for tag in _FENCES
    )


def _mini_task(content: str) -> str:
    # The task is the PR description; the rest of that message is the harness's instructions.
    start = content.find("<pr_description>")
    end = content.find("</pr_description>", start) if start >= 0 else -1
    return content if end < 0 else content[start + len("<pr_description>") : end]


def _mini_commands(message: dict[str, Any]) -> list[str]:
    """What an assistant message ran: its ``bash`` tool calls (2.x tool calling), else its
    one fenced block (mini-swe-agent runs an answer only when it holds exactly one)."""
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        commands = []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            args = json_object(function.get("arguments")) if isinstance(function, dict) else {}
            if isinstance(args.get("command"), str):
                commands.append(args["command"].strip())
        return commands
    blocks = fenced(text(message.get("content")), _FENCES)
    return [blocks[0].strip()] if len(blocks) == 1 else []


def read_mini(messages: list[Any]) -> Log:
    """mini-swe-agent: ``{"messages": [...]}`` (1.x, 2.x) or the bare message list (2.x).

    The task is the first user message (its ``<pr_description>`` when it has one); an action
    is a ``bash`` tool call of an assistant message or its one fenced ``bash`` /
    ``mswea_bash_command`` block; every later ``user`` or ``tool`` message is an output. The
    closing ``exit`` message holds the submission, not an output.
    """
    items = [m for m in messages if isinstance(m, dict)]
    first = next((i for i, m in enumerate(items) if m.get("role") == "user"), None)
    if first is None:
        raise Refused("no user message")
    task = _mini_task(text(items[first].get("content")))
    actions, outputs = [], []
    for m in items[first + 1 :]:
        role = m.get("role")
        if role == "assistant":
            actions += [Action(c, shell_edits(c)) for c in _mini_commands(m)]
        elif role in ("user", "tool"):
            outputs.append(text(m.get("content")))
    return Log("mini-swe-agent", task, tuple(actions), tuple(outputs))


def _swe_editor(first: str) -> str | None:
    words = first.split()
    editing = ("create", "str_replace", "insert", "undo_edit")
    if len(words) > 2 and words[0] == "str_replace_editor" and words[1] in editing:
        return _unquote(words[2])
    return None


def _unquote(word: str) -> str:
    return word.strip().strip("\"'")


def read_swe(data: dict[str, Any]) -> Log:
    """SWE-agent (``*.traj``: ``{"trajectory": [...], "history": [...]}``): the task is the
    first user message of ``history`` that is not a demonstration, cut before the harness's
    ``INSTRUCTIONS:``; an action is a trajectory step's ``action`` (its editor commands edit
    the open file), its output the step's ``observation``."""
    history = [h for h in data.get("history") or [] if isinstance(h, dict)]
    task = next(
        (
            text(h.get("content"))
            for h in history
            if h.get("role") == "user" and not h.get("is_demo")
        ),
        None,
    )
    if task is None:
        raise Refused("no user message in history")
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
        elif (path := _swe_editor(first)) is not None:
            edited = (path,)
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
        return [
            (str(s.get("action") or ""), text(s.get("observation")))
            for s in trajectory
            if isinstance(s, dict)
        ]
    steps = []
    for i, h in enumerate(history):
        if h.get("role") == "assistant" and isinstance(h.get("action"), str):
            answer = history[i + 1] if i + 1 < len(history) else {}
            answered = answer.get("role") in ("tool", "user")
            steps.append((h["action"], text(answer.get("content")) if answered else ""))
    return steps
