"""The LangChain v1 middleware, run inside a real ``create_agent`` graph with a scripted model.

The model is a real ``BaseChatModel`` subclass that asks for one tool call per turn and records
every request it is sent, so the assertions are on what the model actually received.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from compaction import CompactionPipeline, Strategy, TiktokenCounter, events, validate
from compaction.integrations.langchain import CompactionMiddleware, from_langchain

TASK = "Find where the config parser drops the last line of every file, and fix it."
SYSTEM = "You are a careful coding agent. Use read_file to inspect files."
WINDOW = 12_000
STEPS = 40


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    body = "\n".join(f"{path}:{n}: value_{n} = parse(line_{n}) # keep going" for n in range(40))
    return body


class ScriptedModel(BaseChatModel):
    """Calls ``read_file`` for ``steps`` turns, then answers; records every request."""

    steps: int = STEPS
    received: list[list[BaseMessage]] = []  # noqa: RUF012  (a pydantic field)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.received.append(list(messages))
        turn = len(self.received)
        if turn > self.steps:
            message = AIMessage("The parser skipped the final line; fixed in config.py.")
        else:
            call = {"name": "read_file", "args": {"path": f"src/mod_{turn}.py"}, "id": f"c{turn}"}
            message = AIMessage(f"Reading module {turn}.", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])


def run_agent(middleware: list[Any], *, use_async: bool = False) -> tuple[ScriptedModel, dict]:
    model = ScriptedModel(received=[])
    agent = create_agent(model, [read_file], system_prompt=SYSTEM, middleware=middleware)
    inputs = {"messages": [HumanMessage(TASK)]}
    config = {"recursion_limit": 500}
    if use_async:
        state = asyncio.run(agent.ainvoke(inputs, config))
    else:
        state = agent.invoke(inputs, config)
    return model, state


def shape(messages: Sequence[BaseMessage]) -> list[tuple[Any, ...]]:
    return [
        (m.type, m.content, getattr(m, "tool_call_id", None), repr(getattr(m, "tool_calls", None)))
        for m in messages
    ]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_agent_requests_fit_keep_pairs_and_task_while_state_keeps_everything(use_async: bool):
    counter = TiktokenCounter()
    middleware = CompactionMiddleware(window=WINDOW, counter=counter)
    model, state = run_agent([middleware], use_async=use_async)
    baseline_model, baseline_state = run_agent([], use_async=use_async)

    assert len(model.received) == STEPS + 1
    sizes = []
    for request in model.received:
        converted = from_langchain(request)
        validate(converted)  # every call/result pair whole, no orphan
        assert converted[0].role == "system" and converted[0].content == SYSTEM
        assert any(m.role == "user" and m.content == TASK for m in converted)
        sizes.append(counter.count_messages(converted) + middleware.compactor().tool_tokens)
        assert sizes[-1] <= WINDOW
    baseline = [counter.count_messages(from_langchain(r)) for r in baseline_model.received]
    assert max(baseline) > WINDOW  # without compaction the run would not have fit
    assert sum(sizes) < sum(baseline)
    stats = middleware.compactor().stats
    assert stats.compactions >= 1
    assert middleware.compactor().tool_tokens > 0  # read_file's schema is in the budget

    # The graph state is the whole run, exactly what it is without the middleware.
    assert shape(state["messages"]) == shape(baseline_state["messages"])
    assert len(state["messages"]) == 1 + 2 * STEPS + 1


def test_prompt_prefix_is_stable_between_compactions():
    middleware = CompactionMiddleware(window=WINDOW, counter=TiktokenCounter())
    model, _ = run_agent([middleware])
    rewrites = 0
    for before, after in zip(model.received, model.received[1:], strict=False):
        if after[: len(before)] != before:
            rewrites += 1
    # The prompt changes only where a compaction was taken; every other request extends the
    # previous one, which is what a provider's prompt cache needs.
    compactions = middleware.compactor().stats.compactions
    assert rewrites == compactions >= 1
    # Hysteresis: compacting down to 40% of the window leaves room for several more steps.
    assert compactions <= len(model.received) // 3


def test_threads_have_their_own_compactor():
    middleware = CompactionMiddleware(window=WINDOW, counter=TiktokenCounter())
    model = ScriptedModel(received=[], steps=3)
    agent = create_agent(model, [read_file], middleware=[middleware], checkpointer=InMemorySaver())
    for thread in ("a", "b"):
        model.received.clear()  # the script starts again for each conversation
        agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": thread}})
    a, b = middleware.compactor("a"), middleware.compactor("b")
    assert a is not None and b is not None and a is not b
    assert a.stats.calls == b.stats.calls == 4


class Broken(Strategy):
    """A layer that fails, as a broken summariser endpoint would."""

    name = "broken"

    def rewrite(self, messages: Sequence[Any], target: int, **kwargs: Any) -> Any:
        raise RuntimeError("summariser down")


def test_a_failing_ladder_never_fails_the_model_call():
    middleware = CompactionMiddleware(CompactionPipeline().run(Broken()), window=WINDOW)
    model, state = run_agent([middleware])
    _, baseline_state = run_agent([])
    assert shape(state["messages"]) == shape(baseline_state["messages"])
    # The requests went out uncompacted: the ladder was asked and gave nothing.
    assert shape(model.received[-1][1:]) == shape(baseline_state["messages"][:-1])
    stats = middleware.compactor().stats
    assert stats.attempts >= 1 and stats.compactions == 0


def test_a_message_it_cannot_read_sends_the_request_as_it_came():
    failures: list[dict[str, Any]] = []

    def on_failed(sender: Any, **kw: Any) -> None:
        failures.append(kw)

    middleware = CompactionMiddleware(window=WINDOW)
    model = ScriptedModel(received=[], steps=1)
    agent = create_agent(model, [read_file], middleware=[middleware])
    legacy = FunctionMessage("42", name="old_function")  # no call id: not a tool result
    events.failed.connect(on_failed)
    try:
        state = agent.invoke({"messages": [HumanMessage(TASK), legacy]})
    finally:
        events.failed.disconnect(on_failed)
    assert state["messages"][-1].content.startswith("The parser")
    assert model.received[0][-1] is legacy or model.received[0][-1] == legacy
    assert failures and "FunctionMessage" in str(failures[0]["error"])


def test_window_from_the_model_profile_or_a_clear_error():
    model = ScriptedModel(received=[], steps=1, profile={"max_input_tokens": 50_000})
    middleware = CompactionMiddleware()
    create_agent(model, [read_file], middleware=[middleware]).invoke(
        {"messages": [HumanMessage(TASK)]}
    )
    assert middleware.compactor().window == 50_000

    bare = ScriptedModel(received=[], steps=1)
    # Without a window the middleware cannot compact: the run fails at its first model call
    # (tests/test_integration_langchain_requests.py has the whole story).
    with pytest.raises(ValueError, match="context window"):
        create_agent(bare, [read_file], middleware=[CompactionMiddleware()]).invoke(
            {"messages": [HumanMessage(TASK)]}
        )
    with pytest.raises(ValueError, match="window"):
        CompactionMiddleware(window=0)


def test_rewritten_messages_keep_their_langchain_fields():
    middleware = CompactionMiddleware(window=WINDOW, counter=TiktokenCounter())
    model, state = run_agent([middleware])
    by_id = {m.id: m for m in state["messages"]}
    rewritten = [
        m
        for m in model.received[-1]
        if isinstance(m, ToolMessage) and m.content != by_id[m.id].content
    ]
    assert rewritten, "expected ToolResults to rewrite old tool output"
    for m in rewritten:
        original = by_id[m.id]
        assert m.tool_call_id == original.tool_call_id and m.name == original.name
        assert m.response_metadata["compaction"]["strategy"] == "tool_results"


def test_conversations_are_bounded_least_recently_used_first_out():
    middleware = CompactionMiddleware(window=WINDOW, max_threads=2)
    model = ScriptedModel(received=[], steps=0)
    agent = create_agent(model, [read_file], middleware=[middleware], checkpointer=InMemorySaver())
    for thread in ("a", "b", "a", "c"):
        agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": thread}})
    assert middleware.compactor("b") is None  # the least recently used went first
    assert middleware.compactor("a") is not None and middleware.compactor("c") is not None
    with pytest.raises(ValueError, match="max_threads"):
        CompactionMiddleware(window=WINDOW, max_threads=0)


class ReportingModel(ScriptedModel):
    """Reports twice the local count as its input tokens, as a provider whose tokenizer sees
    more than ours would (images, another encoding)."""

    counter: Any = None

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kw)
        local = self.counter.count_messages(from_langchain(messages))
        message = result.generations[0].message
        message.usage_metadata = {
            "input_tokens": 2 * local,
            "output_tokens": 1,
            "total_tokens": 2 * local + 1,
        }
        return result


def test_the_providers_usage_anchors_the_estimate():
    counter = TiktokenCounter()
    middleware = CompactionMiddleware(window=WINDOW, counter=counter, count_tools=False)
    model = ReportingModel(received=[], counter=counter)
    create_agent(model, [read_file], system_prompt=SYSTEM, middleware=[middleware]).invoke(
        {"messages": [HumanMessage(TASK)]}, {"recursion_limit": 500}
    )
    stats = middleware.compactor().stats
    assert stats.compactions >= 1
    # The provider sees twice what we count, so the requests are kept at half the window by
    # our count; without the anchor they would grow to 70% of it.
    local = [counter.count_messages(from_langchain(r)) for r in model.received]
    assert max(local) <= WINDOW // 2
    plain = CompactionMiddleware(window=WINDOW, counter=counter, count_tools=False)
    unanchored = ScriptedModel(received=[])
    create_agent(unanchored, [read_file], system_prompt=SYSTEM, middleware=[plain]).invoke(
        {"messages": [HumanMessage(TASK)]}, {"recursion_limit": 500}
    )
    assert max(counter.count_messages(from_langchain(r)) for r in unanchored.received) > (
        WINDOW // 2
    )
