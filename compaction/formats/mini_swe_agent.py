"""mini-swe-agent trajectories (``*.traj.json``).

mini-swe-agent talks to the model in plain text: each assistant turn is asked for exactly one
fenced ```bash block, which the environment runs, replying with the output as the next user
message. We make that explicit: the single block of an assistant turn becomes a ``bash`` tool
call (``{"command": ...}``), removed from the text, and the reply becomes its tool result. A turn
with no block or several blocks ran nothing (the environment answered with a format error), so
it stays plain text, and so does the reply. Newer trajectories that already use tool calls are
read as the OpenAI messages they are.

mini-swe-agent 2 (``info.mini_version`` 2.x) adds two things. A run ends with
``{"role": "exit", "content": <submission>, "extra": {"exit_status", "submission"}}``: the
harness's record of how the run ended, never sent to the model, so it is no message; it is
counted in ``Loaded.skipped`` and its exit status kept in ``Loaded.extra["exit"]``. And its
text-based models fence the command in ```` ```mswea_bash_command ````, also in the bare
message lists (a JSON list, no ``info``) some runs save: the fence is found like the 1.x
```` ```bash ```` one (see [`compaction.formats.action_regex`][]), and such a list is read as a
mini-swe-agent trajectory, not as a plain chat.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..adapters import AdapterError
from ..adapters.openai import message_from_openai
from ..messages import Message, ToolCall
from .action_regex import DEFAULT, find_actions
from .detect import Document, is_message
from .errors import FormatError
from .harness import harness_prefixes, synthetic_meta, templates_in
from .loaded import Loaded
from .registry import Reader
from .repair import repair
from .validate_loaded import finish

__all__ = ["ACTION_REGEX", "READERS", "read_mini_swe_agent"]

#: mini-swe-agent's own default ``action_regex``.
ACTION_REGEX: Final = DEFAULT

SOURCE_KEY: Final = "mini_swe_agent"

#: mini-swe-agent's own replies (format error: no or several actions; timeout), used besides
#: the trajectory's own config templates, which older trajectories do not carry. The harness
#: sends them as user messages; they are marked synthetic and never taken for the task.
DEFAULT_HARNESS_TEMPLATES: Final = (
    "Please always provide EXACTLY ONE action in triple backticks, found {{actions|length}} "
    "actions.",
    "The last command <command>{{action['action']}}</command> timed out and has been killed.",
)
_HARNESS_KEYS: Final = re.compile(r"^(format_error|timeout)_template$")
_FENCE: Final = "```mswea_bash_command"


def _flat(content: Any) -> Any:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return content


def _harness(value: Mapping[str, Any]) -> tuple[str, ...]:
    info = value.get("info")
    config = info.get("config") if isinstance(info, Mapping) else None
    own: list[str] = []
    for key in ("agent", "model"):  # 2.x keeps the templates with the model
        holder = config.get(key) if isinstance(config, Mapping) else None
        own += templates_in(holder, _HARNESS_KEYS, depth=1)
    return harness_prefixes((*own, *DEFAULT_HARNESS_TEMPLATES))


def _exit(m: Any) -> bool:
    return isinstance(m, Mapping) and m.get("role") == "exit"


def read_mini_swe_agent(doc: Document, path: str | Path) -> Loaded:
    value = doc.value if isinstance(doc.value, Mapping) else {"messages": doc.value}
    ended = [m for m in value["messages"] if _exit(m)]
    raw = [m for m in value["messages"] if not _exit(m)]
    harness = _harness(value)
    native = any(
        isinstance(m, Mapping) and (m.get("role") == "tool" or m.get("tool_calls")) for m in raw
    )
    # The file's own action_regex is untrusted: it runs bounded, over every turn at once.
    turns = [
        i
        for i, m in enumerate(raw)
        if not native
        and isinstance(m, Mapping)
        and m.get("role") == "assistant"
        and isinstance(_flat(m.get("content")), str)
    ]
    found = find_actions(value, [_flat(raw[i].get("content")) for i in turns], path)
    actions = dict(zip(turns, found, strict=True))
    messages: list[Message] = []
    pending: ToolCall | None = None
    calls = 0
    seen_ids: set[str] = set()
    for index, m in enumerate(raw):
        if not isinstance(m, Mapping) or not isinstance(m.get("content", ""), str | list | None):
            raise FormatError(
                path, f"message {index}: expected an object with 'role' and 'content'"
            )
        extra = m.get("extra")
        source = {"extra": extra} if extra is not None else {}
        msg_id = _response_id(extra, seen_ids)
        if native:
            try:
                base = message_from_openai({k: v for k, v in m.items() if k != "extra"}, index)
                mark = synthetic_meta(base.content, harness) if base.role == "user" else {}
                meta = {**base.meta, SOURCE_KEY: source, **mark}
                messages.append(base.replace(id=msg_id, meta=meta))
            except AdapterError as exc:
                raise FormatError(path, str(exc)) from None
            continue
        role, content = m.get("role"), m.get("content") or ""
        content = _flat(content)
        if role not in ("system", "user", "assistant"):
            raise FormatError(
                path, f"message {index}: unknown role {role!r}; expected system, user or assistant"
            )
        if role == "user" and pending is not None:
            messages.append(
                Message(
                    "tool",
                    content,
                    tool_call_id=pending.id,
                    name="bash",
                    meta={SOURCE_KEY: source, **synthetic_meta(content, harness)},
                    id=msg_id,
                )
            )
            pending = None
            continue
        if role == "assistant":
            action = actions.get(index)
            if action is not None:
                calls += 1
                text = (content[: action.start] + content[action.end :]).strip()
                pending = ToolCall(
                    f"call_{calls}",
                    "bash",
                    json.dumps({"command": action.command}, ensure_ascii=False),
                )
                messages.append(
                    Message(
                        "assistant",
                        text,
                        tool_calls=(pending,),
                        meta={SOURCE_KEY: {**source, "content": content}},
                        id=msg_id,
                    )
                )
                continue
            pending = None
        synthetic = synthetic_meta(content, harness) if role == "user" else {}
        messages.append(Message(role, content, meta={SOURCE_KEY: source, **synthetic}, id=msg_id))
    fixed, repairs = repair(messages)
    kept: dict[str, Any] = {}
    if ended:
        last = ended[-1].get("extra")
        status = last.get("exit_status") if isinstance(last, Mapping) else None
        kept["exit"] = {"exit_status": status, "messages": len(ended)}
    container = "object" if isinstance(doc.value, Mapping) else "list"
    skipped = {"exit": len(ended)} if ended else {}
    return finish(
        Loaded(
            fixed,
            "mini-swe-agent",
            str(path),
            repairs=repairs,
            skipped=skipped,
            container=container,
            extra=kept,
        )
    )


def _response_id(extra: Any, seen: set[str]) -> str | None:
    """The provider's response id of an assistant turn, when present and not reused."""
    response = extra.get("response") if isinstance(extra, Mapping) else None
    rid = response.get("id") if isinstance(response, Mapping) else None
    if not isinstance(rid, str) or not rid or rid in seen:
        return None
    seen.add(rid)
    return rid


def _bare(value: Any) -> bool:
    """A bare list of mini-swe-agent 2 messages: chat messages whose assistant turns use its
    own command fence (no other agent writes ```` ```mswea_bash_command ````)."""
    if not isinstance(value, list) or not value or not all(is_message(m) for m in value):
        return False
    return any(
        m.get("role") == "assistant"
        and isinstance(m.get("content"), str)
        and _FENCE in m["content"]
        for m in value
    )


def _sniff(doc: Document, path: str) -> bool:
    value = doc.value
    if _bare(value):
        return True
    if not isinstance(value, Mapping) or not isinstance(value.get("messages"), list):
        return False
    info = value.get("info")
    fmt = value.get("trajectory_format")
    return (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
        isinstance(info, Mapping) and "mini_version" in info
    )


READERS = (
    Reader(
        name="mini-swe-agent",
        title="mini-swe-agent trajectory (*.traj.json, 1.x and 2.x; 2.x bare message lists)",
        shape='{"messages": [...], "info": {"mini_version": ...}}, or a list of messages '
        "fencing commands in ```mswea_bash_command",
        sniff=_sniff,
        read=read_mini_swe_agent,
        output="openai",
        priority=55,
    ),
)
