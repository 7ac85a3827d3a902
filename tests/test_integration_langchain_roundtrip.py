"""LangChain message conversion, property-tested: nothing is lost either way."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from compaction import Message, ToolCall, validate
from compaction.adapters import AdapterError
from compaction.integrations.langchain import from_langchain, to_langchain

text = st.text(max_size=40)
ident = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
blocks = st.lists(
    st.one_of(
        text.map(lambda t: {"type": "text", "text": t}),
        st.just({"type": "image", "url": "https://example.test/a.png"}),
        text.map(lambda t: {"type": "reasoning", "reasoning": t}),
    ),
    max_size=3,
)
content = text | blocks
kwargs = st.dictionaries(st.sampled_from(["lc_source", "refusal", "x"]), json_value, max_size=2)
ids = st.none() | ident


@st.composite
def tool_calls(draw: Any) -> list[dict[str, Any]]:
    names = draw(st.lists(ident, max_size=3, unique=True))
    return [
        {
            "name": draw(ident),
            "args": draw(st.dictionaries(st.text(max_size=5), json_value, max_size=3)),
            "id": f"call_{n}",
            "type": "tool_call",
        }
        for n in names
    ]


def _usage(n: int) -> dict[str, int]:
    return {"input_tokens": n, "output_tokens": 1, "total_tokens": n + 1}


messages = st.one_of(
    st.builds(SystemMessage, content=content, id=ids),
    st.builds(
        HumanMessage, content=content, id=ids, name=st.none() | ident, additional_kwargs=kwargs
    ),
    st.builds(
        AIMessage,
        content=content,
        id=ids,
        tool_calls=tool_calls(),
        additional_kwargs=kwargs,
        response_metadata=st.dictionaries(st.sampled_from(["model", "finish"]), text, max_size=2),
        usage_metadata=st.none() | st.integers(0, 10**6).map(_usage),
    ),
    st.builds(
        ToolMessage,
        content=content,
        tool_call_id=ident,
        id=ids,
        name=st.none() | ident,
        status=st.sampled_from(["success", "error"]),
        artifact=json_value,
    ),
    st.builds(ChatMessage, content=content, role=st.sampled_from(["developer", "critic"]), id=ids),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, max_size=6))
def test_langchain_round_trip_is_exact(original: list[BaseMessage]):
    ours = from_langchain(original)
    assert to_langchain(ours) == original
    for lc, m in zip(original, ours, strict=True):
        assert m.content == lc.text
        assert m.id == lc.id
        # The record is plain data, so a session can store it.
        json.dumps(m.meta["langchain"])
        if isinstance(lc, AIMessage):
            assert [c.id for c in m.tool_calls] == [c["id"] for c in lc.tool_calls]
            assert [json.loads(c.arguments) for c in m.tool_calls] == [
                c["args"] for c in lc.tool_calls
            ]
        if isinstance(lc, ToolMessage):
            assert m.role == "tool" and m.tool_call_id == lc.tool_call_id


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, min_size=1, max_size=6), st.data())
def test_a_rewritten_message_keeps_everything_but_what_was_rewritten(
    original: list[BaseMessage], data: st.DataObject
):
    ours = list(from_langchain(original))
    i = data.draw(st.integers(0, len(ours) - 1))
    new_text = data.draw(text.filter(lambda t: t != ours[i].content))
    ours[i] = ours[i].replace(content=new_text).with_meta(compaction={"kind": "placeholder"})
    back = to_langchain(ours)
    assert back[:i] == original[:i] and back[i + 1 :] == original[i + 1 :]
    old, new = original[i], back[i]
    assert type(new) is type(old)
    assert new.content == new_text
    assert (new.id, new.name, new.additional_kwargs) == (old.id, old.name, old.additional_kwargs)
    assert new.response_metadata["compaction"] == {"kind": "placeholder"}
    if isinstance(old, AIMessage):
        assert new.tool_calls == old.tool_calls
    if isinstance(old, ToolMessage):
        assert (new.tool_call_id, new.status, new.artifact) == (old.tool_call_id, old.status, None)
    # Provenance comes back in: a later run knows the message is compaction output.
    assert from_langchain([new])[0].meta["compaction"] == {"kind": "placeholder"}


@st.composite
def conversations(draw: Any) -> list[Message]:
    out = [Message("system", draw(text))] if draw(st.booleans()) else []
    for turn in range(draw(st.integers(0, 4))):
        out.append(Message("user", draw(text), id=draw(ids)))
        calls = tuple(
            ToolCall(f"t{turn}_{k}", draw(ident), json.dumps(draw(st.dictionaries(ident, text))))
            for k in range(draw(st.integers(0, 2)))
        )
        out.append(Message("assistant", draw(text), tool_calls=calls, name=draw(st.none() | ident)))
        out.extend(Message("tool", draw(text), tool_call_id=c.id, name=c.name) for c in calls)
    return out


@settings(max_examples=200, deadline=None)
@given(conversations())
def test_our_messages_survive_a_trip_through_langchain(ours: list[Message]):
    validate(ours)
    back = from_langchain(to_langchain(ours))
    for a, b in zip(ours, back, strict=True):
        assert (a.role, a.content, a.tool_call_id, a.name, a.id) == (
            b.role,
            b.content,
            b.tool_call_id,
            b.name,
            b.id,
        )
        assert [(c.id, c.name, json.loads(c.arguments)) for c in a.tool_calls] == [
            (c.id, c.name, json.loads(c.arguments)) for c in b.tool_calls
        ]


def test_what_it_cannot_read_is_named():
    with pytest.raises(AdapterError, match=r"message 1.*tool_calls\[0\]\.id"):
        from_langchain(
            [HumanMessage("x"), AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}])]
        )
    with pytest.raises(AdapterError, match="expected a list"):
        from_langchain(HumanMessage("x"))  # type: ignore[arg-type]


def test_summarization_middleware_summary_is_never_the_task():
    summary = HumanMessage("Here is a summary", additional_kwargs={"lc_source": "summarization"})
    ours = from_langchain([summary, HumanMessage("the task")])
    assert ours[0].meta.get("synthetic") is True and "synthetic" not in ours[1].meta
