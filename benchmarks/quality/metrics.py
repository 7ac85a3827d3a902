"""What a compaction kept, judged from the outside: small pure functions over messages.

Each takes the original conversation and/or what a ladder answered and returns plain numbers or
sets, so ``tests/test_benchmarks_smoke.py`` can check each one on hand-made conversations. None
of them asks the library how it judges itself: the task is found by the rule the issue states
(the first user message a person wrote), lost content by comparing messages, identifiers with
:mod:`benchmarks.quality.identifiers`, and provenance is read straight from ``meta["compaction"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from compaction.check.task import HEAD_TAIL_CHARS, original_task, task_kept
from compaction.messages import Message

from .identifiers import KINDS, Identifiers, arguments_text, call_paths, identifiers, vocabulary

__all__ = [
    "HEAD_TAIL_CHARS",
    "Retention",
    "dropped_call_paths",
    "lost",
    "message_key",
    "message_text",
    "new_notes",
    "per_message_identifiers",
    "original_task",
    "prefix_tokens",
    "retention",
    "system_tokens",
    "task_kept",
]

_STAND_IN: Final = frozenset({"note", "summary"})


def message_key(message: Message) -> Hashable:
    """What makes two messages the same for the model: role, text, tool calls and the id a
    result answers (``meta`` is not sent, so it does not count)."""
    return (
        message.role,
        message.content,
        message.tool_call_id,
        tuple((c.id, c.name, c.arguments) for c in message.tool_calls),
    )


def message_text(message: Message) -> str:
    """All the text the model sees of ``message``: content, then each tool call's name and
    the string values of its arguments."""
    if not message.tool_calls:
        return message.content
    parts = [message.content]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(arguments_text(call.arguments))
    return "\n".join(parts)


def _provenance(message: Message) -> Mapping[str, Any] | None:
    record = message.meta.get("compaction")
    return record if isinstance(record, Mapping) else None


def lost(original: Sequence[Message], result: Sequence[Message]) -> list[bool]:
    """Per original message: True when no message of ``result`` is the same (dropped, or
    rewritten: a placeholder, a cut, a summary in its place)."""
    kept = {message_key(m) for m in result}
    return [message_key(m) not in kept for m in original]


def system_tokens(messages: Sequence[Message], count: Callable[[Message], int]) -> int:
    """Tokens of the leading system block."""
    total = 0
    for m in messages:
        if m.role != "system":
            break
        total += count(m)
    return total


@attrs.frozen
class Retention:
    """Identifier counts of one compaction, by kind (``paths``, ``functions``, ``errors``).

    - ``lost``: identifiers that occur in lost content (wherever else they occur);
    - ``lost_kept``: those of them the result still names;
    - ``only_lost``: identifiers that occur in lost content and in no message kept as is;
    - ``only_lost_kept``: those of them the result names anyway (in a note, a summary, a
      placeholder or a cut).
    """

    lost: dict[str, int]
    lost_kept: dict[str, int]
    only_lost: dict[str, int]
    only_lost_kept: dict[str, int]


def retention(
    per_message: Sequence[Identifiers], was_lost: Sequence[bool], result_text: str
) -> Retention:
    """Identifier retention. ``per_message``: the identifiers of each original message (see
    :func:`benchmarks.quality.identifiers.identifiers`);
    ``was_lost``: :func:`lost`; ``result_text``:
    all the text of the result."""
    in_lost = Identifiers()
    in_kept = Identifiers()
    for ids, dropped in zip(per_message, was_lost, strict=True):
        if dropped:
            in_lost = in_lost | ids
        else:
            in_kept = in_kept | ids
    vocab = vocabulary(result_text)
    out: dict[str, dict[str, int]] = {k: {} for k in ("lost", "lost_kept", "only", "only_kept")}
    for kind in KINDS:
        gone = in_lost.of(kind)
        only = gone - in_kept.of(kind)
        out["lost"][kind] = len(gone)
        out["lost_kept"][kind] = sum(1 for x in gone if x in vocab)
        out["only"][kind] = len(only)
        out["only_kept"][kind] = sum(1 for x in only if x in vocab)
    return Retention(out["lost"], out["lost_kept"], out["only"], out["only_kept"])


def dropped_call_paths(original: Sequence[Message], result: Sequence[Message]) -> tuple[int, int]:
    """(paths named in the arguments of tool calls the result no longer has, how many of them
    the result still names). A call is gone when no message of the result has a call with its
    id and arguments."""
    kept_calls = {(c.id, c.arguments) for m in result for c in m.tool_calls}
    named: set[str] = set()
    for m in original:
        for c in m.tool_calls:
            if (c.id, c.arguments) not in kept_calls:
                named |= call_paths(c.arguments)
    if not named:
        return 0, 0
    vocab = vocabulary("\n".join(message_text(m) for m in result))
    return len(named), sum(1 for p in named if p in vocab)


def new_notes(original: Iterable[Message], result: Sequence[Message]) -> list[Message]:
    """The notes a compaction wrote: messages of ``result`` whose ``meta["compaction"]`` marks
    them as a note or summary standing in for dropped messages, and that were not already in
    the input (a transcript can hold notes of an earlier compaction)."""
    before = {message_key(m) for m in original}
    out = []
    for m in result:
        record = _provenance(m)
        if record is not None and record.get("kind") in _STAND_IN and message_key(m) not in before:
            out.append(m)
    return out


def prefix_tokens(
    previous: Sequence[Message], current: Sequence[Message], count: Callable[[Message], int]
) -> int:
    """Tokens at the start of ``current`` that repeat the start of ``previous`` message for
    message: what a provider's prompt cache could serve."""
    total = 0
    for a, b in zip(previous, current, strict=False):
        if a is not b and message_key(a) != message_key(b):
            break
        total += count(b)
    return total


def per_message_identifiers(messages: Sequence[Message]) -> list[Identifiers]:
    """:func:`benchmarks.quality.identifiers.identifiers` of every message's text (computed once per
    conversation, shared by every ladder and target)."""
    return [identifiers(message_text(m)) for m in messages]
