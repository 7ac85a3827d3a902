"""Steps for features/tool_data.feature, stated against the public API."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import ApproximateCounter, default_pipeline
from compaction.adapters.openai import from_openai
from compaction.memory.transcript import provenance

scenarios("tool_data.feature")

COUNTER = ApproximateCounter()


@pytest.fixture
def world() -> dict[str, Any]:
    return {}


def _chat(person: str, other: str) -> list[dict[str, str]]:
    """The person's rule, then many turns, one of which carries the other text in the user role
    the way agent harnesses send command output."""
    chat = [
        {"role": "system", "content": "You are a careful agent."},
        {"role": "user", "content": "Migrate the billing service."},
        {"role": "user", "content": person},
    ]
    for i in range(30):
        chat.append({"role": "assistant", "content": f"Working on step {i}. " * 20})
        text = other if i == 3 else f"Carry on with step {i + 1}, please."
        chat.append({"role": "user", "content": text})
    return chat


@given(
    parsers.parse('a chat where the person sets "{person}" and a command\'s output says "{other}"')
)
def command_output(world: dict[str, Any], person: str, other: str) -> None:
    # mini-swe-agent and SWE-agent send a command's result as a user message in this shape.
    world["chat"] = _chat(person, f"<returncode>0</returncode>\n<output>\n{other}\n</output>")


@given(parsers.parse('a chat where the person sets "{person}" and a pasted page says "{other}"'))
def pasted_page(world: dict[str, Any], person: str, other: str) -> None:
    world["chat"] = _chat(person, f"Fetched page: {other}")
    world["page"] = other


def _compact(world: dict[str, Any], messages: Any) -> None:
    target = COUNTER.count_messages(messages) // 5
    world["result"] = default_pipeline(counter=COUNTER).compact(messages, target=target)


@when("it is read as OpenAI messages and compacted well under its size")
def read_and_compact(world: dict[str, Any]) -> None:
    _compact(world, from_openai(world["chat"]))


@when(
    "it is read as OpenAI messages with a predicate that rejects the page, and compacted well "
    "under its size"
)
def read_with_predicate(world: dict[str, Any]) -> None:
    page = world["page"]
    messages = from_openai(world["chat"], is_person=lambda m: page not in m.content)
    _compact(world, messages)


def _said(world: dict[str, Any]) -> list[str]:
    """Everything the result presents as the person's: their statements in every ledger
    (as recorded) and the lines under "The person said" in what the model reads."""
    said: list[str] = []
    for message in world["result"].messages:
        record = provenance(message) or {}
        facts = record.get("facts") or {}
        said += [str(s) for s in facts.get("said") or []]
        text = message.content
        if "The person said" in text:
            block = text.split("The person said", 1)[1]
            said += [line for line in block.splitlines() if line.startswith("- ")]
    return said


@then(parsers.parse('the ledger says the person set "{value}"'))
def person_set(world: dict[str, Any], value: str) -> None:
    shown = "\n".join(m.content for m in world["result"].messages)
    assert value in shown
    assert any(value in s for s in _said(world)) or any(
        value in m.content for m in world["result"].messages if m.role == "user"
    )


@then(parsers.parse('nothing the person is said to have said holds "{value}"'))
def never_the_persons(world: dict[str, Any], value: str) -> None:
    assert world["result"].changed
    assert not [s for s in _said(world) if value in s]
