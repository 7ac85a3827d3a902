"""The adapters take the provider SDKs' own objects and give back plain dicts with no nulls."""

from __future__ import annotations

import json

import pytest

from compaction import Message
from compaction.adapters import AdapterError
from compaction.adapters.anthropic import from_anthropic, to_anthropic
from compaction.adapters.openai import from_openai, to_openai

openai_types = pytest.importorskip("openai.types.chat")
anthropic_types = pytest.importorskip("anthropic.types")


def _nulls(value: object) -> list[str]:
    """Paths of every null anywhere in ``value`` (content: null on a tool-call turn is fine)."""
    found: list[str] = []

    def walk(v: object, path: str) -> None:
        if v is None:
            found.append(path)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{path}.{k}")
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]")

    walk(value, "")
    return found


def _completion(message: dict) -> object:
    return openai_types.ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        }
    )


TOOL_TURN = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": '{"p": "."}'}}
    ],
}


def test_openai_chat_completion_message_object_is_read():
    completion = _completion(TOOL_TURN)
    message = completion.choices[0].message
    assert isinstance(message, openai_types.ChatCompletionMessage)
    # model_dump() is what users reach for today, and it carries nulls the next request sends.
    assert _nulls(message.model_dump())
    (read,) = from_openai([message])
    assert read.role == "assistant"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in read.tool_calls] == [
        ("call_1", "ls", {"p": "."})
    ]
    (out,) = to_openai([read])
    assert _nulls(out) == []
    assert out["tool_calls"][0]["function"] == {"name": "ls", "arguments": '{"p": "."}'}


def test_a_whole_chat_completion_is_its_first_message():
    completion = _completion({"role": "assistant", "content": "done", "refusal": None})
    assert from_openai(completion) == from_openai([completion])
    (read,) = from_openai(completion)
    assert read.content == "done"
    assert to_openai([read]) == [{"role": "assistant", "content": "done"}]


def test_openai_objects_mixed_with_dicts_in_one_request():
    reply = _completion(TOOL_TURN).choices[0].message
    history = [
        {"role": "user", "content": "list files"},
        reply,
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
        # The pattern people write by hand: a dict holding the SDK's tool call objects.
        {"role": "assistant", "content": None, "tool_calls": reply.tool_calls},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py again"},
    ]
    out = to_openai(from_openai(history))
    assert out[1] == {"role": "assistant", "tool_calls": TOOL_TURN["tool_calls"]}
    # The same SDK call objects a second time: read alike, the reused id re-keyed visibly.
    assert out[3]["tool_calls"] == [{**TOOL_TURN["tool_calls"][0], "id": "call_1-r2"}]
    assert out[4]["tool_call_id"] == "call_1-r2"
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "assistant", "tool"]


def test_openai_rejects_what_is_not_a_message_clearly():
    with pytest.raises(AdapterError, match="message 0"):
        from_openai([42])


def _anthropic_reply() -> object:
    return anthropic_types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [
                {"type": "thinking", "thinking": "look first", "signature": "sig"},
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"p": "."}},
            ],
        }
    )


def test_anthropic_message_object_is_read_and_written_without_nulls():
    reply = _anthropic_reply()
    assert _nulls([b.model_dump() for b in reply.content])  # what a hand dump would send
    history = [
        {"role": "user", "content": "list files"},
        reply,
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
        },
    ]
    messages = from_anthropic(history, system="be brief")
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2].content == "Listing."
    assert messages[2].tool_calls[0].name == "ls"
    system, out = to_anthropic(messages)
    assert system == "be brief"
    assert _nulls(out) == []
    # The response's own fields (id, model, usage...) are not part of a request message.
    assert set(out[1]) == {"role", "content"}
    assert [b["type"] for b in out[1]["content"]] == ["thinking", "text", "tool_use"]
    assert out[1]["content"][2] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "ls",
        "input": {"p": "."},
    }


def test_anthropic_block_objects_inside_a_dict_message():
    reply = _anthropic_reply()
    history = [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": reply.content},  # the common hand-written form
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
        },
    ]
    assert from_anthropic(history) == from_anthropic([history[0], reply, history[2]])
    _, out = to_anthropic(from_anthropic(history))
    assert _nulls(out) == []


def test_rewritten_sdk_message_goes_out_from_its_new_text():
    (read,) = from_openai(
        [_completion({"role": "assistant", "content": "x" * 50}).choices[0].message]
    )
    (out,) = to_openai([read.replace(content="short")])
    assert out == {"role": "assistant", "content": "short"}
    assert isinstance(read, Message)
