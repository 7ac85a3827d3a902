"""What identifies a step reaches the model whole through the drop-ins, with the real frameworks.

An agent reads six ~3,000-token files through ``read_file(path=...)`` on a 12,000-token window
(the loop of the report): from the third call on each request is compacted, the newest step is
protected and the aim out of reach, and the last resort used to cut the ``path`` of the older
calls to ``""``. Here the requests are recorded by each framework's own fake model, and every
tool call the model is sent is the call in the framework's own history, path and all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from compaction import TiktokenCounter, validate

WINDOW = 12_000
#: The files each turn reads: the third reads two at once, so that the newest step alone is over
#: the compaction's aim (40% of the window) and the last resort is reached.
TURNS = [("mod_1.py",), ("mod_2.py",), ("mod_3.py", "mod_4.py"), ("mod_5.py",), ("mod_6.py",)]
BODY = "\n".join(f"def f{i}(x):\n    return x * {i}  # a line of module code" for i in range(160))


def test_langchain_sends_the_ai_messages_in_its_state():
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    from compaction.integrations.langchain import CompactionMiddleware, from_langchain

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return f"# {path}\n" + BODY

    class Reader(BaseChatModel):
        """Reads mod_1.py .. mod_6.py, one call a turn, then answers; records each request."""

        received: list[list[BaseMessage]] = []  # noqa: RUF012  (a pydantic field)

        @property
        def _llm_type(self) -> str:
            return "reader"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Reader:
            return self

        def _generate(self, messages: list[BaseMessage], *a: Any, **kw: Any) -> ChatResult:
            self.received.append(list(messages))
            turn = len(self.received)
            if turn > len(TURNS):
                message = AIMessage("Each module multiplies its argument.")
            else:
                calls = [
                    {"name": "read_file", "args": {"path": p}, "id": f"c{turn}_{j}"}
                    for j, p in enumerate(TURNS[turn - 1])
                ]
                message = AIMessage("", tool_calls=calls)
            return ChatResult(generations=[ChatGeneration(message=message)])

    counter = TiktokenCounter()
    middleware = CompactionMiddleware(window=WINDOW, counter=counter)
    model = Reader(received=[])
    agent = create_agent(model, [read_file], middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage("Summarise what mod_1.py .. mod_6.py do.")]})
    assert middleware.compactor().stats.compactions >= 2
    in_state = {
        m.tool_calls[0]["id"]: m
        for m in state["messages"]
        if isinstance(m, AIMessage) and m.tool_calls
    }
    shown = 0
    for request in model.received:
        validate(from_langchain(request))
        for message in request:
            if isinstance(message, AIMessage) and message.tool_calls:
                assert message == in_state[message.tool_calls[0]["id"]]
                shown += 1
    assert shown >= 2 * len(TURNS)  # the older calls were sent again after a compaction


def test_pydantic_ai_sends_the_tool_calls_in_its_history():
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from compaction.integrations.pydantic_ai import Compaction

    received: list[list[Any]] = []

    def script(messages: list[Any], info: Any) -> ModelResponse:
        received.append(list(messages))
        turn = len(received)
        if turn > len(TURNS):
            return ModelResponse([TextPart("Each module multiplies its argument.")])
        return ModelResponse(
            [
                ToolCallPart("read_file", {"path": p}, f"c{turn}_{j}")
                for j, p in enumerate(TURNS[turn - 1])
            ]
        )

    capability = Compaction(window=WINDOW, counter=TiktokenCounter(), observe_usage=False)
    agent = Agent(FunctionModel(script), capabilities=[capability])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"# {path}\n" + BODY

    result = asyncio.run(agent.run("Summarise what mod_1.py .. mod_6.py do."))
    assert capability.compactor(result.conversation_id).stats.compactions >= 2
    made = {
        part.tool_call_id: part.args_as_dict()
        for message in result.all_messages()
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }
    shown = 0
    for request in received:
        for message in request:
            if isinstance(message, ModelResponse):
                for part in message.parts:
                    if isinstance(part, ToolCallPart):
                        assert part.args_as_dict() == made[part.tool_call_id]
                        shown += 1
    assert shown >= 2 * len(TURNS)


def test_agents_sdk_sends_the_calls_the_model_made(tmp_path):
    import json
    import os

    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    from compaction.adapters.openai import from_openai
    from compaction.integrations.openai_agents import CompactionFilter
    from tests.model_server import ScriptedChatServer, text_reply

    agents.set_tracing_disabled(True)
    made: dict[str, str] = {}
    asked: list[int] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(1)
        turn = len(asked)
        if turn > len(TURNS):
            return text_reply("Each module multiplies its argument.")
        calls = []
        for j, path in enumerate(TURNS[turn - 1]):
            call_id = f"call_{turn}_{j}"
            made[call_id] = json.dumps({"path": path})
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": made[call_id]},
                }
            )
        return {"role": "assistant", "content": None, "tool_calls": calls}

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"# {path}\n" + BODY

    counter = TiktokenCounter()
    flt = CompactionFilter(window=WINDOW, counter=counter)
    with ScriptedChatServer(reply) as server:
        model = agents.OpenAIChatCompletionsModel(
            model="local-model",
            openai_client=AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0),
        )
        agent = agents.Agent(name="reader", instructions="Read.", tools=[read_file], model=model)
        run_config = agents.RunConfig(call_model_input_filter=flt)
        asyncio.run(
            agents.Runner.run(agent, "Summarise mod_1.py .. mod_6.py.", run_config=run_config)
        )
        requests = server.requests
    assert flt.compactor.stats.compactions >= 2
    shown = 0
    for body in requests:
        validate(from_openai(body["messages"]))
        for message in body["messages"]:
            for call in message.get("tool_calls") or ():
                assert json.loads(call["function"]["arguments"]) == json.loads(made[call["id"]])
                shown += 1
    assert shown >= 2 * len(TURNS)
