"""Fit keeps images and documents (issue 21.1): it cuts only the text of a message.

Each conversation is read and written by the real adapter of its format (OpenAI chat, Anthropic,
Responses, LangChain, pydantic-ai): what a provider would receive is checked, not our metadata.
"""

from __future__ import annotations

import base64
import io
import json

import pytest

from compaction.adapters.anthropic import from_anthropic, to_anthropic
from compaction.adapters.openai import from_openai, to_openai
from compaction.adapters.responses import from_responses, to_responses
from compaction.tokens import TiktokenCounter
from compaction.trigger import default_pipeline

PIL = pytest.importorskip("PIL.Image")
COUNTER = TiktokenCounter()
LONG = "Please look at the screenshot and fix the layout bug. " + "details " * 6000


def _png() -> bytes:
    buf = io.BytesIO()
    PIL.new("RGB", (800, 600), "white").save(buf, "PNG")
    return buf.getvalue()


PNG = _png()
B64 = base64.b64encode(PNG).decode()
URL = "data:image/png;base64," + B64
PDF = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQKJcfs"}


def _compact(messages, target=3000):
    result = default_pipeline(counter=COUNTER).compact(messages, target=target)
    assert [a.strategy for a in result.applied][-1] == "fit"
    return result


def test_openai_keeps_the_image_beside_the_cut_text():
    result = _compact(
        from_openai(
            [
                {"role": "system", "content": "s"},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": LONG},
                        {"type": "image_url", "image_url": {"url": URL}},
                    ],
                },
            ]
        )
    )
    parts = to_openai(result.messages)[1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"] == URL
    assert parts[0]["text"].startswith("Please look") and len(parts[0]["text"]) < len(LONG)
    assert result.fits  # the image is counted in what was made to fit


def test_anthropic_keeps_images_and_documents_in_user_turns_and_tool_results():
    request = to_anthropic(
        _compact(
            from_anthropic(
                [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": LONG},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": B64,
                                },
                            },
                            {"type": "document", "source": PDF},
                        ],
                    }
                ],
                system="s",
            ),
            target=8000,
        ).messages
    )
    blocks = request.messages[0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "document"]
    assert blocks[1]["source"]["data"] == B64 and len(blocks[0]["text"]) < len(LONG)


def test_anthropic_tool_result_with_a_screenshot_keeps_it():
    raw = [
        {"role": "user", "content": "check the page"},
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
                        {"type": "text", "text": LONG},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": B64},
                        },
                    ],
                }
            ],
        },
    ]
    request = to_anthropic(_compact(from_anthropic(raw, system="s")).messages)
    result_block = request.messages[2]["content"][0]
    kinds = [b["type"] for b in result_block["content"]]
    assert kinds == ["text", "image"] and len(result_block["content"][0]["text"]) < len(LONG)


def test_responses_keeps_the_input_image():
    result = _compact(
        from_responses(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": LONG},
                        {"type": "input_image", "image_url": URL, "detail": "high"},
                    ],
                }
            ]
        )
    )
    item = to_responses(result.messages)[0]
    assert [p["type"] for p in item["content"]] == ["input_text", "input_image"]
    assert item["content"][1]["image_url"] == URL


def test_langchain_keeps_the_image_block():
    messages = pytest.importorskip("langchain_core.messages")
    from compaction.integrations.langchain_messages import from_langchain, to_langchain

    result = _compact(
        from_langchain(
            [
                messages.SystemMessage("s"),
                messages.HumanMessage(
                    content=[
                        {"type": "text", "text": LONG},
                        {"type": "image_url", "image_url": {"url": URL}},
                    ]
                ),
            ]
        )
    )
    content = to_langchain(result.messages)[1].content
    assert isinstance(content, list) and URL in json.dumps(content)
    assert len(content[0]["text"]) < len(LONG)


def test_pydantic_ai_keeps_the_binary_content():
    pai = pytest.importorskip("pydantic_ai.messages")
    from pydantic_ai import BinaryContent

    from compaction.integrations.pydantic_ai import from_pydantic_ai, to_pydantic_ai

    history = [
        pai.ModelRequest(parts=[pai.SystemPromptPart("s")]),
        pai.ModelRequest(
            parts=[pai.UserPromptPart([LONG, BinaryContent(PNG, media_type="image/png")])]
        ),
    ]
    out = to_pydantic_ai(_compact(from_pydantic_ai(history)).messages)
    content = out[1].parts[0].content
    assert isinstance(content[0], str) and len(content[0]) < len(LONG)
    assert isinstance(content[1], BinaryContent) and content[1].data == PNG
