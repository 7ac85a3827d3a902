"""Anthropic content blocks written from our messages: text, images, tool results, and the
blocks of a message whose text was cut.

Kept apart from [`compaction.adapters.anthropic`][] (which reads requests and writes the
assistant's turns and the system prompt) so each stays one screenful of rules; it imports
nothing from that module.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..messages import Message
from ._parts import is_cut, with_text
from .openai import META_KEY as OPENAI_META_KEY

__all__ = ["META_KEY", "record_of", "text_block", "tool_block", "user_content"]

#: Where a message read from Anthropic keeps its original blocks.
META_KEY: Final = "anthropic"


def record_of(message: Message) -> Mapping[str, Any]:
    record = message.meta.get(META_KEY)
    return record if isinstance(record, Mapping) else {}


def text_block(text: str) -> list[dict[str, Any]]:
    # The API rejects empty text blocks, so empty text is no block at all.
    return [{"type": "text", "text": text}] if text else []


def tool_block(message: Message) -> dict[str, Any]:
    record = record_of(message)
    block = record.get("block")
    if (
        block is not None
        and message.content == record.get("text")
        and (block.get("tool_use_id") == message.tool_call_id)
    ):
        return copy.deepcopy(dict(block))
    out = {k: copy.deepcopy(v) for k, v in (block or {}).items() if k != "content"}
    kept = _cut_blocks((block or {}).get("content"), message)
    content: Any = kept if kept is not None else message.content
    out.update(type="tool_result", tool_use_id=message.tool_call_id, content=content)
    return out


def _image_block(url: Any) -> dict[str, Any] | None:
    """An OpenAI ``image_url`` (a data URL or a web URL) as an Anthropic image block."""
    if not isinstance(url, str) or not url:
        return None
    if url.startswith("data:"):
        head, sep, data = url[5:].partition(",")
        media_type, _, encoding = head.partition(";")
        if not sep or encoding != "base64" or not media_type:
            return None
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks_from_parts(parts: Sequence[Any]) -> list[dict[str, Any]]:
    """OpenAI content parts as Anthropic blocks: text and images carried over; a part with no
    Anthropic form (audio, files...) becomes a visible note rather than vanishing."""
    out: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            out += text_block(str(part.get("text", "")))
            continue
        if kind == "image_url":
            image = part.get("image_url")
            block = _image_block(image.get("url") if isinstance(image, Mapping) else image)
            if block is not None:
                out.append(block)
                continue
        out.append(
            {"type": "text", "text": f"[{kind or 'unknown'} part omitted: no Anthropic form]"}
        )
    return out


def _is_text_block(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "text"


def _cut_blocks(blocks: Any, message: Message) -> list[dict[str, Any]] | None:
    """The blocks of a message whose text was cut: its images and documents kept beside the
    cut text."""
    if not is_cut(message) or not isinstance(blocks, list):
        return None
    return with_text(
        copy.deepcopy(blocks), message.content, _is_text_block, lambda t: text_block(t)[0]
    )


def user_content(message: Message) -> str | list[dict[str, Any]]:
    record = record_of(message)
    blocks = record.get("blocks")
    if blocks is not None and message.content == record.get("text"):
        return copy.deepcopy(blocks)
    kept = _cut_blocks(blocks, message)
    if kept is not None:
        return kept
    # Read from OpenAI with content parts (images...): carry them over, not just their text.
    openai = message.meta.get(OPENAI_META_KEY)
    if (
        not record
        and isinstance(openai, Mapping)
        and isinstance(openai.get("parts"), list)
        and message.content == openai.get("parts_text")
    ):
        return _blocks_from_parts(openai["parts"])
    return message.content
