"""Images and documents are counted as the providers bill them, from real image bytes."""

from __future__ import annotations

import base64
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import ApproximateCounter, TiktokenCounter
from compaction.adapters.anthropic import from_anthropic
from compaction.adapters.openai import from_openai
from compaction.media.count import (
    ANTHROPIC_IMAGE_MAX,
    OPENAI_IMAGE_MAX,
    PDF_PAGE_TOKENS,
    anthropic_image_tokens,
    image_size,
    openai_image_tokens,
    pdf_pages,
)

Image = pytest.importorskip("PIL.Image")


def encoded(width: int, height: int, fmt: str, **save: object) -> str:
    buffer = io.BytesIO()
    image = Image.effect_noise((width, height), 64).convert("RGB")
    image.save(buffer, format=fmt, **save)
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
@pytest.mark.parametrize("size", [(1, 1), (640, 480), (1000, 3000), (4000, 1000)])
def test_size_is_read_from_the_header_of_real_images(fmt, size):
    if fmt == "WEBP" and max(size) > 16383:
        pytest.skip("WebP cannot hold it")
    assert image_size(encoded(*size, fmt)) == size


def test_jpeg_behind_a_large_exif_block():
    exif = Image.Exif()
    exif[0x010E] = "x" * 60_000  # ImageDescription, pushing the frame header far back
    data = encoded(800, 600, "JPEG", exif=exif.tobytes())
    assert image_size(data) == (800, 600)


def test_lossless_and_extended_webp():
    assert image_size(encoded(321, 123, "WEBP", lossless=True)) == (321, 123)
    buffer = io.BytesIO()
    frames = [Image.new("RGB", (300, 200), c) for c in ("red", "blue")]
    frames[0].save(buffer, format="WEBP", save_all=True, append_images=frames[1:])
    assert image_size(base64.b64encode(buffer.getvalue()).decode()) == (300, 200)


def test_garbage_is_unknown_not_an_error():
    assert image_size("") is None
    assert image_size("not base64 at all!!") is None
    assert image_size(base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()) is None


def test_openai_published_examples():
    # OpenAI's own worked examples: 1024 x 1024 high is 765; 2048 x 4096 high is 1105.
    assert openai_image_tokens((1024, 1024), "high") == 765
    assert openai_image_tokens((2048, 4096), "high") == 1105
    assert openai_image_tokens((4096, 8192), "low") == 85
    assert openai_image_tokens(None) == OPENAI_IMAGE_MAX


def test_anthropic_published_examples():
    # Anthropic's table: 200 x 200 is ~54 tokens, 1000 x 1000 ~1334, 1092 x 1092 ~1590.
    assert anthropic_image_tokens((200, 200)) == 54
    assert anthropic_image_tokens((1000, 1000)) == 1334
    assert 1500 <= anthropic_image_tokens((1092, 1092)) <= ANTHROPIC_IMAGE_MAX
    # Bigger images are scaled down first, so the cost is bounded.
    assert anthropic_image_tokens((8000, 8000)) <= ANTHROPIC_IMAGE_MAX


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_costs_are_bounded_by_the_documented_maxima(w, h):
    assert 85 <= openai_image_tokens((w, h)) <= OPENAI_IMAGE_MAX
    assert 1 <= anthropic_image_tokens((w, h)) <= ANTHROPIC_IMAGE_MAX


def _openai_image_message(data: str, detail: str = "high") -> list[dict]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:image/png;base64,{data}", "detail": detail},
                },
            ],
        }
    ]


def test_a_large_openai_image_counts_as_billed_not_as_its_text():
    data = encoded(1024, 1024, "PNG")
    assert len(data) > 400_000  # a 400 KB screenshot, which used to count as a few tokens
    (message,) = from_openai(_openai_image_message(data))
    counter = TiktokenCounter()
    text_only = counter.count_text("what is this?")
    assert counter.count(message) == counter.per_message + text_only + 765
    (low,) = from_openai(_openai_image_message(data, "low"))
    assert ApproximateCounter().count(low) == 4 + 4 + 85


def test_an_anthropic_image_block_counts_by_its_pixels():
    data = encoded(1000, 1000, "JPEG")
    messages = from_anthropic(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/jpeg", "data": data},
                    },
                ],
            }
        ]
    )
    counter = ApproximateCounter()
    assert counter.count(messages[0]) == 4 + 1 + 1334


def test_an_image_in_a_tool_result_is_counted():
    data = encoded(200, 200, "PNG")
    messages = from_anthropic(
        [
            {"role": "user", "content": "shot"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": data,
                                },
                            }
                        ],
                    }
                ],
            },
        ]
    )
    counter = ApproximateCounter()
    name = counter.per_name + counter.count_text("screenshot")
    assert counter.count(messages[2]) == counter.per_message + name + 54


def test_a_rewritten_message_no_longer_pays_for_its_image():
    (message,) = from_openai(_openai_image_message(encoded(512, 512, "PNG")))
    counter = ApproximateCounter()
    assert counter.count(message) > 85
    assert counter.count(message.replace(content="[image dropped]")) == 4 + 4


def _pdf(pages: int) -> str:
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Count %d >>" % pages]
    objects += [b"<< /Type /Page /Parent 2 0 R >>"] * pages
    body = b"%PDF-1.4\n" + b"".join(
        b"%d 0 obj\n%s\nendobj\n" % (i + 1, o) for i, o in enumerate(objects)
    )
    return base64.b64encode(body + b"%%EOF\n").decode()


def test_pdf_documents_count_per_page():
    assert pdf_pages(_pdf(3)) == 3
    assert pdf_pages(base64.b64encode(b"%PDF-1.7 compressed" + b"\0" * 250_000).decode()) == 3
    messages = from_anthropic(
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {
                            "type": "base64",
                            "media_type": "application/pdf",
                            "data": _pdf(2),
                        },
                    },
                    {"type": "text", "text": "summarise"},
                ],
            }
        ]
    )
    assert ApproximateCounter().count(messages[0]) == 4 + 3 + 2 * PDF_PAGE_TOKENS
    (file_part,) = from_openai(
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "file",
                        "file": {
                            "filename": "a.pdf",
                            "file_data": f"data:application/pdf;base64,{_pdf(4)}",
                        },
                    }
                ],
            }
        ]
    )
    assert ApproximateCounter().count(file_part) == 4 + 4 * PDF_PAGE_TOKENS


def test_text_documents_count_as_their_text():
    messages = from_anthropic(
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": "x" * 400},
                    }
                ],
            }
        ]
    )
    assert ApproximateCounter().count(messages[0]) == 4 + 100
