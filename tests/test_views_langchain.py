"""One ``CompactionMiddleware`` in a real ``create_agent`` graph, fed conversations that share
a beginning but are not extensions of each other: each request must be exactly what a fresh
middleware would send for that conversation (issue 20 item 1, issue 21 item 6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from compaction import TiktokenCounter
from compaction.integrations.langchain import CompactionMiddleware

SYSTEM = "You are a bank's support agent."
GREETING = "Hello, I need help with my account."
WINDOW = 3_000


class Recorder(BaseChatModel):
    """Answers "ok"; records every request it is sent."""

    received: list[list[BaseMessage]] = []  # noqa: RUF012  (a pydantic field)

    @property
    def _llm_type(self) -> str:
        return "recorder"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.received.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage("ok"))])


def conversation(who: str, secret: str) -> list[BaseMessage]:
    """A long conversation: one greeting and "continue" at the end, shared by every user."""
    messages: list[BaseMessage] = [HumanMessage(GREETING)]
    for i in range(25):
        detail = f"{who} note {i}: account {who}-{i}, code {secret}. " * 6
        messages += [HumanMessage(detail), AIMessage(f"Noted {i}.")]
    return [*messages, HumanMessage("continue")]


def sent(middleware: CompactionMiddleware, *histories: list[BaseMessage]) -> list[Any]:
    """What the model received for the last history, after running them all in turn."""
    model = Recorder(received=[])
    agent = create_agent(model, [], system_prompt=SYSTEM, middleware=[middleware])
    for history in histories:
        model.received.clear()
        agent.invoke({"messages": history})
    return shape(model.received[-1])


def shape(messages: Sequence[BaseMessage]) -> list[Any]:
    return [(m.type, m.content) for m in messages]


def middleware() -> CompactionMiddleware:
    return CompactionMiddleware(window=WINDOW, counter=TiktokenCounter())


def test_two_conversations_through_one_middleware_never_share_a_view():
    a, b = conversation("alice", "4321"), conversation("bob", "9876")
    shared = middleware()
    sent(shared, a)
    follower = shared.compactor(None)
    assert follower is not None and follower.stats.compactions >= 1  # A has a view to leak
    got = sent(shared, a, b)
    assert got == sent(middleware(), b)
    assert not any("alice" in str(content) or "4321" in str(content) for _, content in got)


def test_a_history_edited_in_the_middle_is_not_taken_for_an_extension():
    a = conversation("alice", "4321")
    edited = list(a)
    edited[21] = HumanMessage("alice note 10 was wrong: the code is 5555. " * 6)
    edited += [AIMessage("ok"), HumanMessage("continue again")]
    shared = middleware()
    got = sent(shared, a, edited)
    assert got == sent(middleware(), edited)
