"""The LangChain middleware between compactions: each request is written from the compacted
view once, then extended by what the agent appended, and it stays what a full conversion of
the view gives.

Driven through ``wrap_model_call`` with a real ``ModelRequest``, as LangChain's agent calls it.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from compaction import TiktokenCounter, events
from compaction.integrations.langchain import CompactionMiddleware, to_langchain

SYSTEM = SystemMessage("You are a coding agent.")
WINDOW = 6_000


def step(i: int) -> list[BaseMessage]:
    call = {"name": "bash", "args": {"cmd": f"make target_{i}"}, "id": f"c{i}", "type": "tool_call"}
    out = "".join(f"line {j} of step {i}: compiled module_{i}_{j}\n" for j in range(12))
    return [
        AIMessage(f"Building target {i}.", tool_calls=[call]),
        ToolMessage(out, tool_call_id=f"c{i}"),
    ]


class Agent:
    def __init__(self) -> None:
        self.middleware = CompactionMiddleware(window=WINDOW, counter=TiktokenCounter())
        self.history: list[BaseMessage] = [HumanMessage("Fix the build; never touch vendor/.")]
        self.sent: list[list[BaseMessage]] = []

    def call(self) -> list[BaseMessage]:
        request = ModelRequest(
            model=None,  # type: ignore[arg-type]  (never called)
            messages=self.history,
            system_message=SYSTEM,
            tools=[],
            state={"messages": self.history},  # type: ignore[typeddict-item]
            runtime=None,  # type: ignore[arg-type]
        )

        def handler(r: Any) -> ModelResponse:
            self.sent.append(list(r.messages))
            return ModelResponse(result=[AIMessage("ok")])

        self.middleware.wrap_model_call(request, handler)
        return self.sent[-1]


def fully_written(middleware: CompactionMiddleware) -> list[BaseMessage]:
    """The last request as a fresh conversion of the view gives it (system message apart)."""
    return to_langchain(list(middleware.last_request[1:]))


def compacted_agent() -> tuple[Agent, list[Any]]:
    agent = Agent()
    compactions: list[Any] = []

    def seen(sender: Any, **kw: Any) -> None:
        compactions.append(sender)

    events.compacted.connect(seen)
    try:
        i = 0
        while not compactions:
            agent.history = agent.history + step(i)
            agent.call()
            i += 1
        return agent, compactions
    finally:
        events.compacted.disconnect(seen)


def test_requests_between_compactions_extend_the_last_one_with_the_same_objects():
    agent, _ = compacted_agent()
    first = agent.sent[-1]
    compactions = agent.middleware.compactor().stats.compactions
    for i in range(100, 103):
        agent.history = agent.history + step(i)
        sent = agent.call()
        assert agent.middleware.compactor().stats.compactions == compactions
        # The compacted prefix is the very objects sent last time; the appended steps are the
        # state's own objects.
        assert all(a is b for a, b in zip(first, sent, strict=False))
        appended = agent.history[-2 * (i - 99) :]
        assert all(a is b for a, b in zip(sent[len(first) :], appended, strict=True))
        assert sent == fully_written(agent.middleware)
        assert sent != agent.history  # still compacted


def test_an_edited_history_is_written_afresh():
    agent, _ = compacted_agent()
    task = agent.history[0]
    assert agent.sent[-1][0] is task  # the task is kept in front, as the state's object
    edited = HumanMessage("Fix the build; never touch vendor/ or dist/.")
    agent.history = [edited, *agent.history[1:], *step(200)]
    sent = agent.call()
    # What goes out stands for the history the agent holds now, not the one written before.
    assert sent[0] is edited
    assert task not in sent
    assert sent == fully_written(agent.middleware)
