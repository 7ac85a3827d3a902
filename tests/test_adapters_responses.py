"""Responses API input items (the Agents SDK's) to messages and back."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import CompactionPipeline, validate
from compaction.adapters import AdapterError
from compaction.adapters.responses import from_responses, to_responses
from compaction.strategies.sliding_window import SlidingWindow
from compaction.strategies.tool_results import ToolResults
from compaction.tokens import ApproximateCounter

ITEMS = [
    {"role": "developer", "content": "Be terse."},
    {"role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "look"}]},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
    },
    {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls", "arguments": "{}"},
    {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "cat", "arguments": '{"p":1}'},
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "c1", "output": "a.py b.py"},
    {"type": "function_call_output", "call_id": "c2", "output": "x" * 4000},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    {"role": "user", "content": "thanks"},
]


def test_items_read_as_steps_and_round_trip_as_the_same_objects():
    items = copy.deepcopy(ITEMS)
    messages = from_responses(items)
    assert [m.role for m in messages] == [
        "system", "user", "assistant", "tool", "tool", "assistant", "user"
    ]  # fmt: skip
    step = messages[2]
    assert step.content == "Looking."
    assert [(c.id, c.name) for c in step.tool_calls] == [("c1", "ls"), ("c2", "cat")]
    assert messages[4].name == "cat"
    validate(messages)
    out = to_responses(messages)
    assert out == ITEMS
    assert all(a is b for a, b in zip(out, items, strict=True))


def test_a_rewritten_output_and_step_keep_their_reasoning_and_calls():
    messages = from_responses(copy.deepcopy(ITEMS))
    rewritten = list(messages)
    rewritten[4] = messages[4].replace(content="[output cleared]")
    rewritten[2] = messages[2].replace(content="Looking (short).")
    out = to_responses(rewritten)
    kinds = [i.get("type", i.get("role")) for i in out]
    # reasoning and the hosted call stay with their step, the calls follow the new text
    assert kinds[2:7] == [
        "reasoning",
        "web_search_call",
        "assistant",
        "function_call",
        "function_call",
    ]
    assert out[5] is not None and out[5]["id"] == "fc_1"
    assert {"type": "function_call_output", "call_id": "c2", "output": "[output cleared]"} in out
    validate(from_responses(out))


def test_ladder_drops_whole_steps_only():
    items = [{"role": "user", "content": "task"}]
    for n in range(8):
        items += [
            {"type": "reasoning", "id": f"rs_{n}", "summary": []},
            {"type": "function_call", "call_id": f"c{n}", "name": "run", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": "y" * 800},
        ]
    counter = ApproximateCounter()
    pipeline = (
        CompactionPipeline(counter=counter)
        .use(ToolResults, keep_steps=1)
        .use(SlidingWindow, keep_steps=1)
    )
    result = pipeline.compact(from_responses(items), target=400)
    out = to_responses(result.messages)
    calls = {i["call_id"] for i in out if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in out if i.get("type") == "function_call_output"}
    assert calls == outputs
    reasoning = {i["id"] for i in out if i.get("type") == "reasoning"}
    assert reasoning == {f"rs_{c[1:]}" for c in calls}  # no reasoning without its call
    assert {"role": "user", "content": "task"} in out


def test_sdk_objects_are_read_too():
    types = pytest.importorskip("openai.types.responses")
    call = types.ResponseFunctionToolCall(
        type="function_call", call_id="c1", name="ls", arguments="{}", id="fc_1"
    )
    messages = from_responses(
        [
            {"role": "user", "content": "go"},
            call,
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ]
    )
    assert messages[1].tool_calls[0].name == "ls"
    assert to_responses(messages)[1] is call


def test_bad_items_are_named():
    with pytest.raises(AdapterError, match="message 1"):
        from_responses([{"role": "user", "content": "x"}, {"content": "no type"}])
    with pytest.raises(AdapterError, match="call_id"):
        from_responses([{"type": "function_call_output", "output": "x"}])
    with pytest.raises(AdapterError, match="role"):
        from_responses([{"role": "wizard", "content": "x"}])


@st.composite
def conversations_of_items(draw):
    """Agents SDK item lists: user turns, steps of reasoning, text and parallel calls."""
    items: list[dict] = [{"role": "user", "content": draw(st.text(max_size=20)) or "task"}]
    n = 0
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            items.append({"role": "user", "content": draw(st.text(max_size=30))})
        step: list[dict] = []
        if draw(st.booleans()):
            step.append({"type": "reasoning", "id": f"rs_{n}", "summary": []})
        if draw(st.booleans()):
            text = draw(st.text(min_size=1, max_size=40))
            step.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        ids = [f"c{n}_{k}" for k in range(draw(st.integers(0, 3)))]
        step += [
            {"type": "function_call", "call_id": i, "name": "run", "arguments": "{}"} for i in ids
        ]
        if not [i for i in step if i["type"] != "reasoning"]:
            continue  # reasoning always leads to text or a call
        items += step
        size = draw(st.integers(0, 2000))
        items += [
            {"type": "function_call_output", "call_id": i, "output": "z" * size}
            for i in draw(st.permutations(ids))
        ]
        n += 1
    return items


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations_of_items(), st.integers(50, 3000))
def test_round_trip_and_compaction_keep_steps_whole(items, target):
    messages = from_responses(items)
    validate(messages)
    out = to_responses(messages)
    assert out == items and all(a is b for a, b in zip(out, items, strict=True))
    pipeline = (
        CompactionPipeline(counter=ApproximateCounter())
        .use(ToolResults, keep_steps=1)
        .use(SlidingWindow, keep_steps=1)
    )
    compacted = to_responses(pipeline.compact(messages, target=target).messages)
    again = from_responses(compacted)
    validate(again)
    calls = [i["call_id"] for i in compacted if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in compacted if i.get("type") == "function_call_output"]
    assert sorted(calls) == sorted(outputs)
    # A reasoning item is only ever sent with what it led to (text or a call), never alone.
    for index, item in enumerate(compacted):
        if item.get("type") == "reasoning":
            following = compacted[index + 1] if index + 1 < len(compacted) else {}
            assert following.get("type") in ("reasoning", "function_call") or (
                following.get("role") == "assistant"
            )


def test_a_step_emptied_by_a_rewrite_sends_no_lone_reasoning():
    messages = from_responses(copy.deepcopy(ITEMS[:4]))
    emptied = [*messages[:2], messages[2].replace(content="")]
    assert [i.get("type") for i in to_responses(emptied)[2:]] == []
