"""SWE-agent trajectories (``*.traj``): the ``history`` list of what the model was sent.

Two kinds of history exist:

- function-calling: assistant entries carry OpenAI ``tool_calls``; observations are ``tool``
  entries whose ``tool_call_ids`` may name several calls at once (one observation for a batch):
  we write one tool message per id, each with the observation;
- text actions: the model writes a command in its reply, SWE-agent parses it into ``action``
  and answers with the next user entry. The parsed action becomes a ``bash`` call
  (``{"command": action}``; SWE-agent's special commands run in its shell too), the reply
  text without the action (``thought``) stays the content, and the next user entry becomes the
  call's result. Demonstration entries (``is_demo``) stay user messages.

A last call with no observation (the run ended on ``submit``) is answered by an explicit
"no result recorded" result, reported in [`Loaded.repairs`][].
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..adapters import AdapterError
from ..adapters.openai import message_from_openai
from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from .detect import Document
from .errors import FormatError
from .harness import harness_prefixes, synthetic_meta, templates_in
from .loaded import Loaded
from .registry import Reader
from .repair import repair
from .validate_loaded import finish

__all__ = ["READERS", "read_swe_agent"]

SOURCE_KEY: Final = "swe_agent"

#: SWE-agent's own replies (format errors, blocked and cancelled commands, syntax-check
#: failures, timeouts), besides the ones in the trajectory's own ``replay_config``. The
#: harness sends them as user entries; they are marked synthetic and never taken for the
#: task, and so are demonstrations (``is_demo``).
DEFAULT_HARNESS_TEMPLATES: Final = (
    "Your output was not formatted correctly.",
    "Your output could not be parsed properly.",
    "Your output could not be parsed as a tool call.",
    "Your last output did not use any tool calls!",
    "Your bash command contained syntax errors and was NOT executed.",
    "Interactive operation '{{action}}' is not supported by this environment.",
    "Operation '{{action}}' is not supported by this environment.",
    "The command '{{command}}' was cancelled because it took more than {{timeout}} seconds.",
    "EXECUTION TIMED OUT",
    "Here is a demonstration of how to correctly accomplish this task.",
)
_HARNESS_KEYS: Final = re.compile(r"(error|timeout|cancelled|demonstration)\w*_template$")


def _harness(value: Mapping[str, Any]) -> tuple[str, ...]:
    config = value.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError:
            config = None
    own = templates_in(config, _HARNESS_KEYS)
    return harness_prefixes((*own, *DEFAULT_HARNESS_TEMPLATES))


def _text(content: Any, path: str | Path, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    raise FormatError(
        path, f"history[{index}].content: expected text, got {type(content).__name__}"
    )


def read_swe_agent(doc: Document, path: str | Path) -> Loaded:
    history = doc.value["history"]
    harness = _harness(doc.value)
    messages: list[Message] = []
    pending: ToolCall | None = None
    actions = 0
    names: dict[str, str] = {}
    for index, entry in enumerate(history):
        if not isinstance(entry, Mapping):
            raise FormatError(
                path, f"history[{index}]: expected an object, got {type(entry).__name__}"
            )
        role = entry.get("role")
        content = _text(entry.get("content"), path, index)
        source = {k: entry[k] for k in ("agent", "message_type", "is_demo") if k in entry}
        ids = entry.get("tool_call_ids")
        if ids:
            if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
                raise FormatError(
                    path, f"history[{index}].tool_call_ids: expected a list of call ids"
                )
            # One observation answering a batch of calls: each call gets its own result.
            messages.extend(
                Message(
                    "tool", content, tool_call_id=i, name=names.get(i), meta={SOURCE_KEY: source}
                )
                for i in ids
            )
            pending = None
            continue
        if role == "system":
            messages.append(Message("system", content, meta={SOURCE_KEY: source}))
        elif role == "user" or role == "tool":
            if role == "tool":
                raise FormatError(
                    path,
                    f"history[{index}]: a tool entry without "
                    "'tool_call_ids'; expected the ids of the calls it answers",
                )
            if pending is not None and not entry.get("is_demo"):
                messages.append(
                    Message(
                        "tool",
                        content,
                        tool_call_id=pending.id,
                        name="bash",
                        meta={SOURCE_KEY: source, **synthetic_meta(content, harness)},
                    )
                )
            else:
                synthetic = (
                    {SYNTHETIC_KEY: True}
                    if entry.get("is_demo")
                    else synthetic_meta(content, harness)
                )
                messages.append(Message("user", content, meta={SOURCE_KEY: source, **synthetic}))
            pending = None
        elif role == "assistant":
            pending = None
            action = entry.get("action")
            if entry.get("tool_calls"):
                try:
                    base = message_from_openai(
                        {
                            "role": "assistant",
                            "content": content,
                            "tool_calls": entry["tool_calls"],
                        },
                        index,
                    )
                except AdapterError as exc:
                    raise FormatError(path, f"history[{index}]: {exc.reason}") from None
                names.update((c.id, c.name) for c in base.tool_calls)
                messages.append(
                    Message(
                        "assistant",
                        content,
                        tool_calls=base.tool_calls,
                        meta={SOURCE_KEY: {**source, "action": action}},
                    )
                )
            elif isinstance(action, str) and action.strip():
                actions += 1
                pending = ToolCall(
                    f"call_{actions}", "bash", json.dumps({"command": action}, ensure_ascii=False)
                )
                thought = entry.get("thought")
                text = thought.rstrip() if isinstance(thought, str) else content
                messages.append(
                    Message(
                        "assistant",
                        text,
                        tool_calls=(pending,),
                        meta={SOURCE_KEY: {**source, "content": content, "action": action}},
                    )
                )
            else:
                messages.append(Message("assistant", content, meta={SOURCE_KEY: source}))
        else:
            raise FormatError(
                path,
                f"history[{index}].role: unknown role {role!r}; expected "
                "system, user, assistant or tool",
            )
    fixed, repairs = repair(messages)
    return finish(Loaded(fixed, "swe-agent", str(path), repairs=repairs, container="object"))


READERS = (
    Reader(
        name="swe-agent",
        title="SWE-agent trajectory (*.traj)",
        shape='{"history": [messages...], "trajectory": [...], "info": {...}}',
        sniff=lambda doc, path: (
            isinstance(doc.value, Mapping) and isinstance(doc.value.get("history"), list)
        ),
        read=read_swe_agent,
        output="openai",
        priority=60,
    ),
)
