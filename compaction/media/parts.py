"""A framework message's images and documents, described for the token counter.

The adapters keep a provider's own parts in ``meta`` and [`compaction.media.count`][] counts them.
A framework message (LangChain, pydantic-ai) keeps its parts in its own record, which the
counter cannot read; before this, its images counted as nothing (a 2000 x 2000 screenshot: 9
tokens through LangChain, 765 through the OpenAI adapter), and a request with a dozen of them
went out over the window uncompacted. So the converters describe each part once, when they
read a message, in ``meta["media"]``: ``{"text": <the text the parts came with>, "parts":
[...]}``, each part a small JSON object (``{"type": "image", "rule": "openai" | "anthropic" |
"any", "size": [w, h] | None, "detail": ...}`` or ``{"type": "pdf", "pages": n}``). Reading a
part's size costs the first bytes of its header, as in [`compaction.media.count`][].
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Mapping
from typing import Any

from .count import image_size, image_size_of, pdf_pages, pdf_pages_of

__all__ = ["KEY", "describe_block", "describe_bytes", "describe_url", "media_meta"]

KEY = "media"


def _image(rule: str, size: tuple[int, int] | None, detail: Any = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "image", "rule": rule, "size": list(size) if size else None}
    if isinstance(detail, str) and detail:
        part["detail"] = detail
    return part


def _data_url(url: Any) -> tuple[str, str] | None:
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    media_type, _, encoding = head.partition(";")
    return (media_type, data) if sep and encoding == "base64" else None


def describe_url(url: Any, kind: str, rule: str = "any", detail: Any = None) -> dict[str, Any]:
    """An image (``kind="image"``) or document at ``url``: a ``data:`` URL is read, a web URL
    has no known size (the most an image can cost; one page for a document)."""
    decoded = _data_url(url)
    if kind == "image":
        return _image(rule, image_size(decoded[1]) if decoded else None, detail)
    return {"type": "pdf", "pages": pdf_pages(decoded[1]) if decoded else 1}


def describe_bytes(data: bytes, media_type: str) -> dict[str, Any] | None:
    """An image or PDF given as raw bytes (pydantic-ai's ``BinaryContent``); None for others."""
    if media_type.startswith("image/"):
        return _image("any", image_size_of(data[: 96 * 1024]))
    if media_type == "application/pdf":
        return {"type": "pdf", "pages": pdf_pages_of(data)}
    return None


def _b64_size(data: Any) -> tuple[int, int] | None:
    return image_size(data) if isinstance(data, str) else None


def _b64_pages(data: Any) -> int:
    if not isinstance(data, str):
        return 1
    try:
        return pdf_pages(data)
    except (binascii.Error, ValueError):
        return 1


def describe_block(block: Any) -> dict[str, Any] | None:
    """One content block, in any of the shapes a LangChain message holds, or None when it is
    text or not media: an OpenAI ``image_url``/``file`` part (OpenAI's rule), an Anthropic
    ``image``/``document`` block (Anthropic's rule), LangChain's standard ``image``/``file``
    blocks (``source_type`` + ``data``/``url``, or ``base64``/``url``/``file_id``: neutral)."""
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    if kind in ("image_url", "input_image"):
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        detail = image.get("detail") if isinstance(image, Mapping) else block.get("detail")
        return describe_url(url, "image", "openai", detail)
    source = block.get("source")
    if isinstance(source, Mapping):  # Anthropic's own blocks
        data = source.get("data") if source.get("type") == "base64" else None
        if kind == "image":
            return _image("anthropic", _b64_size(data))
        if kind == "document" and source.get("type") != "text":
            return {"type": "pdf", "pages": _b64_pages(data)}
        return None
    if kind == "file" and isinstance(block.get("file"), Mapping):  # OpenAI's file part
        return describe_url(block["file"].get("file_data"), "pdf")
    if kind == "image":
        data = block.get("base64", block.get("data"))
        if block.get("source_type", "base64") == "base64" and isinstance(data, str):
            return _image("any", _b64_size(data))
        return _image("any", None)  # a URL or a file id: size unknown
    if kind == "file":
        mime = block.get("mime_type")
        if isinstance(mime, str) and mime and mime != "application/pdf":
            return None
        return {"type": "pdf", "pages": _b64_pages(block.get("base64", block.get("data")))}
    return None


def media_meta(text: str, parts: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The ``meta["media"]`` record for a message read with ``text``, or None without media."""
    found = [p for p in parts if p is not None]
    return {"text": text, "parts": found} if found else None
