"""A summariser with no model: it extracts, it does not write.

[`ExtractiveSummarizer`][] reads the rendered transcript (see
[`render_transcript`][compaction.summarizers.base.render_transcript]) and fills the fixed
sections from the text itself: the user's request, decision-like sentences, which tools ran how
often, every identifier copied exactly, and the last state reached. It is offline, deterministic
and free, which is why it is the embedded default: the whole ladder works with no API key.

Every section is capped so the summary is much smaller than what it replaces, except file
paths and URLs: those are what an agent needs to find its way back, so every one is kept
(once). Earlier summaries in the transcript are parsed back into their sections and merged,
so combining summaries loses no path either.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Final

import attrs

from ..memory.facts import error_names
from ..memory.words import statements
from ..messages import Message

# The identifier scans, and the patterns that define what they find (kept importable here).
from ._scans import (  # noqa: F401
    _ERROR,
    _ISSUE,
    _LEAD,
    _LETTER,
    _SHA,
    _TOKEN,
    _TRAIL,
    _UUID,
    _error_lines,
    _issues,
    _shas,
    _uuids,
    extract_paths,
)
from .base import SECTIONS, STAND_IN_LABEL, transcript_blocks

__all__ = ["ExtractiveSummarizer", "extract_paths"]

_HEADER = re.compile(r"^--- (.+) ---$", re.MULTILINE)
_CALL = re.compile(r"^tool call: (.+) \(([^()]*)\)$")
_RESULT = re.compile(r"^tool result: (.+) \(([^()]*)\)$")

_DECISION = re.compile(
    r"\b(decid\w*|instead|because|plan|approach|should|I'll|I will|let's|going to|need to|"
    r"the fix|the issue|root cause)\b",
    re.IGNORECASE,
)
#: A line an exception printed: its class name first, then a colon.
_RAISED = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b:")
_COMMAND_KEYS: Final = ("command", "cmd", "script")

_NONE = "- none"


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _newest(items: list[str], limit: int) -> list[str]:
    """The newest ``limit`` distinct items, oldest first."""
    seen: dict[str, None] = {}
    for item in reversed(items):
        if item and item not in seen:
            seen[item] = None
            if len(seen) == limit:
                break
    return list(reversed(seen))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


@attrs.define
class _Digest:
    """What a stretch of conversation boils down to, mergeable with an earlier digest."""

    objective: str = ""
    decisions: list[str] = attrs.field(factory=list)
    messages: int = 0
    tools: Counter[str] = attrs.field(factory=Counter)
    steps: list[str] = attrs.field(factory=list)
    paths: list[str] = attrs.field(factory=list)
    urls: list[str] = attrs.field(factory=list)
    commands: list[str] = attrs.field(factory=list)
    ids: list[str] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    outstanding: list[str] = attrs.field(factory=list)

    def take_identifiers(self, text: str, *, tool: bool = False) -> None:
        for token in extract_paths(text):
            (self.urls if "://" in token else self.paths).append(token)
        self.ids.extend(_uuids(text))
        self.ids.extend(_shas(text))
        self.ids.extend(_issues(text))
        if tool:
            # Tool output is data a page or a file controls: only what an exception printed
            # ("ValueError: bad tab at line 3") is copied, in quotes, as data; any other line
            # gives only its error names (a user-role summary must not carry a fetched page's
            # "error: the user approved ..." or "next step: ..." as if it were ours).
            quoted = [
                f'"{_cut(line, 200)}"' for line in _error_lines(text) if _RAISED.match(line.strip())
            ]
            self.errors.extend(quoted or error_names(text))
            return
        # a line's ending is whitespace: cut (which strips) drops it
        self.errors.extend(_cut(line, 200) for line in _error_lines(text))


class ExtractiveSummarizer:
    """Offline, deterministic summariser: sections filled by extraction, no model call.

    Options cap the sections that could grow without bound (paths and URLs are never capped):
    ``max_objective`` characters of the request, ``max_items`` entries per list (decisions,
    steps, commands, ids, errors; the newest are kept), ``max_line`` characters per entry.
    """

    name = "extractive"
    #: Read by ``Summary.capabilities`` (and ``compaction strategies``): no model, same answer.
    model_call = False
    deterministic = True

    def __init__(self, *, max_objective: int = 600, max_items: int = 8, max_line: int = 200):
        for field, value in (
            ("max_objective", max_objective),
            ("max_items", max_items),
            ("max_line", max_line),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    f"ExtractiveSummarizer {field} must be a positive int, got {value!r}"
                )
        self.max_objective = max_objective
        self.max_items = max_items
        self.max_line = max_line

    def __repr__(self) -> str:
        return (
            f"ExtractiveSummarizer(max_objective={self.max_objective}, "
            f"max_items={self.max_items}, max_line={self.max_line})"
        )

    def __call__(self, transcript: str, instructions: str = "") -> str:
        """Summarise ``transcript`` (``instructions`` are for models; extraction ignores them)."""
        return self._render(self._digest(_blocks(transcript)))

    def summarize_messages(self, messages: Iterable[Message], instructions: str = "") -> str:
        """What ``self(render_transcript(messages))`` answers, read a block at a time
        ([`transcript_blocks`][compaction.summarizers.base.transcript_blocks]): the
        [`Summary`][compaction.strategies.summary.Summary] strategy calls this when it is
        there, so a stretch of a long session is never rendered whole."""
        return self._render(self._digest(transcript_blocks(messages)))

    # -- reading -----------------------------------------------------------------------------

    def _digest(self, blocks: Iterable[tuple[str, str]]) -> _Digest:
        d = _Digest()
        last_assistant = ""
        last_result = ""
        for label, body in blocks:
            stand_in = STAND_IN_LABEL.match(label)
            # The label says how many messages a summary or note stands for: counted as that
            # many, so this summary's count agrees with the header the Summary strategy writes.
            stood = int(stand_in.group(2)) if stand_in and stand_in.group(2) else None
            if stand_in and stand_in.group(1) == "summary of":
                older = _parse_summary(body)
                older.messages = stood if stood is not None else max(older.messages, 1)
                _merge(d, older)
                continue
            if stand_in:
                d.messages += stood or 1
            elif not _CALL.match(label):  # a call is part of the assistant message before it
                d.messages += 1
            d.take_identifiers(body, tool=_RESULT.match(label) is not None)
            if label == "user":
                if not d.objective:
                    # What the person asked for, in their own sentences (those the ledger
                    # carries: instructions, values, goals); filler ("let us keep going") is
                    # never an objective.
                    said = statements(body)
                    if said:
                        d.objective = _cut(" ".join(s.text for s in said), self.max_objective)
            elif label == "assistant":
                if body.strip():  # a message that is only tool calls says nothing itself
                    last_assistant = body
                if body.strip():
                    d.steps.append(_cut(_first_line(body), self.max_line))
                for line in body.splitlines():
                    if _DECISION.search(line) and len(line.strip()) > 8:
                        d.decisions.append(_cut(line, self.max_line))
            elif (call := _CALL.match(label)) is not None:
                d.tools[call.group(1)] += 1
                for line in body.splitlines():
                    key, _, value = line.partition(": ")
                    if key in _COMMAND_KEYS and value.strip():
                        command = value.strip()
                        if len(command) <= self.max_line:
                            d.commands.append(command)
            elif (result := _RESULT.match(label)) is not None:
                last_result = result.group(1)
            else:  # a note on dropped messages, or a stray system message
                d.steps.append(_cut(_first_line(body), self.max_line))
        state = []
        if last_assistant.strip():
            state.append("Last assistant message: " + _cut(last_assistant, self.max_line))
        if last_result:
            # Which tool answered last, by name: never its text (tool output is quoted data,
            # and this section says what to do next).
            state.append("Last tool result: from " + _cut(last_result, self.max_line))
        if state:
            d.outstanding = state
        return d

    # -- writing -----------------------------------------------------------------------------

    def _render(self, d: _Digest) -> str:
        n = self.max_items

        def bullets(items: list[str]) -> list[str]:
            return [f"- {i}" for i in items] or [_NONE]

        tools = ", ".join(
            f"{name} ({count})"
            for name, count in sorted(d.tools.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        work = [f"- Messages summarised: {d.messages}"]
        if tools:
            work.append(f"- Tools run: {tools}")
        decided = set(d.decisions)
        work += [f"- Step: {s}" for s in _newest([s for s in d.steps if s not in decided], n)]
        ids = []
        for title, items in (
            ("Paths", _unique(d.paths)),
            ("URLs", _unique(d.urls)),
            ("Commands", _newest(d.commands, n)),
            ("IDs", _newest(d.ids, n)),
            ("Errors", _newest(d.errors, n)),
        ):
            if items:
                ids.append(f"{title}:")
                ids.extend(f"- {i}" for i in items)
        sections = {
            "Objective": [d.objective or "(not stated in this part of the conversation)"],
            "Decisions": bullets(_newest(d.decisions, n)),
            "Work done": work,
            "Identifiers": ids or [_NONE],
            "Outstanding": d.outstanding or [_NONE],
        }
        out = []
        for title in SECTIONS:
            out.append(f"## {title}")
            out.extend(sections[title])
        return "\n".join(out)


# -- parsing the rendered transcript and earlier summaries -------------------------------------


def _blocks(transcript: str) -> list[tuple[str, str]]:
    """``(label, body)`` for each rendered message; text before the first header is a user
    block (a caller that passed bare text still gets an objective)."""
    out: list[tuple[str, str]] = []
    matches = list(_HEADER.finditer(transcript))
    lead = transcript[: matches[0].start()] if matches else transcript
    if lead.strip():
        out.append(("user", lead.strip("\n")))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(transcript)
        out.append((match.group(1), transcript[match.end() : end].strip("\n")))
    return out


_SECTION = re.compile(r"^## (.+)$", re.MULTILINE)
_TOOL_COUNT = re.compile(r"(\S+) \((\d+)\)")
_SUBSECTIONS: Final = {
    "Paths:": "paths",
    "URLs:": "urls",
    "Commands:": "commands",
    "IDs:": "ids",
    "Errors:": "errors",
}


def _parse_summary(text: str) -> _Digest:
    """Read an earlier summary back into its parts (ours exactly; any other text loosely)."""
    d = _Digest()
    found = {m.group(1).strip(): m for m in _SECTION.finditer(text)}
    if "Objective" not in found:
        # Not one of ours (a model wrote it): keep its identifiers and its gist.
        d.take_identifiers(text)
        d.steps.append(_cut(_first_line(text), 200))
        return d
    bounds = sorted(found.values(), key=lambda m: m.start())
    parts = {}
    for i, m in enumerate(bounds):
        end = bounds[i + 1].start() if i + 1 < len(bounds) else len(text)
        parts[m.group(1).strip()] = text[m.end() : end].strip("\n").splitlines()

    def items(lines: list[str]) -> list[str]:
        return [line[2:] for line in lines if line.startswith("- ") and line != _NONE]

    objective = "\n".join(parts.get("Objective", [])).strip()
    if not objective.startswith("(not stated"):
        d.objective = objective
    d.decisions = items(parts.get("Decisions", []))
    for line in parts.get("Work done", []):
        if line.startswith("- Messages summarised: "):
            d.messages += int(line.rsplit(" ", 1)[1]) if line.rsplit(" ", 1)[1].isdigit() else 0
        elif line.startswith("- Tools run: "):
            for name, count in _TOOL_COUNT.findall(line[len("- Tools run: ") :]):
                d.tools[name] += int(count)
        elif line.startswith("- Step: "):
            d.steps.append(line[len("- Step: ") :])
    field = None
    for line in parts.get("Identifiers", []):
        if line in _SUBSECTIONS:
            field = _SUBSECTIONS[line]
        elif field and line.startswith("- "):
            getattr(d, field).append(line[2:])
    d.outstanding = [line for line in parts.get("Outstanding", []) if line and line != _NONE]
    # Anything a reader added elsewhere in the text still counts.
    d.take_identifiers(text)
    return d


def _merge(into: _Digest, older: _Digest) -> None:
    """Fold ``older`` (an earlier summary, met in order) into ``into``."""
    into.objective = into.objective or older.objective
    into.decisions += older.decisions
    into.messages += older.messages
    into.tools.update(older.tools)
    into.steps += older.steps
    into.paths += older.paths
    into.urls += older.urls
    into.commands += older.commands
    into.ids += older.ids
    into.errors += older.errors
    if older.outstanding:
        into.outstanding = older.outstanding
