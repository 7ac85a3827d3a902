"""``recall`` in every drop-in, end to end with the real frameworks and their own test models.

One scripted "brain" drives every framework: it reads files until a request it receives holds
a recall id (a cleared tool output, a cut, a note), then calls ``recall`` with that id, and
records the tool result it gets back. The assertions are on what the model received: the
original text of a message that the request carrying the id no longer held whole.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

import pytest

from tests.model_server import ScriptedChatServer, text_reply, tool_call_reply

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")

WINDOW = 4000
STEPS = 30
TASK = "Find which module defines the largest constant."
RECALL_ID = re.compile(r"recall id ([A-Za-z0-9:_\-]+)")


def body(path: str) -> str:
    """What ``read_file(path)`` answers: long, and different for every path."""
    return "\n".join(f"{path}:{n}: CONST_{n} = {len(path) * n} # module data" for n in range(45))


class Brain:
    """Reads files, then recalls the first id it is shown, then stops."""

    def __init__(self) -> None:
        self.turn = 0
        self.asked: str | None = None
        self.shown: list[str] = []  # the request that carried the id, as texts
        self.answer: str | None = None

    def next(self, texts: list[str]) -> tuple[str, dict[str, str]] | None:
        """The next tool call (name, arguments), or None for the final answer."""
        if self.asked is not None:
            self.answer = texts[-1]
            return None
        for text in texts:
            found = RECALL_ID.search(text)
            if found:
                self.asked, self.shown = found.group(1), texts
                return "recall", {"id": self.asked}
        self.turn += 1
        if self.turn > STEPS:
            return None
        return "read_file", {"path": f"src/mod_{self.turn}.py"}

    def check(self) -> None:
        assert self.asked is not None, "no recall id ever reached the model"
        assert self.answer is not None
        # The answer is an original tool output, which the request that showed the id did not
        # hold whole (it had been cleared or cut): recall gave back what compaction took.
        paths = [f"src/mod_{n}.py" for n in range(1, self.turn + 1)]
        originals = [body(p) for p in paths]
        assert self.answer in originals, self.answer[:300]
        assert not any(self.answer == text for text in self.shown)


# -- LangChain ---------------------------------------------------------------------------------


def test_langchain_middleware_adds_recall() -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    from compaction.integrations.langchain import CompactionMiddleware

    brain = Brain()

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
            return self

        def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
            step = brain.next([m.text for m in messages])
            if step is None:
                message = AIMessage("done")
            else:
                call = {"name": step[0], "args": step[1], "id": f"c{brain.turn}{step[0]}"}
                message = AIMessage("", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=message)])

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    middleware = CompactionMiddleware(window=WINDOW, recall=True)
    agent = create_agent(Scripted(), [read_file], middleware=[middleware])
    agent.invoke({"messages": [HumanMessage(TASK)]}, {"recursion_limit": 200})
    brain.check()


def test_langchain_without_recall_adds_no_tool() -> None:
    pytest.importorskip("langchain.agents")
    from compaction.integrations.langchain import CompactionMiddleware

    assert CompactionMiddleware(window=WINDOW).tools == []


# -- pydantic-ai -------------------------------------------------------------------------------


def test_pydantic_ai_capability_contributes_recall() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from compaction.integrations.pydantic_ai import Compaction

    brain = Brain()

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert "recall" in {t.name for t in info.function_tools}
        texts = [
            str(getattr(part, "content", ""))
            for m in messages
            for part in m.parts
            if not isinstance(part, ToolCallPart)
        ]
        step = brain.next(texts)
        if step is None:
            return ModelResponse([TextPart("done")])
        return ModelResponse([ToolCallPart(step[0], step[1], f"c{brain.turn}{step[0]}")])

    agent = Agent(FunctionModel(model), capabilities=[Compaction(window=WINDOW, recall=True)])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    agent.run_sync(TASK)
    brain.check()


# -- the OpenAI Agents SDK ---------------------------------------------------------------------


def _chat_brain(brain: Brain) -> Any:
    def reply(request: dict[str, Any]) -> Any:
        texts = [str(m.get("content") or "") for m in request["messages"]]
        step = brain.next(texts)
        if step is None:
            return text_reply("done")
        return tool_call_reply(step[0], step[1], f"call_{brain.turn}_{step[0]}")

    return reply


def test_agents_filter_offers_recall_tool() -> None:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    from compaction.integrations.openai_agents import CompactionFilter

    agents.set_tracing_disabled(True)
    brain = Brain()

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    compaction = CompactionFilter(window=WINDOW, recall=True)
    with ScriptedChatServer(_chat_brain(brain)) as server:
        model = agents.OpenAIChatCompletionsModel(
            model="local-model",
            openai_client=AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0),
        )
        agent = agents.Agent(
            name="a", instructions="Use read_file.", tools=[read_file, compaction.recall_tool]
        )
        agent.model = model
        config = agents.RunConfig(call_model_input_filter=compaction)
        asyncio.run(agents.Runner.run(agent, TASK, run_config=config, max_turns=STEPS + 5))
        names = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert "recall" in names
    brain.check()


def test_agents_recall_tool_needs_the_option() -> None:
    pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionFilter

    with pytest.raises(ValueError, match="recall=True"):
        _ = CompactionFilter(window=WINDOW).recall_tool


# -- LiteLLM -----------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")
def test_litellm_hook_gives_spec_and_handler() -> None:
    litellm = pytest.importorskip("litellm")
    from compaction.integrations.litellm import CompactionHook

    litellm.telemetry = False
    brain = Brain()
    hook = CompactionHook(window=WINDOW, recall=True)
    recall = hook.recall_tool
    assert recall is not None
    read = {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    messages: list[Any] = [{"role": "user", "content": TASK}]
    saved = list(litellm.callbacks)
    litellm.callbacks = [hook]

    async def loop(server: ScriptedChatServer) -> None:
        while True:
            response = await litellm.acompletion(
                model="openai/local-model",
                messages=messages,
                tools=[read, recall.spec],
                api_base=server.base_url,
                api_key="t",
            )
            message = response.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                return
            for call in message.tool_calls:
                if call.function.name == "recall":
                    messages.append(recall.handle(call, messages))
                else:
                    path = json.loads(call.function.arguments)["path"]
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id, "content": body(path)}
                    )

    try:
        with ScriptedChatServer(_chat_brain(brain)) as server:
            asyncio.run(loop(server))
    finally:
        litellm.callbacks = saved
    brain.check()


# -- the shared lookup -------------------------------------------------------------------------


def test_unknown_bad_and_oversized_ids_are_answered_plainly() -> None:
    from compaction import Message
    from compaction.integrations.recall_tools import MessagesRecall, recall_answer
    from compaction.memory.transcript import message_ref

    history = [Message("user", "the task"), Message("assistant", "the answer")]
    assert recall_answer(message_ref(history[1]), history) == "the answer"
    assert "no message with id" in recall_answer("sha1:0000", history)
    assert "non-empty string" in recall_answer(None, history)
    assert "at most" in recall_answer("x" * 10_000, history)
    tool = MessagesRecall()
    openai_history = [{"role": "user", "content": "the task"}]
    ref = message_ref(Message("user", "the task"))
    assert tool.answer(json.dumps({"id": ref}), openai_history) == "the task"
    assert "non-empty string" in tool.answer("{not json", openai_history)
    answered = tool.handle({"id": "c1", "function": {"arguments": {"id": ref}}}, openai_history)
    assert answered == {"role": "tool", "tool_call_id": "c1", "content": "the task"}


def test_every_original_in_a_history_is_recalled_by_its_ref() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    from compaction import Message
    from compaction.integrations.recall_tools import find_original
    from compaction.memory.transcript import message_ref

    texts = st.text(min_size=1, max_size=40)
    messages = st.lists(
        st.builds(Message, st.sampled_from(["user", "assistant"]), texts), max_size=12
    )

    @hypothesis.given(messages)
    @hypothesis.settings(max_examples=60, deadline=None)
    def check(history: list[Message]) -> None:
        for message in history:
            found = find_original(message_ref(message), history)
            # The same role and text (two equal messages share one fingerprint).
            assert found is not None
            assert (found.role, found.content) == (message.role, message.content)

    check()
