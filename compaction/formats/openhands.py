"""OpenHands trajectories: event lists, and evaluation ``output.jsonl`` records with ``history``.

An OpenHands run is a list of events, each an **action** (``"action": "run" | "edit" |
"message" | "finish" | …``) or an **observation** (``"observation": "run" | …``, with
``cause`` naming the action). The same list is a saved trajectory (``[{…}, …]``), the
``history`` of an evaluation or resolver record (``{"instance_id"/"issue", "instruction",
"history": […], "metrics"}``, one per line of ``output.jsonl``), or, in old records, a list of
``[action, observation]`` pairs. The conversation is rebuilt the way OpenHands builds the
model's messages from it:

- An agent action carrying ``tool_call_metadata`` came from a model response:
  ``model_response.choices[0].message`` is that response (its text and *all* its tool calls,
  so parallel calls stay on one message), ``model_response.usage`` and ``model`` its bill. The
  other actions of the same response add nothing. An observation with ``tool_call_metadata``
  is the result of the call it names.
- Older events have no ``tool_call_metadata``: an agent action becomes an assistant message
  (its ``thought``) with one call named after the action (``run``, ``run_ipython``…, its
  arguments the action's own fields), answered by the next observation.
- ``message`` actions are the person's (``source: user``) or the agent's words; ``system``
  is the system prompt; ``finish`` without a call is the agent's last words. A
  ``condensation`` with a summary is OpenHands' own compaction: kept where it happened, marked
  as a summary. An observation that answers no call (a recall of workspace context, an error
  the runtime reported) is environment text, marked synthetic; state changes and null
  observations are skipped and counted.

Several records in one ``output.jsonl`` (several instances) are read one run after another;
each run's first message names its instance (``meta["openhands"]["run"]``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from ._agent_log import args_text, as_text, count, done, head, iso_time, text_id
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, native_compaction, recorded
from .registry import Reader

__all__ = ["FORMAT", "READERS", "read_openhands", "sniff_openhands"]

FORMAT: Final = "openhands"
SOURCE_KEY: Final = "openhands"

_SKIPPED_OBSERVATIONS: Final = frozenset({"agent_state_changed", "null", "change_agent_state"})
_NOISE: Final = frozenset(
    {
        "thought",
        "keep_prompt",
        "is_confirmed",
        "action_risk",
        "security_risk",
        "confirmation_state",
        "impl_source",
        "kernel_init_code",
        "hidden",
        "blocking",
        "is_input",
        "wait_for_response",
    }
)


def _is_event(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and "role" not in value
        and (isinstance(value.get("action"), str) or isinstance(value.get("observation"), str))
    )


def _is_history(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    first = value[0]
    if isinstance(first, list):  # [action, observation] pairs
        return bool(first) and _is_event(first[0])
    return _is_event(first)


def sniff_openhands(doc: Document, path: str | Path = "") -> bool:
    """OpenHands events (a list of ``action``/``observation`` objects), or records holding
    them as ``history``."""
    if doc.records is None and isinstance(doc.value, list):
        return _is_history(doc.value)
    return any(isinstance(r, Mapping) and _is_history(r.get("history")) for r in head(doc))


def _events(history: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for item in history:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    return out


def _usage(response: Mapping[str, Any]) -> dict[str, int]:
    usage = response.get("usage")
    if not isinstance(usage, Mapping) or "prompt_tokens" not in usage:
        return {}
    prompt = count(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    read = count(usage.get("cache_read_input_tokens")) or cached
    write = count(usage.get("cache_creation_input_tokens"))
    return dict(
        uncached=max(prompt - read - write, 0),
        cache_read=min(read, prompt),
        cache_write=min(write, max(prompt - read, 0)),
        output=count(usage.get("completion_tokens")),
    )


class _Run:
    """The messages of one run being rebuilt."""

    def __init__(self, path: str | Path, skipped: Counter[str], prefix: str) -> None:
        self.path = path
        self.prefix = prefix
        self.skipped = skipped
        self.messages: list[Message] = []
        self.responses: set[str] = set()
        self.pending: ToolCall | None = None
        self.since_summary: list[Message] = []
        self.calls = 0

    def add(self, message: Message) -> None:
        self.messages.append(message)
        self.since_summary.append(message)

    def source(self, event: Mapping[str, Any], **more: Any) -> dict[str, Any]:
        out: dict[str, Any] = {} if event.get("id") is None else {"event": event.get("id")}
        stamp = iso_time(event.get("timestamp"))
        if stamp is not None:
            out["timestamp"] = stamp
        out.update({k: v for k, v in more.items() if v is not None})
        return out

    def from_response(self, event: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
        response = meta.get("model_response")
        response = response if isinstance(response, Mapping) else {}
        rid = text_id(response.get("id"))
        if rid is not None and rid in self.responses:
            return  # another action of a response already read
        if rid is not None:
            self.responses.add(rid)
        choices = response.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else {}
        message = choice.get("message") if isinstance(choice, Mapping) else None
        calls: list[ToolCall] = []
        text = ""
        if isinstance(message, Mapping):
            text = as_text(message.get("content"))
            for index, raw in enumerate(message.get("tool_calls") or ()):
                fn = raw.get("function") if isinstance(raw, Mapping) else None
                fn = fn if isinstance(fn, Mapping) else {}
                cid = text_id(raw.get("id")) if isinstance(raw, Mapping) else None
                calls.append(
                    ToolCall(
                        cid or f"{rid}-{index}",
                        text_id(fn.get("name")) or "tool",
                        args_text(fn.get("arguments")),
                    )
                )
        own = text_id(meta.get("tool_call_id"))
        if own is not None and own not in {c.id for c in calls}:
            args = {k: v for k, v in _args(event).items() if k not in _NOISE}
            name = text_id(meta.get("function_name")) or str(event.get("action"))
            calls.append(ToolCall(own, name, args_text(args)))
        if not text:
            text = as_text(_args(event).get("thought"))
        created = response.get("created")
        src = self.source(
            event,
            model=response.get("model"),
            response_id=rid,
            created=created,
        )
        if "timestamp" not in src and iso_time(created) is not None:
            src["timestamp"] = iso_time(created)
        bill = recorded(timestamp=src.get("timestamp"), model=src.get("model"), **_usage(response))
        if "usage" in bill:
            bill["raw_usage"] = response.get("usage")
        meta = {SOURCE_KEY: src, RECORDED_KEY: bill}
        self.add(Message("assistant", text, tool_calls=tuple(calls), id=rid, meta=meta))

    def action(self, event: Mapping[str, Any]) -> None:
        kind = event["action"]
        args = _args(event)
        self.pending = None
        if kind == "system":  # after the start, the log rules (as_log) make it a boundary
            text = as_text(args.get("content")) or as_text(event.get("message"))
            self.add(Message("system", text, meta={SOURCE_KEY: self.source(event)}))
            return
        if kind == "message":
            # Old events have no source: the agent's own messages wait for the person's reply.
            agent = event.get("source") == "agent" or (
                "source" not in event and args.get("wait_for_response") is True
            )
            text = as_text(args.get("content")) or as_text(event.get("message"))
            role = "assistant" if agent else "user"
            self.add(Message(role, text, meta={SOURCE_KEY: self.source(event)}))
            return
        meta = event.get("tool_call_metadata")
        if isinstance(meta, Mapping):
            self.from_response(event, meta)
            return
        if kind == "condensation":
            summary = as_text(args.get("summary"))
            if summary:
                note = Message("user", summary, meta={SOURCE_KEY: self.source(event)})
                self.messages.append(
                    native_compaction(note, agent="openhands", replaces=self.since_summary)
                )
                self.since_summary = []
            else:
                self.skipped["condensation"] += 1
            return
        thought = as_text(args.get("thought")) or as_text(event.get("message"))
        if kind in ("finish", "reject") or event.get("source") == "user":
            text = thought or as_text(args.get("final_thought")) or args_text(args.get("outputs"))
            if event.get("source") == "user":
                self.skipped[f"user action {kind}"] += 1
                return
            self.add(Message("assistant", text, meta={SOURCE_KEY: self.source(event)}))
            return
        self.calls += 1
        call = ToolCall(
            f"{self.prefix}{self.calls}",
            str(kind),
            args_text({k: v for k, v in args.items() if k not in _NOISE}),
        )
        self.pending = call
        self.add(
            Message("assistant", thought, tool_calls=(call,), meta={SOURCE_KEY: self.source(event)})
        )

    def observation(self, event: Mapping[str, Any]) -> None:
        kind = event["observation"]
        text = as_text(event.get("content"))
        if not text and isinstance(event.get("message"), str):
            text = event["message"]
        meta = event.get("tool_call_metadata")
        cid = text_id(meta.get("tool_call_id")) if isinstance(meta, Mapping) else None
        if cid is None and self.pending is not None:
            cid = self.pending.id
        self.pending = None
        src = self.source(event, observation=kind, cause=event.get("cause"))
        if cid is not None:
            name = text_id(meta.get("function_name")) if isinstance(meta, Mapping) else None
            self.add(
                Message(
                    "tool", text, tool_call_id=cid, name=name or str(kind), meta={SOURCE_KEY: src}
                )
            )
            return
        if kind in _SKIPPED_OBSERVATIONS or not text.strip():
            self.skipped[f"{kind} observation"] += 1
            return
        self.add(
            Message(
                "user", f"[{kind} observation]\n{text}", meta={SOURCE_KEY: src, SYNTHETIC_KEY: True}
            )
        )


def _args(event: Mapping[str, Any]) -> Mapping[str, Any]:
    args = event.get("args")
    if isinstance(args, Mapping):
        return args
    return {k: v for k, v in event.items() if k not in ("action", "id", "timestamp", "source")}


def _run_name(record: Mapping[str, Any], line: int) -> str | int:
    """The instance a record ran: its ``instance_id``, or ``owner/repo#number`` of its issue."""
    name = record.get("instance_id")
    if isinstance(name, str | int) and not isinstance(name, bool):
        return name
    issue = record.get("issue")
    if isinstance(issue, Mapping) and {"owner", "repo", "number"} <= issue.keys():
        return f"{issue['owner']}/{issue['repo']}#{issue['number']}"
    return line


def _runs(doc: Document, path: str | Path) -> list[tuple[int, Mapping[str, Any], list[Any]]]:
    if doc.records is None and isinstance(doc.value, list):
        return [(1, {}, _events(doc.value))]
    runs = []
    for line, record in doc.records if doc.records is not None else ((None, doc.value),):
        history = record.get("history") if isinstance(record, Mapping) else None
        if not isinstance(history, list):
            raise FormatError(path, "an OpenHands record without a 'history' list", line=line)
        runs.append((line or 1, record, _events(history)))
    return runs


def read_openhands(doc: Document, path: str | Path) -> Loaded:
    """Read an OpenHands trajectory or evaluation output (see the module docstring)."""
    skipped: Counter[str] = Counter()
    messages: list[Message] = []
    runs = _runs(doc, path)
    events = 0
    for number, (line, record, history) in enumerate(runs, 1):
        run = _Run(path, skipped, f"openhands-{number}-" if len(runs) > 1 else "openhands-")
        for index, event in enumerate(history):
            if not isinstance(event, Mapping):
                raise FormatError(path, f"history[{index}]: expected an event object", line=line)
            if isinstance(event.get("action"), str):
                run.action(event)
            elif isinstance(event.get("observation"), str):
                run.observation(event)
            else:
                raise FormatError(
                    path, f"history[{index}]: neither an 'action' nor an 'observation'", line=line
                )
        events += len(history)
        if run.messages and record:
            first = run.messages[0]
            source = {**first.meta.get(SOURCE_KEY, {}), "run": _run_name(record, line)}
            if isinstance(record.get("metrics"), dict):
                source["metrics"] = record["metrics"]
            run.messages[0] = first.with_meta(**{SOURCE_KEY: source})
        messages.extend(run.messages)
    container = "jsonl" if doc.records is not None else "list"
    return done(messages, FORMAT, path, skipped=skipped, container=container)


READERS = (
    Reader(
        name=FORMAT,
        title="OpenHands trajectory or evaluation output (output.jsonl records with 'history')",
        shape='a list of {"action"|"observation", ...} events, or {"instruction", "history": '
        "[events], ...} records",
        sniff=sniff_openhands,
        read=read_openhands,
        output="openai",
        priority=35,
    ),
)
