"""Anthropic messages adapter: every block type, exact round trips, merging, SDK request types."""

from __future__ import annotations

import copy
import functools
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import Message, ToolCall
from compaction.adapters import AdapterError
from compaction.adapters.anthropic import AnthropicRequest, from_anthropic, to_anthropic
from compaction.adapters.openai import from_openai, to_openai
from compaction.memory.transcript import mark
from compaction.validate import validate
from tests.conversations import conversations

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
SYSTEM = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
REQUEST = [
    {"role": "user", "content": [{"type": "text", "text": "What is this?"}, IMAGE]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Look first.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "zoom", "input": {"level": 2}},
            {"type": "tool_use", "id": "toolu_2", "name": "ocr", "input": {}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "a cat"}, IMAGE],
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": "failed",
                "is_error": True,
            },
            {"type": "text", "text": "Is it a cat?"},
        ],
    },
    {"role": "assistant", "content": "Yes, a cat."},
    {"role": "user", "content": "thanks"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_3", "name": "done", "input": {"text": "é"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3"}]},
]


def test_every_block_type_round_trips_exactly():
    original = copy.deepcopy(REQUEST)
    messages = from_anthropic(REQUEST, system=SYSTEM)
    assert original == REQUEST
    validate(messages)
    system, out = to_anthropic(messages)
    assert system == SYSTEM
    assert out == REQUEST


def test_what_each_block_becomes():
    m = from_anthropic(REQUEST, system="Be brief.")
    assert [x.role for x in m] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert m[0].content == "Be brief."
    assert m[1].content == "What is this?"  # the image stays in meta
    assert m[2].content == "Let me look."
    assert m[2].tool_calls == (
        ToolCall("toolu_1", "zoom", '{"level": 2}'),
        ToolCall("toolu_2", "ocr", "{}"),
    )
    # tool results first, each its own message, named after the call; then the user's text
    assert (m[3].tool_call_id, m[3].name, m[3].content) == ("toolu_1", "zoom", "a cat")
    assert (m[4].tool_call_id, m[4].content) == ("toolu_2", "failed")
    assert m[5].content == "Is it a cat?"
    assert json.loads(m[8].tool_calls[0].arguments) == {"text": "é"}
    assert m[9].content == ""


def test_a_string_system_prompt_round_trips():
    request = to_anthropic(from_anthropic(REQUEST[:1], system="plain"))
    assert isinstance(request, AnthropicRequest)
    system, messages = request
    assert (system, messages) == ("plain", REQUEST[:1])


def test_rewritten_messages_keep_thinking_first_and_drop_old_text():
    messages = list(from_anthropic(REQUEST))
    messages[1] = mark(
        messages[1].replace(content="Looking."), strategy="truncate", kind="truncated"
    )
    messages[2] = mark(
        messages[2].replace(content="[cleared]"), strategy="tool_results", kind="placeholder"
    )
    _, out = to_anthropic(messages)
    assert out[1]["content"] == [
        {"type": "thinking", "thinking": "Look first.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "zoom", "input": {"level": 2}},
        {"type": "tool_use", "id": "toolu_2", "name": "ocr", "input": {}},
    ]
    # the old image-bearing content is not resurrected over the placeholder
    assert out[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "[cleared]",
    }
    assert out[2]["content"][1]["is_error"] is True


def test_consecutive_same_role_messages_are_merged():
    messages = [
        Message("system", "one"),
        Message("system", "two"),
        Message("user", "a"),
        Message("user", "b"),
        Message("assistant", "thinking aloud"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "ls", '{"p": "."}'),)),
        Message("tool", "x", tool_call_id="c1"),
        Message("user", "next"),
    ]
    system, out = to_anthropic(messages)
    assert system == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "thinking aloud"},
                {"type": "tool_use", "id": "c1", "name": "ls", "input": {"p": "."}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "x"},
                {"type": "text", "text": "next"},
            ],
        },
    ]


def test_system_in_the_middle_and_non_json_arguments_are_refused():
    with pytest.raises(AdapterError) as err:
        to_anthropic([Message("user", "a"), Message("system", "late")])
    assert err.value.index == 1
    call = ToolCall("c1", "ls", "not json")
    with pytest.raises(AdapterError, match="not JSON"):
        to_anthropic(
            [
                Message("user", "a"),
                Message("assistant", "", tool_calls=(call,)),
                Message("tool", "x", tool_call_id="c1"),
            ]
        )


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"role": "system", "content": "x"}, "role"),
        ({"role": "user", "content": 3}, "content"),
        ({"role": "user", "content": [{"text": "no type"}]}, "content[0]"),
        (
            {"role": "assistant", "content": [{"type": "tool_use", "name": "x", "input": {}}]},
            "content[0].id",
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "x", "input": [1]}],
            },
            "content[0].input",
        ),
        ({"role": "user", "content": [{"type": "tool_result", "content": "x"}]}, "tool_use_id"),
    ],
)
def test_unreadable_messages_name_the_message_and_field(raw, field):
    with pytest.raises(AdapterError) as err:
        from_anthropic(
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "o"}, raw]
        )
    assert err.value.index == 2
    assert err.value.field == field


# --- generated conversations -------------------------------------------------------------

_ids = iter(range(10**9))
_text = st.text(min_size=1, max_size=30)
_text_block = st.builds(lambda t: {"type": "text", "text": t}, _text)
_input = st.dictionaries(st.sampled_from("abc"), st.integers() | _text, max_size=2)


@st.composite
def anthropic_conversations(draw):
    system = draw(st.none() | _text | st.lists(_text_block, min_size=1, max_size=2))
    out = []
    pending: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        # user turn: results for every pending call first, then optional text / images
        results = [
            {
                "type": "tool_result",
                "tool_use_id": cid,
                "content": draw(st.one_of(_text, st.lists(_text_block, max_size=2))),
            }
            | ({"is_error": draw(st.booleans())} if draw(st.booleans()) else {})
            for cid in draw(st.permutations(pending))
        ]
        rest = draw(st.lists(st.one_of(_text_block, st.just(IMAGE)), max_size=2))
        if results or draw(st.booleans()):
            content = results + rest if results or rest else [{"type": "text", "text": "go"}]
            out.append({"role": "user", "content": content})
        else:
            out.append({"role": "user", "content": draw(_text)})
        # assistant turn
        blocks = []
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": draw(_text), "signature": "s"})
        if draw(st.booleans()):
            blocks.append({"type": "redacted_thinking", "data": "d"})
        blocks += draw(st.lists(_text_block, max_size=2))
        pending = [f"toolu_{next(_ids)}" for _ in range(draw(st.integers(0, 3)))]
        blocks += [
            {
                "type": "tool_use",
                "id": cid,
                "name": draw(st.sampled_from(["ls", "cat"])),
                "input": draw(_input),
            }
            for cid in pending
        ]
        only_text = not pending and len(blocks) == 1 and blocks[0]["type"] == "text"
        if not blocks or (only_text and draw(st.booleans())):
            out.append({"role": "assistant", "content": draw(_text)})
        else:
            out.append({"role": "assistant", "content": blocks})
    if pending:
        out.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": cid, "content": "ok"} for cid in pending
                ],
            }
        )
    return system, out


@settings(max_examples=150, deadline=None)
@given(anthropic_conversations())
def test_generated_anthropic_conversations_round_trip_exactly(request):
    system, raw = request
    messages = from_anthropic(raw, system=system)
    validate(messages)
    assert to_anthropic(messages) == (system, raw)


def _calls_and_results(messages):
    calls = [c for m in messages for c in m.tool_calls]
    results = [(m.tool_call_id, m.content) for m in messages if m.role == "tool"]
    return calls, results


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_generated_messages_written_for_anthropic_stay_valid(messages):
    system, out = to_anthropic(messages)
    roles = [m["role"] for m in out]
    assert all(a != b for a, b in itertools.pairwise(roles))  # roles alternate
    back = from_anthropic(out, system=system)
    validate(back)
    # every call and result survives, in order; only adjacent same-role texts were merged
    assert _calls_and_results(back) == _calls_and_results(messages)


def test_openai_conversation_written_for_anthropic_and_back():
    raw = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
        {"role": "assistant", "content": "a.py"},
    ]
    system, out = to_anthropic(from_openai(raw))
    assert system == "Be brief."
    assert out[1]["content"] == [{"type": "tool_use", "id": "call_1", "name": "ls", "input": {}}]
    assert out[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "a.py"}],
    }
    back = to_openai(from_anthropic(out, system=system))
    assert [m["role"] for m in back] == ["system", "user", "assistant", "tool", "assistant"]


# --- the official SDK's request types ---------------------------------------------------


@functools.cache
def _sdk_adapter():
    pytest.importorskip("anthropic")
    pydantic = pytest.importorskip("pydantic")
    from anthropic.types import MessageParam

    return pydantic.TypeAdapter(list[MessageParam])


def test_hand_written_output_is_an_sdk_request():
    _sdk_adapter().validate_python(to_anthropic(from_anthropic(REQUEST, system=SYSTEM)).messages)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_generated_output_is_an_sdk_request(messages):
    _sdk_adapter().validate_python(to_anthropic(messages).messages)


def test_sdk_check_can_fail():
    pydantic = pytest.importorskip("pydantic")
    with pytest.raises(pydantic.ValidationError):
        _sdk_adapter().validate_python([{"role": "tool", "content": "x"}])


# --- what the API would reject is never written ---------------------------------------


def test_a_conversation_opening_with_the_assistant_opens_with_a_user_turn():
    from compaction.adapters.anthropic import CONTINUED

    # OpenAI accepts an assistant greeting first; a compacted conversation can open so too.
    system, out = to_anthropic(
        [Message("system", "s"), Message("assistant", "hello"), Message("user", "q")]
    )
    assert system == "s"
    assert out == [
        {"role": "user", "content": CONTINUED},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "q"},
    ]
    _sdk_adapter().validate_python(out)


def test_empty_messages_are_left_out_not_written_empty():
    _, out = to_anthropic(
        [Message("user", "q"), Message("assistant", ""), Message("user", "r"), Message("user", "")]
    )
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "text", "text": "r"}]}
    ]
    _, out = to_anthropic([Message("user", ""), Message("assistant", "a")])
    assert [m["role"] for m in out] == ["user", "assistant"]
    assert all(m["content"] for m in out)


def test_openai_images_go_to_anthropic_as_image_blocks_and_nothing_vanishes():
    raw = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}},
            ],
        }
    ]
    _, out = to_anthropic(from_openai(raw))
    assert out[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "text", "text": "[input_audio part omitted: no Anthropic form]"},
    ]
    _sdk_adapter().validate_python(out)


def test_anthropic_blocks_openai_has_no_form_for_leave_a_note():
    raw = [
        {
            "role": "user",
            "content": [
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "d"},
                },
                {"type": "text", "text": "q"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
                {"type": "web_search_tool_result", "tool_use_id": "srv", "content": []},
                {"type": "text", "text": "ans"},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "bad"},
                        {"type": "image", "source": {"type": "url", "url": "https://e/x.png"}},
                    ],
                },
                {"type": "image", "source": {"type": "url", "url": "https://e/y.png"}},
            ],
        },
    ]
    out = to_openai(from_anthropic(raw))
    assert out[0]["content"] == [
        {"type": "text", "text": "[document block omitted: no OpenAI form]"},
        {"type": "text", "text": "q"},
    ]
    assert out[1]["content"] == (
        "ans\n[server_tool_use block omitted: no OpenAI form]\n"
        "[web_search_tool_result block omitted: no OpenAI form]"
    )
    assert out[2] == {
        "role": "tool",
        "content": "bad\n[image block omitted: no OpenAI form]",
        "tool_call_id": "t1",
    }
    assert out[3]["content"] == [{"type": "image_url", "image_url": {"url": "https://e/y.png"}}]
    # and the Anthropic round trip itself is still exact
    assert to_anthropic(from_anthropic(raw)).messages == raw
