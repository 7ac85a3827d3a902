"""One pydantic-ai ``Compaction`` capability in a real ``Agent``, fed conversations that share
a beginning but are not extensions of each other: each request must be exactly what a fresh
capability would send for that conversation (issue 20 item 1, issue 21 item 6)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from compaction import TiktokenCounter
from compaction.integrations.pydantic_ai import Compaction

INSTRUCTIONS = "You are a bank's support agent."
GREETING = "Hello, I need help with my account."
WINDOW = 3_000


def conversation(who: str, secret: str) -> list[ModelMessage]:
    """A long history: one greeting first, shared by every user."""
    messages: list[ModelMessage] = [ModelRequest([UserPromptPart(GREETING)])]
    for i in range(25):
        detail = f"{who} note {i}: account {who}-{i}, code {secret}. " * 6
        messages += [
            ModelResponse([TextPart(f"Noted {i}.")]),
            ModelRequest([UserPromptPart(detail)]),
        ]
    return [*messages, ModelResponse([TextPart("Noted.")])]


def sent(capability: Compaction, *histories: list[ModelMessage]) -> list[Any]:
    """What the model received for the last history, after running them all in turn."""
    received: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(list(messages))
        return ModelResponse([TextPart("ok")])

    agent = Agent(FunctionModel(model), instructions=INSTRUCTIONS, capabilities=[capability])
    for history in histories:
        # One conversation id for all: the worst case, every run lands on the same state.
        agent.run_sync("continue", message_history=history, conversation_id="same")
    return [
        [(type(p).__name__, getattr(p, "content", None)) for p in m.parts] for m in received[-1]
    ]


def capability() -> Compaction:
    return Compaction(window=WINDOW, counter=TiktokenCounter(), observe_usage=False)


def test_two_conversations_through_one_capability_never_share_a_view():
    a, b = conversation("alice", "4321"), conversation("bob", "9876")
    shared = capability()
    sent(shared, a)
    follower = shared.compactor("same")
    assert follower is not None and follower.stats.compactions >= 1  # A has a view to leak
    got = sent(shared, a, b)
    assert got == sent(capability(), b)
    assert "4321" not in repr(got) and "alice" not in repr(got)


def test_a_history_edited_in_the_middle_is_not_taken_for_an_extension():
    a = conversation("alice", "4321")
    edited = list(a)
    edited[22] = ModelRequest([UserPromptPart("alice note 10 was wrong: the code is 5555. " * 6)])
    edited += [ModelResponse([TextPart("ok")]), ModelRequest([UserPromptPart("one more thing")])]
    edited += [ModelResponse([TextPart("Noted.")])]
    got = sent(capability(), a, edited)
    assert got == sent(capability(), edited)
