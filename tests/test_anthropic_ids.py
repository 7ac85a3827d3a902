"""Tool-call ids Anthropic accepts (``^[a-zA-Z0-9_-]+$``), from whatever came in.

Re-keyed ids used to be ``call_1~2`` and ids from other providers (``functions.bash:0``) were
passed through: Anthropic answers such a request with a 400. ``to_anthropic`` now maps every
id to a valid one: the same on ``tool_use`` and ``tool_result``, the same in every call (the
prompt cache compares requests byte for byte), and never two ids to one."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.adapters.anthropic import from_anthropic, to_anthropic
from compaction.adapters.ids import anthropic_id
from compaction.adapters.openai import from_openai
from compaction.messages import ToolCall, assistant, tool, user

VALID = re.compile(r"[a-zA-Z0-9_-]+")


def blocks(request) -> list[dict]:
    _, out = request
    return [b for m in out if isinstance(m["content"], list) for b in m["content"]]


def pairs(request) -> list[tuple[str, str]]:
    found = blocks(request)
    uses = [b["id"] for b in found if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for b in found if b["type"] == "tool_result"]
    return list(zip(uses, results, strict=True))


def conversation(ids: list[str]):
    msgs = [user("go")]
    for n, call_id in enumerate(ids):
        msgs.append(assistant(f"step {n}", [ToolCall(call_id, "bash", {"n": n})]))
        msgs.append(tool(call_id, f"out {n}", name="bash"))
    return msgs


def test_reused_and_foreign_ids_become_valid_and_stay_paired() -> None:
    raw = [
        {"role": "user", "content": "task"},
        *[
            m
            for content in ("a", "b")
            for m in (
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "functions.bash:0",
                            "type": "function",
                            "function": {"name": "bash", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "functions.bash:0", "content": content},
            )
        ],
    ]
    request = to_anthropic(from_openai(raw))
    found = pairs(request)
    assert len(found) == 2
    assert all(use == result and VALID.fullmatch(use) for use, result in found)
    assert found[0][0] != found[1][0]
    assert found[0][0].startswith("functions_bash_0_")


def test_valid_ids_are_left_exactly_as_they_are() -> None:
    ids = ["toolu_01A09q90qw90lq917835lq9", "call_abc-DEF_123"]
    assert [u for u, _ in pairs(to_anthropic(conversation(ids)))] == ids


def test_an_anthropic_conversation_round_trips_byte_for_byte() -> None:
    raw = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ]
    _, out = to_anthropic(from_anthropic(raw))
    assert json.dumps(out) == json.dumps(raw)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=60), min_size=1, max_size=8, unique=True))
def test_any_ids_map_to_valid_paired_stable_and_distinct_ids(ids: list[str]) -> None:
    msgs = conversation(ids)
    first = to_anthropic(msgs)
    second = to_anthropic(list(msgs))
    assert json.dumps(first.messages) == json.dumps(second.messages)  # stable across calls
    found = pairs(first)
    assert [u for u, _ in found] == [anthropic_id(i) for i in ids]
    assert all(use == result and VALID.fullmatch(use) for use, result in found)
    assert len({u for u, _ in found}) == len(ids)  # collision-free


@given(st.text(min_size=1, max_size=200), st.text(min_size=1, max_size=200))
def test_the_mapping_is_a_function_of_the_id_and_keeps_distinct_ids_apart(a: str, b: str) -> None:
    assert VALID.fullmatch(anthropic_id(a))
    assert anthropic_id(a) == anthropic_id(a)
    if a != b:
        assert anthropic_id(a) != anthropic_id(b)


def test_a_later_conversation_keeps_the_ids_of_its_prefix() -> None:
    ids = ["functions.bash:0", "functions.bash:1", "call 2"]
    short = pairs(to_anthropic(conversation(ids[:2])))
    longer = pairs(to_anthropic(conversation(ids)))
    assert longer[:2] == short
