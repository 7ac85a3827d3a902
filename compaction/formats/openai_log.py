"""OpenAI-style exports of agent sessions (``trajectory.json``): chat messages, read as a log.

Several harnesses save a run as the OpenAI chat messages it exchanged (a JSON list, or
``{"messages": [...]}`` with the run's metadata beside it). Such a file is a record of a run,
not a request, and holds what a request may not: parallel calls written as consecutive
assistant messages with one call each, a ``system`` message in the middle (where the agent
compacted or was re-instructed), calls the run never answered. The strict ``openai`` reader
refuses those; this one reads them as a log ([`compaction.formats.logs.as_log`][]): the split
calls merged back, the mid-run system message kept as a marked boundary, the unanswered calls
given the visible "no result recorded" result, each change listed in ``Loaded.repairs``.

Detection takes a file for an export when its name says so (``trajectory.json``,
``*.trajectory.json``) and its content is OpenAI chat messages; any other chat file can be read
this way with ``--format openai-log``. Per-message ``timestamp``/``created``, ``model`` and
``usage`` (OpenAI's ``prompt_tokens``, ``prompt_tokens_details.cached_tokens``,
``completion_tokens``), when an export records them, are kept as the recorded call.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..adapters import AdapterError
from ..adapters.openai import from_openai
from ..messages import Message
from .detect import Document, is_message
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, as_log, recorded
from .registry import Reader
from .validate_loaded import finish

__all__ = ["READERS", "read_openai_log"]

_NAMES: Final = ("trajectory.json",)


def _raw(doc: Document) -> tuple[list[Any], str, dict[str, Any]] | None:
    value = doc.value
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        return value, "list", {}
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        messages = value["messages"]
        if messages and all(is_message(m) for m in messages):
            return messages, "object", {k: v for k, v in value.items() if k != "messages"}
    return None


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _recorded(raw: Mapping[str, Any]) -> dict[str, Any]:
    stamp = raw.get("timestamp", raw.get("created"))
    if not isinstance(stamp, str | int | float) or isinstance(stamp, bool):
        stamp = None
    model = raw.get("model") if isinstance(raw.get("model"), str) else None
    usage = raw.get("usage")
    counts: dict[str, Any] = {}
    if isinstance(usage, Mapping) and _number(usage.get("prompt_tokens")) is not None:
        prompt = usage["prompt_tokens"]
        details = usage.get("prompt_tokens_details")
        cached = _number(details.get("cached_tokens")) if isinstance(details, Mapping) else None
        cached = min(cached or 0, prompt)
        counts = {
            "cache_read": cached,
            "uncached": prompt - cached,
            "output": _number(usage.get("completion_tokens")) or 0,
        }
    return recorded(timestamp=stamp, model=model, **counts)


def read_openai_log(doc: Document, path: str) -> Loaded:
    found = _raw(doc)
    if found is None:
        raise FormatError(path, 'expected a JSON list of chat messages or {"messages": [...]}')
    raw, container, extra = found
    try:
        converted = from_openai(raw)
    except AdapterError as exc:
        raise FormatError(path, str(exc)) from None
    messages: list[Message] = []
    for one, m in zip(raw, converted, strict=True):
        seen = _recorded(one) if m.role == "assistant" else {}
        messages.append(m.replace(meta={**m.meta, RECORDED_KEY: seen}) if seen else m)
    fixed, repairs = as_log(messages)
    return finish(
        Loaded(fixed, "openai-log", path, repairs=repairs, container=container, extra=extra)
    )


def _sniff(doc: Document, path: str) -> bool:
    name = Path(path).name
    return (name in _NAMES or name.endswith(".trajectory.json")) and _raw(doc) is not None


READERS = (
    Reader(
        name="openai-log",
        title="OpenAI-style export of an agent session (trajectory.json), read as a log",
        shape='a JSON list of OpenAI chat messages, or {"messages": [...]}, named trajectory.json',
        sniff=_sniff,
        read=read_openai_log,
        output="openai",
        priority=40,
    ),
)
