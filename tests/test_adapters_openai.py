"""OpenAI chat-completions adapter: exact round trips, rewritten messages, SDK request types."""

from __future__ import annotations

import copy
import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import Message, ToolCall
from compaction.adapters import AdapterError
from compaction.adapters.openai import from_openai, to_openai
from compaction.memory.transcript import mark
from compaction.validate import validate
from tests.conversations import conversations

REQUEST = [
    {"role": "developer", "content": "Answer briefly."},
    {"role": "system", "content": [{"type": "text", "text": "Policy A"}]},
    {
        "role": "user",
        "name": "ann",
        "content": [
            {"type": "text", "text": "what is in"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "text", "text": "this picture?"},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "look", "arguments": '{"zoom": 2, "note": "\\u00e9"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "ocr", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_2", "content": "no text"},
    {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "a cat"}]},
    {"role": "assistant", "content": "A cat.", "refusal": None, "annotations": []},
    {"role": "user", "content": "thanks"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_3", "type": "function", "function": {"name": "done", "arguments": ""}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_3", "content": ""},
]


def test_hand_written_request_round_trips_exactly():
    original = copy.deepcopy(REQUEST)
    messages = from_openai(REQUEST)
    assert original == REQUEST  # the input is not touched
    assert to_openai(messages) == REQUEST
    # same key order too, so a file written back diffs cleanly
    assert [list(d) for d in to_openai(messages)] == [list(d) for d in REQUEST]
    validate(messages)


def test_what_each_field_becomes():
    m = from_openai(REQUEST)
    assert [x.role for x in m] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert m[2].content == "what is in\nthis picture?"  # text parts only, image in meta
    assert m[2].name == "ann"
    assert m[3].content == ""
    assert m[3].tool_calls == (
        ToolCall("call_1", "look", '{"zoom": 2, "note": "\\u00e9"}'),  # arguments verbatim
        ToolCall("call_2", "ocr", "{}"),
    )
    assert m[4].tool_call_id == "call_2"
    assert m[5].content == "a cat"


def test_rewritten_content_is_written_not_the_old_parts():
    messages = list(from_openai(REQUEST))
    messages[2] = mark(
        messages[2].replace(content="[image question]"), strategy="truncate", kind="truncated"
    )
    messages[5] = mark(
        messages[5].replace(content="[output cleared]"), strategy="tool_results", kind="placeholder"
    )
    out = to_openai(messages)
    # A cut writes its new text, never the old text parts; its image stays (issue 21.1).
    assert out[2]["content"] == [
        {"type": "text", "text": "[image question]"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    assert out[2]["name"] == "ann"
    assert out[5] == {"role": "tool", "tool_call_id": "call_1", "content": "[output cleared]"}
    assert all("compaction" not in d for d in out)  # provenance is not sent to the provider


def test_changed_tool_calls_are_written_from_the_calls():
    messages = list(from_openai(REQUEST))
    messages[3] = messages[3].replace(tool_calls=(ToolCall("call_1", "look", '{"zoom": 3}'),))
    out = to_openai(messages[:5])
    assert out[3]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "look", "arguments": '{"zoom": 3}'},
        }
    ]


def test_messages_built_in_code_get_the_plain_shape():
    out = to_openai(
        [
            Message("system", "s"),
            Message("assistant", "", tool_calls=(ToolCall("c", "f", '{"a": 1}'),)),
            Message("tool", "r", tool_call_id="c", name="f"),
        ]
    )
    assert out == [
        {"role": "system", "content": "s"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
        },
        {"role": "tool", "content": "r", "tool_call_id": "c"},
    ]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ([{"role": "function", "content": "x"}], "role"),
        ([{"role": "tool", "content": "x"}], "tool_call_id"),
        ([{"role": "user", "content": 5}], "content"),
        ([{"role": "user", "content": "x", "tool_call_id": "c"}], "tool_call_id"),
        ([{"role": "assistant", "tool_calls": [{"id": "c"}]}], "tool_calls[0]"),
        (["hello"], None),
    ],
)
def test_unreadable_messages_name_the_message_and_field(raw, field):
    with pytest.raises(AdapterError) as err:
        from_openai([{"role": "user", "content": "ok"}, *raw])
    assert err.value.index == 1
    assert err.value.field == field


# --- generated conversations -------------------------------------------------------------

_ids = iter(range(10**9))
_text = st.text(max_size=30)
_parts = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, _text),
        st.just({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}),
    ),
    min_size=1,
    max_size=3,
)
_content = st.one_of(_text, _parts)
_arguments = st.dictionaries(st.sampled_from("abc"), st.integers() | _text, max_size=2).map(
    lambda d: json.dumps(d)
)


@st.composite
def openai_conversations(draw):
    out = []
    for role in draw(st.lists(st.sampled_from(["system", "developer"]), max_size=2)):
        out.append({"role": role, "content": draw(_content)})
    for _ in range(draw(st.integers(0, 4))):
        user = {"role": "user", "content": draw(_content)}
        if draw(st.booleans()):
            user["name"] = draw(st.sampled_from(["ann", "bob"]))
        out.append(user)
        for _ in range(draw(st.integers(0, 3))):
            n = draw(st.integers(0, 3))
            calls = [
                {
                    "id": f"call_{next(_ids)}",
                    "type": "function",
                    "function": {
                        "name": draw(st.sampled_from(["ls", "cat"])),
                        "arguments": draw(_arguments),
                    },
                }
                for _ in range(n)
            ]
            assistant = {
                "role": "assistant",
                "content": draw(st.none() | _content) if calls else draw(_content),
            }
            if calls:
                assistant["tool_calls"] = calls
            if draw(st.booleans()):
                assistant["refusal"] = None
            out.append(assistant)
            for call in draw(st.permutations(calls)):
                out.append({"role": "tool", "tool_call_id": call["id"], "content": draw(_content)})
    return out


@settings(max_examples=150, deadline=None)
@given(openai_conversations())
def test_generated_openai_conversations_round_trip_exactly(raw):
    messages = from_openai(raw)
    validate(messages)
    assert to_openai(messages) == raw


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_generated_messages_survive_openai_and_back(messages):
    back = from_openai(to_openai(messages))
    assert [(m.role, m.content, m.tool_calls, m.tool_call_id) for m in back] == [
        (m.role, m.content, m.tool_calls, m.tool_call_id) for m in messages
    ]


# --- the official SDK's request types ---------------------------------------------------


@functools.cache
def _sdk_adapter():
    pytest.importorskip("openai")
    pydantic = pytest.importorskip("pydantic")
    from openai.types.chat import ChatCompletionMessageParam

    return pydantic.TypeAdapter(list[ChatCompletionMessageParam])


def test_hand_written_output_is_an_sdk_request():
    _sdk_adapter().validate_python(to_openai(from_openai(REQUEST)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_generated_output_is_an_sdk_request(messages):
    _sdk_adapter().validate_python(to_openai(messages))


def test_sdk_check_can_fail():
    pydantic = pytest.importorskip("pydantic")
    with pytest.raises(pydantic.ValidationError):
        _sdk_adapter().validate_python([{"role": "tool", "content": "x"}])
