"""A wrong type in a config or a constructor is an error that names the field and says what it
expects, never a raw Python error ("'int' object is not iterable", "unhashable type") or a
wrong one ("missing 'strategy'" for a strategy that is there but is not a name)."""

from __future__ import annotations

import pytest

from compaction import (
    CompactionPipeline,
    ConfigError,
    Message,
    ToolCall,
    ToolResults,
    Truncate,
    ladder_from_config,
    registry,
)
from compaction.trigger import Compactor


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"use": [{"strategy": 5}]}, r"use\[0\]: 'strategy' must be a strategy name .*got int 5"),
        ({"run": {"strategy": 5}}, r"run: 'strategy' must be a strategy name .*got int 5"),
        ({"use": [{"strategy": ["truncate"]}]}, r"'strategy' must be a strategy name .*got list"),
        ({"use": [{"max_chars": 5}]}, r"use\[0\]: missing 'strategy'"),
        ({"strategy": "truncate"}, r"'strategy' goes inside an entry"),
    ],
)
def test_a_strategy_that_is_not_a_name_is_called_so(config, expected) -> None:
    with pytest.raises(ConfigError, match=expected):
        ladder_from_config(config)


def test_a_registry_key_that_is_not_a_name_is_called_so() -> None:
    with pytest.raises(KeyError, match="a strategy key is a name"):
        registry.create({"strategy": 5})  # type: ignore[arg-type]


@pytest.mark.parametrize("labels", [[1, 2], "ab", 5, ("agent", "a1")])
def test_labels_that_are_not_a_mapping_are_named(labels) -> None:
    with pytest.raises(TypeError, match=r"labels must be a mapping of tag names to values"):
        CompactionPipeline().compact([Message("user", "hi")], target=10, labels=labels)
    with pytest.raises(TypeError, match=r"labels must be a mapping"):
        Compactor(CompactionPipeline(), 1000, labels=labels)


@pytest.mark.parametrize("value", [5, 2.5, {"bash": True}, None])
def test_exclude_tools_names_what_it_expects(value) -> None:
    if value is None:
        assert ToolResults(exclude_tools=()).exclude_tools == frozenset()
        return
    with pytest.raises(TypeError, match=r"exclude_tools must be a tool name or a list of tool"):
        ToolResults(exclude_tools=value)


def test_truncate_roles_names_what_it_expects() -> None:
    with pytest.raises(TypeError, match=r"Truncate roles must be a role or a list of roles"):
        Truncate(max_chars=100, roles=5)


@pytest.mark.parametrize("value", [5, "call_1", {"id": "a"}, ToolCall("a", "f", "{}")])
def test_tool_calls_that_are_not_a_list_of_calls_are_named(value) -> None:
    with pytest.raises(TypeError, match=r"Message.tool_calls must be a list of ToolCall"):
        Message("assistant", "x", tool_calls=value)


@pytest.mark.parametrize("role", ["tool", "user"])
@pytest.mark.parametrize("value", [5, 1.5, b"id", ["a"]])
def test_a_tool_call_id_that_is_not_text_is_named(role, value) -> None:
    with pytest.raises(TypeError, match=r"Message.tool_call_id must be a str .*got"):
        Message(role, "x", tool_call_id=value)
