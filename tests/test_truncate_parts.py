"""Truncate never drops what is not text: a message carrying images or documents is not cut.

The messages are read and written by the real adapters: what a provider would receive is
checked, not our own metadata.
"""

from __future__ import annotations

import json

from compaction import CompactionPipeline, Truncate
from compaction.adapters.anthropic import from_anthropic, to_anthropic
from compaction.adapters.openai import from_openai, to_openai
from compaction.tokens import ApproximateCounter

COUNTER = ApproximateCounter()
LONG = "log line\n" * 400
IMAGE_URL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"}
PDF = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQKJcfs"}


def _run(messages, target=300):
    truncate = Truncate(max_chars=200)
    result = CompactionPipeline().use(truncate).compact(messages, target=target, counter=COUNTER)
    return truncate, result


def test_openai_image_parts_survive_a_truncating_ladder():
    raw = [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": LONG},
                {"type": "image_url", "image_url": {"url": IMAGE_URL}},
            ],
        },
        {"role": "assistant", "content": LONG},
        {"role": "user", "content": "what does the screenshot show?"},
    ]
    _, result = _run(from_openai(raw))
    out = to_openai(result.messages)
    assert IMAGE_URL in json.dumps(out)  # the image still goes to the provider
    assert out[1] == raw[1]  # the message with the image is left whole
    assert len(out[2]["content"]) <= 200  # the plain text message next to it is still cut
    assert result.changed


def test_anthropic_images_and_documents_survive_a_truncating_ladder():
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": LONG},
                {"type": "image", "source": PNG},
                {"type": "document", "source": PDF},
            ],
        },
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
                    "content": [{"type": "text", "text": LONG}, {"type": "image", "source": PNG}],
                }
            ],
        },
        {"role": "assistant", "content": LONG},
        {"role": "user", "content": "and now?"},
    ]
    _, result = _run(from_anthropic(messages, system="sys"))
    _, out = to_anthropic(result.messages)
    text = json.dumps(out)
    assert text.count(PNG["data"]) == 2 and PDF["data"] in text
    assert out[0] == messages[0] and out[2] == messages[2]
    assert result.changed  # the long assistant text was cut


def test_truncate_message_leaves_a_message_with_an_image_whole():
    [message] = from_openai(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": LONG},
                    {"type": "image_url", "image_url": {"url": IMAGE_URL}},
                ],
            }
        ]
    )
    truncate = Truncate(max_chars=200)
    assert truncate.truncate_message(message) is message
    assert truncate.limit([message]) == (message,)
    assert truncate.can_handle([message]) == 0.0


def test_text_only_parts_are_still_cut():
    [message] = from_openai([{"role": "user", "content": [{"type": "text", "text": LONG}]}])
    assert len(Truncate(max_chars=200).truncate_message(message).content) <= 200
