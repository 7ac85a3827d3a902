"""Which facts of a run a request lets the model recover.

A fact is recovered when one of its literal forms appears in the text the model reads of the
request: each message's content and its tool calls' arguments (the JSON text as sent, and
every string inside it decoded, so an escaped character does not hide a value). ``meta`` is
never read: the model does not see it. The system prompt is left out: the harness wrote it
before the run, so a fact found only there (``submit`` named in the instructions) was not
recovered from the run.

Only the facts the uncompacted run itself lets the model recover are asked
([LogFacts.asked][compaction.check.probe.LogFacts]); the others (a path the log names in a
form no message shows) are reported apart, so a loss is always a loss of compaction.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..messages import Message
from .facts import Fact, facts
from .logs import read_log

__all__ = ["LogFacts", "log_facts", "recovered", "run_text", "visible_text"]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def visible_text(messages: Sequence[Message]) -> str:
    """Everything the model reads of ``messages``, in order, one part per line."""
    parts: list[str] = []
    for message in messages:
        parts.append(message.content)
        for call in message.tool_calls:
            parts.append(call.arguments)
            with contextlib.suppress(ValueError):
                parts.extend(_strings(json.loads(call.arguments)))
    return "\n".join(parts)


def run_text(messages: Sequence[Message]) -> str:
    """The visible text of every message but the system prompt."""
    return visible_text([m for m in messages if m.role != "system"])


@attrs.frozen
class LogFacts:
    """A log's facts, split by whether its own messages show them: ``asked`` (recoverable
    before any compaction) and ``absent``; ``format`` the log's format."""

    format: str
    asked: tuple[Fact, ...]
    absent: tuple[Fact, ...]


def log_facts(path: Path, messages: Sequence[Message]) -> LogFacts:
    """The facts of the raw log at ``path`` ([`compaction.check.logs.read_log`][], which
    raises [`UnreadableLog`][compaction.check.logs.UnreadableLog]), split against ``messages``, the
    run as read for compaction."""
    log = read_log(path)
    original = run_text(messages)
    asked: list[Fact] = []
    absent: list[Fact] = []
    for fact in facts(log):
        (asked if fact.recovered(original) else absent).append(fact)
    return LogFacts(log.format, tuple(asked), tuple(absent))


def recovered(wanted: Sequence[Fact], request: Sequence[Message]) -> list[bool]:
    """Per fact of ``wanted``, whether ``request`` lets the model recover it."""
    text = run_text(request)
    return [fact.recovered(text) for fact in wanted]
