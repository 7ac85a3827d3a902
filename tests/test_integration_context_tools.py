"""``search`` and ``new_context`` in every drop-in, end to end with the real frameworks and
their own test models (LangChain's chat model interface, pydantic-ai's ``FunctionModel``, the
Agents SDK and LiteLLM against a local 127.0.0.1 chat server).

One scripted "brain" drives every framework. The person's task comes first; then, in a later
message of their own, a rule. The model reads three files, calls ``new_context`` with a note
that leaves the rule out, searches for a word only the first file held, recalls the id the
search gave, and stops. The assertions are on what the model received: the request after the
handoff holds the person's rule verbatim (restored from the ledger, and said so on the
``handed_off`` event) and none of the files read before it; the search answers the first
file's message, which that request no longer held, by the id ``recall`` gives back whole.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from compaction import events
from tests.model_server import ScriptedChatServer, text_reply, tool_call_reply

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")

WINDOW = 100_000  # roomy: nothing is compacted but by the handoff
SYSTEM = "You are a coding agent."
TASK = "Find which module defines the largest constant."
RULE = "Also: always run the linter before committing."
NOTE = "Read modules 1 to 3; next: compare their constants."
ANIMALS = ("aardvark", "bison", "cheetah")
SEARCH_ID = re.compile(r"- id (\S+) \(tool")


def body(path: str) -> str:
    """What ``read_file(path)`` answers: long, and a word of its own per file."""
    n = int(path.rsplit("_", 1)[1].split(".")[0])
    return "\n".join(f"{path}:{k}: {ANIMALS[n - 1]} CONST_{k} = {n * k}" for k in range(40))


class Brain:
    """Reads three files, hands off, searches, recalls what the search found, stops."""

    def __init__(self) -> None:
        self.requests: list[list[str]] = []

    def next(self, texts: list[str]) -> tuple[str, dict[str, Any]] | None:
        step = len(self.requests)
        self.requests.append(texts)
        if step < 3:
            return "read_file", {"path": f"src/mod_{step + 1}.py"}
        if step == 3:
            return "new_context", {"note": NOTE}
        if step == 4:
            return "search", {"query": f"{ANIMALS[0]} CONST_7"}
        if step == 5:
            found = SEARCH_ID.search(texts[-1])
            return ("recall", {"id": found.group(1)}) if found else None
        return None

    def check(self, handoffs: list[dict[str, Any]]) -> None:
        assert len(self.requests) == 7, [t[-1][:80] for t in self.requests]
        before, after = ("\n".join(self.requests[i]) for i in (3, 4))
        first = body("src/mod_1.py")
        assert first in before and RULE in before
        # The request after the handoff: the system prompt, the task, the rule verbatim (the
        # note left it out), the note; no file read before.
        assert SYSTEM in after and TASK in after and NOTE in after
        assert RULE in after
        # ... and says, once, that the tools offered reach what was set aside.
        assert after.count("The search and recall tools reach them.") == 1
        assert ANIMALS[0] not in after and ANIMALS[2] not in after
        assert len(handoffs) == 1 and handoffs[0]["restored"] == (RULE,)
        assert handoffs[0]["replaced"] >= 7
        # search found the first file's message, which the request it answered did not hold.
        answer = self.requests[5][-1]
        best = answer.splitlines()[1]  # the phrase, whole, ranks first
        assert SEARCH_ID.match(best) and f"[{ANIMALS[0]} CONST_7]" in best, answer
        # ... by the id recall gives back whole.
        assert first in self.requests[6][-1]


@contextmanager
def handed_off() -> Iterator[list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    def on(sender: Any, **fields: Any) -> None:
        seen.append(fields)

    events.handed_off.connect(on)
    try:
        yield seen
    finally:
        events.handed_off.disconnect(on)


# -- LangChain ---------------------------------------------------------------------------------


def test_langchain_search_and_new_context() -> None:
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
            step = brain.next(
                [m.text + json.dumps(getattr(m, "tool_calls", None) or "") for m in messages]
            )
            if step is None:
                message = AIMessage("done")
            else:
                call = {"name": step[0], "args": step[1], "id": f"c{len(brain.requests)}"}
                message = AIMessage("", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=message)])

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    middleware = CompactionMiddleware(window=WINDOW, recall=True, search=True, handoff=True)
    assert [t.name for t in middleware.tools] == ["recall", "search", "new_context"]
    agent = create_agent(Scripted(), [read_file], system_prompt=SYSTEM, middleware=[middleware])
    start = [HumanMessage(TASK), AIMessage("Understood."), HumanMessage(RULE)]
    with handed_off() as seen:
        state = agent.invoke({"messages": start}, {"recursion_limit": 50})
    brain.check(seen)
    # The graph state keeps everything: the handoff shaped the requests only.
    assert any(body("src/mod_1.py") == m.text for m in state["messages"])


# -- pydantic-ai -------------------------------------------------------------------------------


def pydantic_texts(messages: list[Any]) -> list[str]:
    """What a pydantic-ai request says, a text per message (its instructions, then each part's
    content, a tool call as its JSON arguments): what the scripted brain reads."""
    from pydantic_ai.messages import ToolCallPart

    return [
        str(getattr(m, "instructions", None) or "")
        + "".join(
            part.args_as_json_str() if isinstance(part, ToolCallPart) else str(part.content)
            for part in m.parts
            if hasattr(part, "content") or isinstance(part, ToolCallPart)
        )
        for m in messages
    ]


def test_pydantic_ai_search_and_new_context() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from compaction.integrations.pydantic_ai import Compaction

    brain = Brain()

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert {"recall", "search", "new_context"} <= {t.name for t in info.function_tools}
        step = brain.next(pydantic_texts(messages))
        if step is None:
            return ModelResponse([TextPart("done")])
        return ModelResponse([ToolCallPart(step[0], step[1], f"c{len(brain.requests)}")])

    compaction = Compaction(window=WINDOW, recall=True, search=True, handoff=True)
    agent = Agent(FunctionModel(model), instructions=SYSTEM, capabilities=[compaction])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    history: list[ModelMessage] = [
        ModelRequest([UserPromptPart(TASK)]),
        ModelResponse([TextPart("Understood.")]),
    ]
    with handed_off() as seen:
        result = agent.run_sync(RULE, message_history=history)
    brain.check(seen)
    # The run's history keeps everything: the handoff shaped the requests only.
    contents = [getattr(p, "content", None) for m in result.all_messages() for p in m.parts]
    assert body("src/mod_1.py") in contents


# -- the OpenAI Agents SDK and LiteLLM (against a local chat server) ---------------------------


def _chat_texts(request: dict[str, Any]) -> list[str]:
    return [
        str(m.get("content") or "") + json.dumps(m.get("tool_calls") or "")
        for m in request["messages"]
    ]


def _chat_brain(brain: Brain) -> Any:
    def reply(request: dict[str, Any]) -> Any:
        step = brain.next(_chat_texts(request))
        if step is None:
            return text_reply("done")
        return tool_call_reply(step[0], step[1], f"call_{len(brain.requests)}")

    return reply


def test_agents_filter_search_and_new_context() -> None:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    from compaction.integrations.openai_agents import CompactionFilter

    agents.set_tracing_disabled(True)
    brain = Brain()

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    compaction = CompactionFilter(window=WINDOW, recall=True, search=True, handoff=True)
    tools = [read_file, compaction.recall_tool, compaction.search_tool, compaction.new_context_tool]
    start = [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "Understood."},
        {"role": "user", "content": RULE},
    ]
    with ScriptedChatServer(_chat_brain(brain)) as server, handed_off() as seen:
        model = agents.OpenAIChatCompletionsModel(
            model="local-model",
            openai_client=AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0),
        )
        agent = agents.Agent(name="a", instructions=SYSTEM, tools=tools, model=model)
        config = agents.RunConfig(call_model_input_filter=compaction)
        result = asyncio.run(agents.Runner.run(agent, start, run_config=config, max_turns=20))
        names = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert {"recall", "search", "new_context"} <= names
    brain.check(seen)
    # The run keeps every item: the handoff shaped the requests only.
    outputs = [i.get("output") for i in result.to_input_list() if isinstance(i, dict)]
    assert body("src/mod_1.py") in outputs


def test_agents_tools_need_their_options() -> None:
    pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionFilter

    plain = CompactionFilter(window=WINDOW, recall=True)
    with pytest.raises(ValueError, match="search=True"):
        _ = plain.search_tool
    with pytest.raises(ValueError, match="handoff=True"):
        _ = plain.new_context_tool
    with pytest.raises(ValueError, match="recall=True"):
        _ = CompactionFilter(window=WINDOW, search=True).recall_tool


@pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")
def test_litellm_hook_search_and_new_context() -> None:
    litellm = pytest.importorskip("litellm")
    from compaction.integrations.litellm import CompactionHook

    litellm.telemetry = False
    brain = Brain()
    hook = CompactionHook(window=WINDOW, recall=True, search=True, handoff=True)
    handlers = {t.name: t for t in (hook.recall_tool, hook.search_tool, hook.new_context_tool)}
    read = {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "Understood."},
        {"role": "user", "content": RULE},
    ]
    saved = list(litellm.callbacks)
    litellm.callbacks = [hook]

    async def loop(server: ScriptedChatServer) -> None:
        while True:
            response = await litellm.acompletion(
                model="openai/local-model",
                messages=messages,
                tools=[read, *(h.spec for h in handlers.values())],
                api_base=server.base_url,
                api_key="t",
            )
            message = response.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                return
            for call in message.tool_calls:
                if call.function.name in handlers:
                    messages.append(handlers[call.function.name].handle(call, messages))
                else:
                    path = json.loads(call.function.arguments)["path"]
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id, "content": body(path)}
                    )

    try:
        with ScriptedChatServer(_chat_brain(brain)) as server, handed_off() as seen:
            asyncio.run(loop(server))
    finally:
        litellm.callbacks = saved
    brain.check(seen)
    # The caller's list keeps everything: the hook shaped the requests only.
    assert any(m.get("content") == body("src/mod_1.py") for m in messages if isinstance(m, dict))


def test_langchain_new_context_beside_another_call_is_refused() -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    from compaction.integrations.langchain import CompactionMiddleware

    requests: list[list[str]] = []

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
            return self

        def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
            requests.append([m.text for m in messages])
            if len(requests) > 1:
                return ChatResult(generations=[ChatGeneration(message=AIMessage("done"))])
            calls = [
                {"name": "read_file", "args": {"path": "src/mod_1.py"}, "id": "r1"},
                {"name": "new_context", "args": {"note": NOTE}, "id": "h1"},
            ]
            return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=calls))])

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    middleware = CompactionMiddleware(window=WINDOW, handoff=True)
    agent = create_agent(Scripted(), [read_file], system_prompt=SYSTEM, middleware=[middleware])
    with handed_off() as seen:
        agent.invoke({"messages": [HumanMessage(TASK), HumanMessage(RULE)]})
    assert seen == []  # no handoff: the request after the step holds everything
    after = "\n".join(requests[1])
    assert body("src/mod_1.py") in after
    assert "No new context: new_context must be the step's only call" in after
