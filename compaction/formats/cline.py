"""Cline and Roo Code task histories (``tasks/<id>/api_conversation_history.json``).

The file is the list of Anthropic-shaped messages the extension sent, but the tools' results
do not come back as ``tool_result`` blocks: Cline answers a call with **text** blocks in the
next user message, ``"[read_file for 'src/x.cs'] Result:"`` and then the output, followed by
an ``<environment_details>`` block it adds to every turn. That text is tool data and the
harness's, not the person's, so:

- each ``[name ...] Result:`` header and the blocks after it (up to the next header, the
  ``<environment_details>`` block or the end) become one tool message answering the call it
  names: the next unanswered ``tool_use`` of the assistant message before with that name (or
  the next unanswered one). Older histories have no ``tool_use`` blocks at all (the model wrote
  the call as XML in its text): the call is then added to that assistant message from the
  header (name, and what it was for), so the result has a call to answer, and the XML stays in
  the text as written;
- what is left of the user message is a user message; when it holds nothing but harness text
  (``<environment_details>``, Cline's own error and resumption notes) it is marked synthetic,
  never taken for the task;
- real ``tool_result`` blocks (newer versions with native tool calls) are read as they are;
  unanswered calls get the visible "no result recorded" result, as in every log.

Roo Code writes the same shape (with a ``ts`` per message, kept as the recorded time).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..adapters import AdapterError
from ..adapters.anthropic import assistant_from_blocks, blocks_text, tool_from_block
from ..memory.transcript import SYNTHETIC_KEY
from ..messages import Message, ToolCall
from .detect import Document
from .errors import FormatError
from .loaded import Loaded
from .logs import RECORDED_KEY, as_log, recorded
from .registry import Reader
from .validate_loaded import finish

__all__ = ["READERS", "read_cline"]

SOURCE_KEY: Final = "cline"

#: ``[read_file for 'x.cs'] Result:``, ``[attempt_completion] Result:``, ``[use_mcp_tool for
#: 'server'] Result:``: the header Cline writes before a tool's output.
_HEADER: Final = re.compile(
    r"\A\[(?P<name>[A-Za-z_][\w.:-]{0,80})(?: for (?P<what>[^\n]*?))?\] Result:"
)
_ENV: Final = "<environment_details>"
#: Text Cline itself writes into the user role.
_HARNESS: Final = (
    _ENV,
    "[ERROR]",
    "[TASK RESUMPTION]",
    "<environment_details>",
    "[Response interrupted",
)


def _text_of(block: Any) -> str | None:
    if isinstance(block, Mapping) and block.get("type") == "text":
        text = block.get("text")
        return text if isinstance(text, str) else ""
    return None


def _header(block: Any) -> re.Match[str] | None:
    text = _text_of(block)
    return _HEADER.match(text) if text else None


class _Turn:
    """The calls of the last assistant message, to pair results with."""

    def __init__(self, message: Message | None) -> None:
        self.message = message
        self.open = list(message.tool_calls) if message is not None else []
        self.added: list[ToolCall] = []

    def take(self, name: str, what: str | None, count: int) -> str:
        for call in self.open:
            if call.name == name:
                self.open.remove(call)
                return call.id
        if self.open and not self.added:
            return self.open.pop(0).id
        if what and len(what) > 1 and what[0] == what[-1] == "'":
            what = what[1:-1]
        args = json.dumps({"for": what} if what else {}, ensure_ascii=False)
        call = ToolCall(f"cline_{count}", name, args)
        self.added.append(call)
        return call.id


def _segments(blocks: Sequence[Any]) -> tuple[list[tuple[re.Match[str], list[Any]]], list[Any]]:
    """(header, its blocks) for every tool result in ``blocks``, and the blocks left over."""
    results: list[tuple[re.Match[str], list[Any]]] = []
    rest: list[Any] = []
    current: list[Any] | None = None
    for block in blocks:
        match = _header(block)
        text = _text_of(block) or ""
        if match is not None:
            current = [block]
            results.append((match, current))
        elif text.lstrip().startswith(_ENV) or (
            isinstance(block, Mapping) and block.get("type") == "tool_result"
        ):
            current = None
            rest.append(block)
        elif current is not None:
            current.append(block)
        else:
            rest.append(block)
    return results, rest


def _result_text(match: re.Match[str], blocks: list[Any]) -> str:
    first = (_text_of(blocks[0]) or "")[match.end() :].lstrip("\n")
    others = [t for t in (_text_of(b) for b in blocks[1:]) if t is not None]
    return "\n".join(t for t in (first, *others) if t)


def _stamp(raw: Mapping[str, Any]) -> dict[str, Any]:
    ts = raw.get("ts")
    if isinstance(ts, int | float) and not isinstance(ts, bool):
        return {"ts": ts}
    return {}


def read_cline(doc: Document, path: str) -> Loaded:
    raw = doc.value
    if not isinstance(raw, list):
        raise FormatError(path, "expected a JSON list of messages")
    messages: list[Message] = []
    turn = _Turn(None)
    at = -1  # index in ``messages`` of the last assistant message
    added = 0
    for index, m in enumerate(raw):
        if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant"):
            raise FormatError(path, f"message {index}: 'role': expected 'user' or 'assistant'")
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise FormatError(path, f"message {index}.content: expected text or a list of blocks")
        source = {"index": index, **_stamp(m)}
        try:
            if m["role"] == "assistant":
                meta: dict[str, Any] = {SOURCE_KEY: source}
                if "ts" in source:
                    meta[RECORDED_KEY] = recorded(timestamp=source["ts"] / 1000)
                message = assistant_from_blocks(blocks, index, meta=meta)
                messages.append(message)
                turn, at = _Turn(message), len(messages) - 1
                continue
            results, rest = _segments(blocks)
            answers: list[Message] = []
            for match, part in results:
                added += 1
                call_id = turn.take(match["name"], match["what"], added)
                text = _result_text(match, part)
                answers.append(
                    Message(
                        "tool",
                        text,
                        tool_call_id=call_id,
                        name=match["name"],
                        meta={SOURCE_KEY: {**source, "header": match.group(0)}},
                    )
                )
            natives = [b for b in rest if isinstance(b, Mapping) and b.get("type") == "tool_result"]
            for block in natives:
                answers.append(tool_from_block(block, index, meta={SOURCE_KEY: source}))
            others = [
                b for b in rest if not (isinstance(b, Mapping) and b.get("type") == "tool_result")
            ]
        except AdapterError as exc:
            raise FormatError(path, f"message {index}: {exc}") from None
        if turn.added and at >= 0:
            host = messages[at]
            # Written back from its text and calls: its original blocks hold no tool_use.
            meta = {k: v for k, v in host.meta.items() if k != "anthropic"}
            meta[SOURCE_KEY] = {**meta.get(SOURCE_KEY, {}), "calls_from_results": len(turn.added)}
            messages[at] = host.replace(tool_calls=(*host.tool_calls, *turn.added), meta=meta)
            turn.added = []
        messages.extend(answers)
        if others:
            text = blocks_text(others)
            person: dict[str, Any] = {SOURCE_KEY: source}
            if not _person_text(others):
                person[SYNTHETIC_KEY] = True
            messages.append(Message("user", text, meta=person))
        turn = _Turn(None) if answers else turn
    fixed, repairs = as_log(messages)
    return finish(Loaded(fixed, "cline", path, repairs=repairs, container="list"))


def _person_text(blocks: Sequence[Any]) -> bool:
    """True when some text block is not harness text (or a block is an image the user sent)."""
    for block in blocks:
        text = _text_of(block)
        if text is None:
            return True
        if text.strip() and not text.lstrip().startswith(_HARNESS):
            return True
    return False


def _sniff(doc: Document, path: str) -> bool:
    value = doc.value
    if not isinstance(value, list) or not value:
        return False
    found = False
    for m in value:
        if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant"):
            return False
        content = m.get("content")
        if m["role"] == "user" and isinstance(content, list) and not found:
            found = any(_header(b) is not None for b in content)
    return found


READERS = (
    Reader(
        name="cline",
        title="Cline / Roo Code task history (tasks/<id>/api_conversation_history.json)",
        shape="a JSON list of Anthropic messages whose tool results are user text blocks "
        "\"[tool for 'x'] Result:\" followed by <environment_details>",
        sniff=_sniff,
        read=read_cline,
        output="anthropic",
        priority=30,
    ),
)
