"""Images and documents in a request, counted the way providers bill them.

[`count`][compaction.media.count] answers the tokens of a message's non-text parts;
[`parts`][compaction.media.parts] describes a framework message's parts for it. Imports only the
core's messages: the token counter asks it, so it must never import the counter back.
"""

from __future__ import annotations

from .count import (
    ANTHROPIC_IMAGE_MAX,
    OPENAI_IMAGE_MAX,
    PDF_BYTES_PER_PAGE,
    PDF_PAGE_TOKENS,
    anthropic_image_tokens,
    image_size,
    image_size_of,
    media_tokens,
    neutral_image_tokens,
    openai_image_tokens,
    pdf_pages,
    pdf_pages_of,
)

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
