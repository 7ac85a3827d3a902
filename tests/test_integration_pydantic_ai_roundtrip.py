"""pydantic-ai message conversion, property-tested: nothing is lost, pairs stay whole."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from compaction import CompactionPipeline, TiktokenCounter, validate
from compaction.integrations.pydantic_ai import from_pydantic_ai, to_pydantic_ai
from compaction.strategies.sliding_window import SlidingWindow
from compaction.strategies.tool_results import ToolResults
from compaction.strategies.truncate import Truncate

text = st.text(max_size=60)
name = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)
args = st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=8), max_size=3)
user_content = text | st.lists(
    text | st.just(ImageUrl("https://example.test/a.png")), min_size=1, max_size=3
)


@st.composite
def histories(draw: Any) -> list[ModelMessage]:
    """A conversation as pydantic-ai keeps it: every tool call answered in the next request."""
    first: list[Any] = [SystemPromptPart(draw(text))] if draw(st.booleans()) else []
    out: list[ModelMessage] = [ModelRequest([*first, UserPromptPart(draw(user_content))])]
    counter = 0
    for _ in range(draw(st.integers(0, 6))):
        parts: list[Any] = []
        if draw(st.booleans()):
            parts.append(ThinkingPart(draw(text)))
        if draw(st.booleans()):
            parts.append(TextPart(draw(text)))
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            counter += 1
            calls.append(ToolCallPart(draw(name), draw(args | args.map(str)), f"call{counter}"))
        out.append(ModelResponse([*parts, *calls], model_name=draw(st.none() | name)))
        returns: list[Any] = [
            ToolReturnPart(c.tool_name, draw(text | args), c.tool_call_id) for c in calls
        ]
        if not returns or draw(st.booleans()):
            returns.append(UserPromptPart(draw(user_content)))
        out.append(ModelRequest(returns))
    return out


@settings(max_examples=120, deadline=None)
@given(histories())
def test_round_trip_gives_back_the_very_messages(history: list[ModelMessage]):
    ours = from_pydantic_ai(history)
    validate(ours)  # tool results right after their call
    back = to_pydantic_ai(ours)
    assert back == history
    assert all(a is b for a, b in zip(back, history, strict=True))


@settings(max_examples=120, deadline=None)
@given(histories(), st.data())
def test_a_rewritten_part_changes_only_that_part(history: list[ModelMessage], data: Any):
    ours = list(from_pydantic_ai(history))
    i = data.draw(st.integers(0, len(ours) - 1))
    new = data.draw(text.filter(lambda t: t != ours[i].content))
    ours[i] = ours[i].replace(content=new).with_meta(compaction={"kind": "placeholder"})
    back = to_pydantic_ai(ours)
    assert len(back) == len(history)
    changed = [k for k, (a, b) in enumerate(zip(back, history, strict=True)) if a is not b]
    assert len(changed) == 1
    again = from_pydantic_ai(back)
    assert [m.content for m in again] == [m.content for m in ours]
    assert [m.tool_call_id for m in again] == [m.tool_call_id for m in ours]
    assert [[c.id for c in m.tool_calls] for m in again] == [
        [c.id for c in m.tool_calls] for m in ours
    ]
    if ours[i].role == "tool":
        assert again[i].meta["compaction"] == {"kind": "placeholder"}
    k = changed[0]
    # Everything about the message but its parts is kept (timestamps, ids, model name).
    assert type(back[k]) is type(history[k])
    assert back[k].timestamp == history[k].timestamp


@settings(max_examples=60, deadline=None)
@given(histories(), st.floats(0.1, 0.9))
def test_compacted_histories_convert_back_to_valid_pydantic_ai_histories(
    history: list[ModelMessage], share: float
):
    counter = TiktokenCounter()
    ours = from_pydantic_ai(history)
    pipeline = (
        CompactionPipeline(counter=counter)
        .use(ToolResults, keep_steps=1)
        .use(Truncate, max_chars=40)
        .use(SlidingWindow, keep_steps=1)
    )
    target = max(1, int(counter.count_messages(ours) * share))
    result = pipeline.compact(ours, target=target)
    back = to_pydantic_ai(result.messages)
    again = from_pydantic_ai(back)
    validate(again)  # no call without its return, no return without its call
    assert [(m.role, m.content, m.tool_call_id) for m in again] == [
        (m.role, m.content, m.tool_call_id) for m in result.messages
    ]
    for m in back:
        assert isinstance(m, ModelRequest | ModelResponse)


def test_bookkeeping_parts_ride_along_and_summaries_are_not_the_task():
    from pydantic_ai.messages import CompactionPart, InstructionDeltaPart

    delta = InstructionDeltaPart(id="style", content="Answer briefly.")
    history: list[ModelMessage] = [
        ModelRequest([UserPromptPart("the task"), delta]),
        ModelResponse([TextPart("ok")]),
        ModelRequest([InstructionDeltaPart(id="style", content=None)]),  # nothing else in it
        ModelRequest([CompactionPart(content="Earlier: read three files.")]),
    ]
    ours = from_pydantic_ai(history)
    assert [(m.role, m.content) for m in ours] == [
        ("user", "the task"),
        ("assistant", "ok"),
        ("user", ""),
        ("user", "Earlier: read three files."),
    ]
    assert [bool(m.meta.get("synthetic")) for m in ours] == [False, False, True, True]
    assert all(a is b for a, b in zip(to_pydantic_ai(ours), history, strict=True))
    # The user prompt rewritten: its request keeps the delta riding with it.
    rewritten = [ours[0].replace(content="the task (shortened)"), *ours[1:]]
    first = to_pydantic_ai(rewritten)[0]
    assert isinstance(first, ModelRequest)
    assert [type(p).__name__ for p in first.parts] == ["UserPromptPart", "InstructionDeltaPart"]
    assert first.parts[0].content == "the task (shortened)" and first.parts[1] is delta
