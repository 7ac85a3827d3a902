"""Images and documents cost the same from every entry point (issue 21.2).

A 2000 x 2000 PNG counted ~769 tokens through the OpenAI adapter but ~9 through LangChain and
pydantic-ai, whose converters kept the image where the counter never looked: a request with a
dozen screenshots was estimated at a few hundred tokens and went out over the window. Real
PNGs and PDFs (made with pillow), in each framework's own message types."""

from __future__ import annotations

import base64
import io

import pytest

from compaction.adapters.anthropic import from_anthropic
from compaction.adapters.openai import from_openai
from compaction.adapters.responses import from_responses
from compaction.tokens import ApproximateCounter

Image = pytest.importorskip("PIL.Image")

TEXT = "what is on this screen?"


def png(width: int = 2000, height: int = 2000) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, "PNG")
    return buffer.getvalue()


def pdf(pages: int) -> bytes:
    buffer = io.BytesIO()
    frames = [Image.new("RGB", (300, 400), (255, 255, 255)) for _ in range(pages)]
    frames[0].save(buffer, "PDF", save_all=True, append_images=frames[1:])
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def media_cost(messages) -> int:
    """What the parts add to a message beyond its text, by one counter."""
    counter = ApproximateCounter()
    (message,) = messages
    return counter.count(message) - counter.count(message.replace(meta={}))


def openai_cost(data: bytes) -> int:
    url = f"data:image/png;base64,{b64(data)}"
    parts = [{"type": "text", "text": TEXT}, {"type": "image_url", "image_url": {"url": url}}]
    return media_cost(from_openai([{"role": "user", "content": parts}]))


def anthropic_cost(data: bytes) -> int:
    source = {"type": "base64", "media_type": "image/png", "data": b64(data)}
    blocks = [{"type": "text", "text": TEXT}, {"type": "image", "source": source}]
    return media_cost(from_anthropic([{"role": "user", "content": blocks}]))


@pytest.fixture(scope="module")
def screenshot() -> bytes:
    return png()


def test_the_adapters_count_a_screenshot_as_the_providers_bill_it(screenshot) -> None:
    assert openai_cost(screenshot) > 700  # 85 + 170 * 4 tiles
    assert anthropic_cost(screenshot) > 1500  # ~1.15 megapixels / 750


# -- LangChain -----------------------------------------------------------------------------------


def langchain_cost(content: list) -> int:
    messages = pytest.importorskip("langchain_core.messages")
    from compaction.integrations.langchain_messages import from_langchain

    return media_cost(from_langchain([messages.HumanMessage(content=content)]))


def test_langchain_openai_image_part_costs_what_the_openai_adapter_counts(screenshot) -> None:
    url = f"data:image/png;base64,{b64(screenshot)}"
    content = [{"type": "text", "text": TEXT}, {"type": "image_url", "image_url": {"url": url}}]
    assert langchain_cost(content) == openai_cost(screenshot)


def test_langchain_anthropic_block_costs_what_the_anthropic_adapter_counts(screenshot) -> None:
    source = {"type": "base64", "media_type": "image/png", "data": b64(screenshot)}
    content = [{"type": "text", "text": TEXT}, {"type": "image", "source": source}]
    assert langchain_cost(content) == anthropic_cost(screenshot)


@pytest.mark.parametrize(
    "block",
    [
        lambda data: {"type": "image", "base64": b64(data), "mime_type": "image/png"},
        lambda data: {
            "type": "image",
            "source_type": "base64",
            "data": b64(data),
            "mime_type": "image/png",
        },
    ],
    ids=["v1 standard block", "v0.3 standard block"],
)
def test_langchain_standard_image_blocks_cost_the_dearer_providers_rule(screenshot, block) -> None:
    cost = langchain_cost([{"type": "text", "text": TEXT}, block(screenshot)])
    assert cost == max(openai_cost(screenshot), anthropic_cost(screenshot))


def test_langchain_image_by_url_costs_the_most_an_image_can(screenshot) -> None:
    cost = langchain_cost([{"type": "image", "url": "https://example.com/shot.png"}])
    assert cost >= max(openai_cost(screenshot), anthropic_cost(screenshot))


def test_langchain_pdf_costs_per_page() -> None:
    one = langchain_cost([{"type": "file", "base64": b64(pdf(1)), "mime_type": "application/pdf"}])
    three = langchain_cost(
        [{"type": "file", "base64": b64(pdf(3)), "mime_type": "application/pdf"}]
    )
    assert one > 1000 and three == 3 * one


# -- pydantic-ai ---------------------------------------------------------------------------------


def pydantic_ai_cost(content: list) -> int:
    messages = pytest.importorskip("pydantic_ai.messages")
    from compaction.integrations.pydantic_ai_messages import from_pydantic_ai

    request = messages.ModelRequest([messages.UserPromptPart(content)])
    return media_cost(from_pydantic_ai([request]))


def test_pydantic_ai_binary_image_costs_the_dearer_providers_rule(screenshot) -> None:
    from pydantic_ai.messages import BinaryContent

    cost = pydantic_ai_cost([TEXT, BinaryContent(screenshot, media_type="image/png")])
    assert cost == max(openai_cost(screenshot), anthropic_cost(screenshot))


def test_pydantic_ai_image_url_is_read_from_a_data_url(screenshot) -> None:
    from pydantic_ai.messages import BinaryContent, ImageUrl

    url = f"data:image/png;base64,{b64(screenshot)}"
    from_url = pydantic_ai_cost([TEXT, ImageUrl(url)])
    assert from_url == pydantic_ai_cost([TEXT, BinaryContent(screenshot, media_type="image/png")])
    # a web URL's size is unknown: the most an image can cost
    assert pydantic_ai_cost([TEXT, ImageUrl("https://example.com/a.png")]) >= from_url


def test_pydantic_ai_pdf_costs_per_page() -> None:
    from pydantic_ai.messages import BinaryContent

    one = pydantic_ai_cost([TEXT, BinaryContent(pdf(1), media_type="application/pdf")])
    two = pydantic_ai_cost([TEXT, BinaryContent(pdf(2), media_type="application/pdf")])
    assert one > 1000 and two == 2 * one


# -- the Agents SDK (Responses items; LiteLLM reads chat messages with from_openai itself) --------


def test_agents_sdk_input_image_costs_what_the_openai_adapter_counts(screenshot) -> None:
    pytest.importorskip("agents")
    item = {
        "role": "user",
        "content": [
            {"type": "input_text", "text": TEXT},
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{b64(screenshot)}",
                "detail": "auto",
            },
        ],
    }
    assert media_cost(from_responses([item])) == openai_cost(screenshot)


def test_a_dozen_screenshots_through_langchain_are_counted_over_a_small_window(screenshot) -> None:
    messages = pytest.importorskip("langchain_core.messages")
    from compaction.integrations.langchain_messages import from_langchain

    url = f"data:image/png;base64,{b64(screenshot)}"
    history = [
        messages.HumanMessage(
            content=[
                {"type": "text", "text": f"shot {n}"},
                {"type": "image_url", "image_url": {"url": url}},
            ]
        )
        for n in range(12)
    ]
    total = ApproximateCounter().count_messages(from_langchain(history))
    assert total > 12 * openai_cost(screenshot)
