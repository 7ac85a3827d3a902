"""What images and documents cost in a request, counted the way the providers count them.

A message's text is counted by the token counter; its non-text parts (kept by the adapters in
``meta["openai"]["parts"]`` and ``meta["anthropic"]["blocks"]``) are counted here. Counting
their base64 text instead would be wrong both ways: the text is not what the model sees, and a
400 KB screenshot would count as a few tokens when the provider bills over a thousand.

The rules (each provider's published accounting):

- **OpenAI images** (``image_url`` parts, the Responses API's ``input_image``):
  ``detail: "low"`` costs 85 tokens. Otherwise the image is scaled to fit in 2048 x 2048,
  then so its shortest side is at most 768, and it costs 85 + 170 per 512-pixel tile.
  Unknown size (a web URL): ``OPENAI_IMAGE_MAX``, the most any image can cost, since
  under-counting is what overflows a window.
- **Anthropic images** (``image`` blocks): width * height / 750, after scaling so the long edge
  is at most 1568 pixels and the image at most ~1.15 megapixels; unknown size:
  ``ANTHROPIC_IMAGE_MAX``.
- **Documents** (Anthropic ``document`` blocks, OpenAI ``file`` / ``input_file`` parts): a PDF costs
  ``PDF_PAGE_TOKENS`` per page (Anthropic documents 1,500-3,000 tokens a page, text plus
  the page image; we take the top of that range). Pages are counted from the PDF's page
  objects; when they cannot be found (compressed object streams, a file by id or URL) the
  estimate is one page per ``PDF_BYTES_PER_PAGE`` bytes, at least one. A plain-text
  document is counted as its text.
- **Provider-neutral images** (a framework's own form: LangChain's standard ``image`` blocks,
  pydantic-ai's ``BinaryContent`` and ``ImageUrl``): such a message may go to either provider,
  and under-counting is what overflows a window, so one costs the larger of the two rules
  ([`neutral_image_tokens`][]). An image in a provider's own form inside a framework message
  (an OpenAI ``image_url`` part, an Anthropic ``image`` block in LangChain content) is counted
  by that provider's rule, as the adapters count it.
- Other non-text parts (audio, unknown kinds) are not counted.

Sizes are read from the image header (PNG, JPEG, GIF, WebP) in the first bytes of the base64
data; nothing else is decoded, so a huge image costs a bounded amount of work. The parts are
read from ``meta["openai"]`` (chat completions), ``meta["responses"]`` (Responses API items)
and ``meta["anthropic"]``; the framework converters describe theirs in ``meta["media"]``
([`compaction.media.parts`][]), small JSON a session can keep.
"""

from __future__ import annotations

import binascii
import math
import re
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "ANTHROPIC_IMAGE_MAX",
    "OPENAI_IMAGE_MAX",
    "PDF_BYTES_PER_PAGE",
    "PDF_PAGE_TOKENS",
    "anthropic_image_tokens",
    "image_size",
    "image_size_of",
    "media_tokens",
    "neutral_image_tokens",
    "openai_image_tokens",
    "pdf_pages",
    "pdf_pages_of",
]

OPENAI_IMAGE_MAX: Final = 85 + 170 * 8  # 768 x 2048 after scaling: 2 x 4 tiles
ANTHROPIC_IMAGE_MAX: Final = 1600
PDF_PAGE_TOKENS: Final = 3000
PDF_BYTES_PER_PAGE: Final = 100_000

# Enough base64 to reach a JPEG's frame header past a large EXIF block (which is at most 64 KB).
_HEADER_B64: Final = 96 * 1024
# A PDF is scanned for page objects in at most this many decoded bytes.
_PDF_SCAN: Final = 16 * 1024 * 1024


def _decode(data: str, limit: int | None) -> bytes:
    text = data if limit is None else data[:limit]
    text = text[: len(text) - len(text) % 4]
    try:
        return binascii.a2b_base64(text)
    except (binascii.Error, ValueError):
        return b""


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(head):
        if head[i] != 0xFF:
            return None
        marker = head[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            i += 2
            continue
        (length,) = struct.unpack(">H", head[i + 2 : i + 4])
        # Start-of-frame markers hold the size; C4, C8 and CC share the range but are not frames.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", head[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8X" and len(head) >= 30:
        width = 1 + int.from_bytes(head[24:27], "little")
        height = 1 + int.from_bytes(head[27:30], "little")
        return width, height
    if chunk == b"VP8L" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8 " and len(head) >= 30:
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def image_size(data: str) -> tuple[int, int] | None:
    """``(width, height)`` of a base64 PNG, JPEG, GIF or WebP image, or None when unknown."""
    return image_size_of(_decode(data, _HEADER_B64))


def image_size_of(head: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from the first bytes of a PNG, JPEG, GIF or WebP file, or None."""
    head = head[: _HEADER_B64 * 3 // 4]
    size: tuple[int, int] | None = None
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        size = struct.unpack(">II", head[16:24])
    elif head[:2] == b"\xff\xd8":
        size = _jpeg_size(head)
    elif head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        size = struct.unpack("<HH", head[6:10])
    elif head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        size = _webp_size(head)
    if size is None or size[0] <= 0 or size[1] <= 0:
        return None
    return size


def openai_image_tokens(size: tuple[int, int] | None, detail: str = "auto") -> int:
    """What OpenAI bills for one image of ``size`` at ``detail`` (see the module docstring)."""
    if detail == "low":
        return 85
    if size is None:
        return OPENAI_IMAGE_MAX
    w, h = float(size[0]), float(size[1])
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def anthropic_image_tokens(size: tuple[int, int] | None) -> int:
    """What Anthropic bills for one image of ``size`` (see the module docstring)."""
    if size is None:
        return ANTHROPIC_IMAGE_MAX
    width, height = size
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return max(1, math.ceil(width * scale * height * scale / 750))


_PAGE: Final = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def pdf_pages(data: str) -> int:
    """Pages of a base64 PDF: its page objects, else one per ``PDF_BYTES_PER_PAGE``."""
    raw = _decode(data, _PDF_SCAN * 4 // 3)
    return _pages(raw, math.ceil(len(data) * 3 / 4))


def pdf_pages_of(raw: bytes) -> int:
    """Pages of a PDF file's bytes (as [`pdf_pages`][])."""
    return _pages(raw[:_PDF_SCAN], len(raw))


def _pages(raw: bytes, size: int) -> int:
    found = len(_PAGE.findall(raw))
    if found:
        return found
    return max(1, math.ceil(size / PDF_BYTES_PER_PAGE))


def neutral_image_tokens(size: tuple[int, int] | None) -> int:
    """What an image in no provider's own form costs: the larger of the two rules."""
    return max(openai_image_tokens(size), anthropic_image_tokens(size))


def _described(part: Any) -> int:
    """Tokens of one descriptor written by [`compaction.media.parts`][]."""
    if not isinstance(part, Mapping):
        return 0
    kind = part.get("type")
    if kind == "image":
        raw = part.get("size")
        size = (
            (int(raw[0]), int(raw[1])) if isinstance(raw, list | tuple) and len(raw) == 2 else None
        )
        rule = part.get("rule")
        if rule == "openai":
            return openai_image_tokens(size, str(part.get("detail") or "auto"))
        if rule == "anthropic":
            return anthropic_image_tokens(size)
        return neutral_image_tokens(size)
    if kind == "pdf":
        pages = part.get("pages")
        return (pages if isinstance(pages, int) and pages > 0 else 1) * PDF_PAGE_TOKENS
    return 0


def _data_url(url: Any) -> tuple[str, str] | None:
    """``(media_type, base64 data)`` of a ``data:`` URL."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    media_type, _, encoding = head.partition(";")
    if not sep or encoding != "base64":
        return None
    return media_type, data


def _openai_part(part: Any) -> int:
    if not isinstance(part, Mapping):
        return 0
    kind = part.get("type")
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        detail = image.get("detail", "auto") if isinstance(image, Mapping) else "auto"
        decoded = _data_url(url)
        return openai_image_tokens(image_size(decoded[1]) if decoded else None, str(detail))
    if kind == "input_image":  # the Responses API's form
        decoded = _data_url(part.get("image_url"))
        detail = str(part.get("detail") or "auto")
        return openai_image_tokens(image_size(decoded[1]) if decoded else None, detail)
    if kind in ("file", "input_file"):
        file = part.get("file") if kind == "file" else part
        data = file.get("file_data") if isinstance(file, Mapping) else None
        decoded = _data_url(data)
        pages = pdf_pages(decoded[1]) if decoded else 1
        return pages * PDF_PAGE_TOKENS
    return 0


def _anthropic_block(block: Any, count_text: Callable[[str], int]) -> int:
    if not _is_mapping(block):
        return 0
    kind = block.get("type")
    # Most blocks (text, thinking, tool_use, a tool_result holding text) cost nothing here:
    # they are answered before their source is read.
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return sum(_anthropic_block(b, count_text) for b in content)
        return 0
    if kind == "compaction":
        # Anthropic's own compaction summary: input the next request is billed for, whose
        # text is not the message's text.
        content = block.get("content")
        return count_text(content) if isinstance(content, str) else 0
    if kind != "image" and kind != "document":
        return 0
    source = block.get("source")
    source = source if _is_mapping(source) else {}
    data = source.get("data") if source.get("type") == "base64" else None
    if kind == "image":
        return anthropic_image_tokens(image_size(data) if isinstance(data, str) else None)
    if source.get("type") == "text" and isinstance(source.get("data"), str):
        return count_text(source["data"])
    if source.get("type") == "content" and isinstance(source.get("content"), list):
        return sum(_anthropic_block(b, count_text) for b in source["content"]) + sum(
            count_text(str(b.get("text", "")))
            for b in source["content"]
            if _is_mapping(b) and b.get("type") == "text"
        )
    pages = pdf_pages(data) if isinstance(data, str) else 1
    return pages * PDF_PAGE_TOKENS


def _is_mapping(value: Any) -> bool:
    # A dict (what JSON gives) answers without the abstract-class check, which is most of the
    # cost of a walk over blocks that turn out to hold no image or document.
    return type(value) is dict or isinstance(value, Mapping)


def media_tokens(meta: Mapping[str, Any], content: str, count_text: Callable[[str], int]) -> int:
    """Tokens of the non-text parts a message carries in ``meta`` (0 when it has none).

    Parts are counted while the message still holds the text they were read with, or is a
    cut of it (kind ``"truncated"``: the adapters write its parts back beside the cut text); a
    message a strategy otherwise rewrote is written out from its new text, without them.
    """
    total = 0
    provenance = meta.get("compaction")
    cut = (
        provenance is not None and _is_mapping(provenance) and provenance.get("kind") == "truncated"
    )
    for key in ("openai", "responses"):  # chat-completions parts, Responses API parts
        record = meta.get(key)
        if record is not None and _is_mapping(record):
            parts = record.get("parts")
            if isinstance(parts, list) and (cut or content == record.get("parts_text")):
                total += sum(_openai_part(p) for p in parts)
    described = meta.get("media")  # the framework converters' descriptors
    if described is not None and _is_mapping(described) and content == described.get("text"):
        parts = described.get("parts")
        if isinstance(parts, list):
            total += sum(_described(p) for p in parts)
    anthropic = meta.get("anthropic")
    if (
        anthropic is not None
        and _is_mapping(anthropic)
        and (cut or content == anthropic.get("text"))
    ):
        blocks = anthropic.get("blocks")
        if isinstance(blocks, list):
            for b in blocks:
                total += _anthropic_block(b, count_text)
        block = anthropic.get("block")
        if block is not None:
            total += _anthropic_block(block, count_text)
    return total
