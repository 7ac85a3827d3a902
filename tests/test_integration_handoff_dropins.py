"""``search`` and ``new_context`` through the drop-in entry points the first round left out,
each with the framework's own fake model and nothing on the network: pydantic-ai's history
processor (``FunctionModel``), the Agents SDK's filter and ``CompactionSession`` (a fake
``Model``), LiteLLM (``mock_tool_calls``), and LangChain's middleware after its thread's
compactor was forgotten (``GenericFakeChatModel``). Plus the refusals the model must be told,
and the one line a note gives the memory tools wherever they are offered, counted or not.

The scripted "brain" (``tests.test_integration_context_tools.Brain``) reads three files, calls
``new_context`` with a note that leaves the person's rule out, searches for a word only the
first file held and recalls the id the search gave; its check asserts that the request after
the handoff holds the rule verbatim and none of the files.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compaction import Compactor
from compaction.handoff import DONE
from tests.test_integration_context_tools import (
    ANIMALS,
    NOTE,
    RULE,
    SEARCH_ID,
    SYSTEM,
    TASK,
    WINDOW,
    Brain,
    body,
    handed_off,
    pydantic_texts,
)

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")

REFUSED = "No new context: new_context must be the step's only call (also called: read_file)"
RECALL_LINE = "The recall tool reaches them."
BOTH_LINE = "The search and recall tools reach them."


# -- pydantic-ai: the history processor --------------------------------------------------------


def test_pydantic_ai_processor_search_and_new_context() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from compaction.integrations.pydantic_ai import compaction_processor

    brain = Brain()

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert {"recall", "search", "new_context"} <= {t.name for t in info.function_tools}
        step = brain.next(pydantic_texts(messages))
        if step is None:
            return ModelResponse([TextPart("done")])
        return ModelResponse([ToolCallPart(step[0], step[1], f"c{len(brain.requests)}")])

    process = compaction_processor(window=WINDOW, recall=True, search=True, handoff=True)
    assert process.toolset is not None
    agent = Agent(
        FunctionModel(model),
        instructions=SYSTEM,
        toolsets=[process.toolset],
        capabilities=[ProcessHistory(process)],
    )

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
    # A processor compacts the run's history itself: the first file is gone from it, and
    # search and recall still reached it (from what the processor kept).
    reads = [
        p.content
        for m in result.all_messages()
        for p in m.parts
        if getattr(p, "tool_name", None) == "read_file" and hasattr(p, "content")
    ]
    assert body("src/mod_1.py") not in reads and body("src/mod_3.py") not in reads
    assert process.compactor(result.conversation_id) is not None


def test_pydantic_ai_handoff_outlives_the_conversations_compactor() -> None:
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

    requests: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        texts = pydantic_texts(messages)
        requests.append(texts)
        step = len(requests) - 1
        if texts[-1].endswith(("Other task.", "Go on.")) or step > 3:
            return ModelResponse([TextPart("done")])
        if step == 3:
            return ModelResponse([ToolCallPart("new_context", {"note": NOTE}, "h1")])
        return ModelResponse(
            [ToolCallPart("read_file", {"path": f"src/mod_{step + 1}.py"}, f"r{step}")]
        )

    compaction = Compaction(window=WINDOW, handoff=True, max_conversations=1)
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
        first = agent.run_sync(RULE, message_history=history, conversation_id="a")
        assert RULE in "\n".join(requests[4]) and ANIMALS[0] not in "\n".join(requests[4])
        agent.run_sync("Other task.", conversation_id="b")
        assert compaction.compactor("a") is None  # conversation a's compactor was forgotten
        agent.run_sync("Go on.", message_history=first.all_messages(), conversation_id="a")
    after = "\n".join(requests[-1])
    # The conversation goes on from its handoff (stamped on a response the history keeps),
    # not from its whole history; made again quietly: one handoff, one event.
    assert "Go on." in after and RULE in after and NOTE in after
    assert ANIMALS[0] not in after and ANIMALS[2] not in after
    assert len(seen) == 1


def test_pydantic_ai_processor_options_match_the_capability() -> None:
    pytest.importorskip("pydantic_ai")
    import inspect

    from compaction.integrations.pydantic_ai import Compaction, compaction_processor

    capability = set(inspect.signature(Compaction).parameters) - {"observe_usage"}
    assert capability <= set(inspect.signature(compaction_processor).parameters)
    assert compaction_processor(window=WINDOW).toolset is None  # nothing asked, nothing offered


# -- the OpenAI Agents SDK, with a fake Model --------------------------------------------------


def _item_text(item: Any) -> str:
    item = item if isinstance(item, dict) else item.model_dump(exclude_none=True)
    content = item.get("content")
    if isinstance(content, list):
        content = "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    out = item.get("output")
    return str(content or "") + str(out if out is not None else "") + str(item.get("arguments", ""))


#: The next step from the request's texts: a call, several calls in one step, or None (stop).
Script = Callable[[list[str]], Any]


def _agents_model(script: Script, requests: list[list[str]]) -> Any:
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class Scripted(Model):
        async def get_response(
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> ModelResponse:
            texts = [system_instructions or "", *(_item_text(i) for i in input)]
            step = script(texts)
            requests.append(texts)
            if step is None:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                done = ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )
                return ModelResponse(output=[done], usage=Usage(), response_id=None)
            steps = step if isinstance(step, list) else [step]
            calls = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"c{len(requests)}_{k}",
                    name=name,
                    arguments=json.dumps(args),
                )
                for k, (name, args) in enumerate(steps)
            ]
            return ModelResponse(output=calls, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return Scripted()


def _read_file_tool() -> Any:
    import agents

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    return read_file


START = [
    {"role": "user", "content": TASK},
    {"role": "assistant", "content": "Understood."},
    {"role": "user", "content": RULE},
]


def test_agents_filter_with_a_fake_model() -> None:
    agents = pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionFilter

    brain = Brain()
    compaction = CompactionFilter(window=WINDOW, recall=True, search=True, handoff=True)
    tools = [
        _read_file_tool(),
        compaction.recall_tool,
        compaction.search_tool,
        compaction.new_context_tool,
    ]
    ignored: list[list[str]] = []
    model = _agents_model(brain.next, ignored)
    agent = agents.Agent(name="a", instructions=SYSTEM, tools=tools, model=model)
    config = agents.RunConfig(call_model_input_filter=compaction)
    with handed_off() as seen:
        asyncio.run(agents.Runner.run(agent, START, run_config=config, max_turns=20))
    brain.check(seen)


def test_agents_filter_tells_the_model_a_refused_handoff() -> None:
    agents = pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionFilter

    requests: list[list[str]] = []

    def script(texts: list[str]) -> Any:
        if not requests:  # one step: a read and the handoff together
            return [("read_file", {"path": "src/mod_1.py"}), ("new_context", {"note": NOTE})]
        return None if len(requests) > 1 else ("read_file", {"path": "src/mod_2.py"})

    compaction = CompactionFilter(window=WINDOW, handoff=True)
    tools = [_read_file_tool(), compaction.new_context_tool]
    agent = agents.Agent(
        name="a", instructions=SYSTEM, tools=tools, model=_agents_model(script, requests)
    )
    config = agents.RunConfig(call_model_input_filter=compaction)
    with handed_off() as seen:
        result = asyncio.run(agents.Runner.run(agent, START, run_config=config, max_turns=10))
    assert seen == []  # refused: nothing was set aside
    for later in requests[1:]:  # told in the request after the step, and in every later one
        assert REFUSED in later and DONE not in later
        assert body("src/mod_1.py") in later
    # The run's own items keep what the tool answered.
    outputs = [i.get("output") for i in result.to_input_list() if isinstance(i, dict)]
    assert DONE in outputs


def test_agents_new_context_is_judged_by_its_own_step_not_an_older_one() -> None:
    agents = pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionFilter

    requests: list[list[str]] = []

    def script(texts: list[str]) -> Any:
        if not requests:  # refused: a read beside it
            return [("read_file", {"path": "src/mod_1.py"}), ("new_context", {"note": NOTE})]
        return ("new_context", {"note": NOTE}) if len(requests) == 1 else None

    compaction = CompactionFilter(window=WINDOW, handoff=True)
    tools = [_read_file_tool(), compaction.new_context_tool]
    model = _agents_model(script, requests)
    agent = agents.Agent(name="a", instructions=SYSTEM, tools=tools, model=model)
    config = agents.RunConfig(call_model_input_filter=compaction)
    with handed_off() as seen:
        asyncio.run(agents.Runner.run(agent, START, run_config=config, max_turns=10))
    assert REFUSED in requests[1]
    # The second call, alone in its step, is answered done (the tool sees the first step as
    # the newest, and does not take it for its own) and the handoff is made.
    assert requests[2][-1] == DONE and len(seen) == 1
    after = "\n".join(requests[2])
    assert RULE in after and NOTE in after and body("src/mod_1.py") not in after


def _session_script(requests: list[list[str]], both: bool = False) -> Any:
    """Run 1: read three files, hand off, stop. Run 2: search, recall, stop."""

    def script(texts: list[str]) -> Any:
        step = len(requests)
        if step < 3:
            read = ("read_file", {"path": f"src/mod_{step + 1}.py"})
            if both and step == 2:
                return [read, ("new_context", {"note": NOTE})]
            return read
        if step == 3 and not both:
            return ("new_context", {"note": NOTE})
        if texts[-1] == "Now compare them.":
            return None if both else ("search", {"query": f"{ANIMALS[0]} CONST_7"})
        found = SEARCH_ID.search(texts[-1])
        if found and "recall" not in " ".join(texts[-3:-1]):
            return ("recall", {"id": found.group(1)})
        return None

    return script


def test_agents_session_search_and_new_context(tmp_path: Path) -> None:
    agents = pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionSession

    requests: list[list[str]] = []
    raw = agents.SQLiteSession("s", str(tmp_path / "s.db"))
    session = CompactionSession(raw, window=WINDOW, recall=True, search=True, handoff=True)
    tools = [
        _read_file_tool(),
        session.recall_tool,
        session.search_tool,
        session.new_context_tool,
    ]
    model = _agents_model(_session_script(requests), requests)
    agent = agents.Agent(name="a", instructions=SYSTEM, tools=tools, model=model)

    async def runs() -> None:
        await agents.Runner.run(agent, START, session=session, max_turns=20)
        await agents.Runner.run(agent, "Now compare them.", session=session, max_turns=20)

    with handed_off() as seen:
        asyncio.run(runs())
    first = body("src/mod_1.py")
    # Run 1: the tool said when the handoff happens; the window is the same until then.
    assert "the next run starts in a fresh window" in requests[4][-1]
    assert first in "\n".join(requests[4])
    # Run 2 starts after the handoff: the task, the rule verbatim (the note left it out),
    # the note, what came after; no file read before.
    after = "\n".join(requests[5])
    assert TASK in after and NOTE in after and RULE in after and "Now compare them." in after
    assert ANIMALS[0] not in after and ANIMALS[2] not in after
    assert len(seen) == 1 and seen[0]["restored"] == (RULE,)
    # search and recall reach the stored items the request no longer holds.
    assert SEARCH_ID.match(requests[6][-1].splitlines()[1])
    assert first in requests[7][-1]
    # The wrapped session keeps every item, raw.
    stored = asyncio.run(raw.get_items())
    assert any(isinstance(i, dict) and i.get("output") == first for i in stored)


def test_agents_session_tells_a_refused_handoff_in_the_next_run(tmp_path: Path) -> None:
    agents = pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionSession

    requests: list[list[str]] = []
    raw = agents.SQLiteSession("r", str(tmp_path / "r.db"))
    session = CompactionSession(raw, window=WINDOW, handoff=True)
    tools = [_read_file_tool(), session.new_context_tool]
    model = _agents_model(_session_script(requests, both=True), requests)
    agent = agents.Agent(name="a", instructions=SYSTEM, tools=tools, model=model)

    async def runs() -> None:
        await agents.Runner.run(agent, START, session=session, max_turns=20)
        await agents.Runner.run(agent, "Now compare them.", session=session, max_turns=20)

    with handed_off() as seen:
        asyncio.run(runs())
    assert seen == []
    after = "\n".join(requests[4])  # run 2's first request
    assert "Now compare them." in after
    assert REFUSED in after and "the next run starts" not in after
    assert body("src/mod_1.py") in after


def test_agents_session_tools_need_their_options() -> None:
    agents = pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionSession

    session = CompactionSession(agents.SQLiteSession("x"), window=WINDOW, search=True)
    assert session.search_tool.name == "search"
    for name, option in (("recall_tool", "recall"), ("new_context_tool", "handoff")):
        with pytest.raises(ValueError, match=f"{option}=True"):
            getattr(session, name)


# -- LiteLLM, with mock_tool_calls -------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")
def test_litellm_search_and_new_context_with_mock_responses() -> None:
    litellm = pytest.importorskip("litellm")
    from litellm.integrations.custom_logger import CustomLogger

    from compaction.integrations.litellm import CompactionHook

    litellm.telemetry = False
    brain = Brain()
    hook = CompactionHook(window=WINDOW, recall=True, search=True, handoff=True)
    handlers = {t.name: t for t in (hook.recall_tool, hook.search_tool, hook.new_context_tool)}
    sent: list[list[Any]] = []

    class Sent(CustomLogger):  # type: ignore[misc]
        def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
            sent.append(list(messages))

    def texts(messages: list[Any]) -> list[str]:
        out = []
        for m in messages:
            m = m if isinstance(m, dict) else m.model_dump()
            out.append(str(m.get("content") or "") + json.dumps(m.get("tool_calls") or ""))
        return out

    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "Understood."},
        {"role": "user", "content": RULE},
    ]
    saved = list(litellm.callbacks)
    litellm.callbacks = [hook, Sent()]

    async def loop() -> None:
        while True:
            # The brain picks the mocked answer from the caller's list, then its record of
            # the request is replaced by what LiteLLM really sent.
            step = brain.next(texts(messages))
            calls = None
            if step is not None:
                function = {"name": step[0], "arguments": json.dumps(step[1])}
                calls = [{"id": f"call_{len(brain.requests)}", "function": function}]
            response = await litellm.acompletion(
                model="openai/local-model",
                messages=messages,
                tools=[h.spec for h in handlers.values()],
                mock_response=None if calls else "done",
                mock_tool_calls=calls,
            )
            brain.requests[-1] = texts(sent[-1])
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
        with handed_off() as seen:
            asyncio.run(loop())
    finally:
        litellm.callbacks = saved
    brain.check(seen)


# -- LangChain (its GenericFakeChatModel): a forgotten thread keeps its handoff ----------------


def _langchain_model(plan: Callable[[list[str]], Any], requests: list[list[str]]) -> Any:
    """LangChain's own ``GenericFakeChatModel``, its replies decided by ``plan`` from each
    request it is sent (recorded in ``requests``)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatResult

    steps: list[Any] = []

    def replies() -> Any:
        while True:
            step = steps.pop()
            if step is None:
                yield AIMessage("done")
            else:
                call = {"name": step[0], "args": step[1], "id": f"c{len(requests)}"}
                yield AIMessage("", tool_calls=[call])

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
            return self

        def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
            texts = [m.text + json.dumps(getattr(m, "tool_calls", None) or "") for m in messages]
            steps.append(plan(texts))
            requests.append(texts)
            return super()._generate(messages, *a, **k)

    return Scripted(messages=replies())


def test_langchain_handoff_outlives_the_threads_compactor() -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from compaction.integrations.langchain import HANDOFF_KEY, CompactionMiddleware

    requests: list[list[str]] = []

    def plan(texts: list[str]) -> Any:
        if texts[-1].startswith(("Other task.", "Go on.")):
            return None
        step = len(requests)
        if step < 3:
            return ("read_file", {"path": f"src/mod_{step + 1}.py"})
        return ("new_context", {"note": NOTE}) if step == 3 else None

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return body(path)

    middleware = CompactionMiddleware(window=WINDOW, handoff=True, max_threads=1)
    agent = create_agent(
        _langchain_model(plan, requests),
        [read_file],
        system_prompt=SYSTEM,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    a = {"configurable": {"thread_id": "a"}}
    with handed_off() as seen:
        agent.invoke(
            {"messages": [HumanMessage(TASK), AIMessage("Understood."), HumanMessage(RULE)]}, a
        )
        assert RULE in "\n".join(requests[4]) and ANIMALS[0] not in "\n".join(requests[4])
        assert agent.get_state(a).values[HANDOFF_KEY] == "c4"  # kept with the thread
        agent.invoke(
            {"messages": [HumanMessage("Other task.")]}, {"configurable": {"thread_id": "b"}}
        )
        assert middleware.compactor("a") is None  # thread a's compactor was forgotten
        agent.invoke({"messages": [HumanMessage("Go on.")]}, a)
    after = "\n".join(requests[-1])
    # The thread goes on from its handoff, not from its whole history.
    assert "Go on." in after and RULE in after and NOTE in after
    assert ANIMALS[0] not in after and ANIMALS[2] not in after
    assert len(seen) == 1  # made again quietly: one handoff, one event


# -- the notes say the memory tools exist wherever they are offered ----------------------------


def _big(path: str) -> str:
    n = int(path.rsplit("_", 1)[1].split(".")[0])
    return "\n".join(f"{path}:{k}: value_{n}_{k} = {n * k}" for k in range(60))


def _noted(requests: list[list[str]]) -> list[str]:
    """The requests that carry a note (what a compaction leaves for the steps it removed)."""
    return [t for r in requests for t in r if "Recall ids:" in t]


def _check_notes(requests: list[list[str]], recall: bool) -> None:
    """The first note says, in its one line, that recall reaches what it stands for (a later
    compaction may cut an older note to fit); without the tool, no note says so."""
    noted = _noted(requests)
    assert noted and (RECALL_LINE in noted[0]) is recall
    assert recall or not any("reach" in t for t in noted)


def _reads(n: int) -> Callable[[list[str]], Any]:
    """Reads files 1 to ``n``, one a step, then stops."""
    asked: list[int] = []

    def plan(texts: list[str]) -> Any:
        asked.append(1)
        done = len(asked) - 1
        return ("read_file", {"path": f"src/f_{done + 1}.py"}) if done < n else None

    return plan


@pytest.mark.parametrize("recall", [True, False])
def test_langchain_notes_name_recall_without_counting_tools(recall: bool) -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool

    from compaction.integrations.langchain import CompactionMiddleware

    requests: list[list[str]] = []

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return _big(path)

    middleware = CompactionMiddleware(window=4_000, count_tools=False, recall=recall)
    agent = create_agent(
        _langchain_model(_reads(30), requests), [read_file], middleware=[middleware]
    )
    agent.invoke({"messages": [HumanMessage(TASK)]}, {"recursion_limit": 200})
    compactor = middleware.compactor()
    assert compactor is not None and compactor.stats.compactions >= 1
    assert compactor.tool_tokens == 0  # nothing counted
    _check_notes(requests, recall)


@pytest.mark.parametrize("recall", [True, False])
def test_agents_filter_with_a_ready_compactor_names_recall(recall: bool) -> None:
    agents = pytest.importorskip("agents")
    from compaction.integrations.openai_agents import CompactionFilter

    requests: list[list[str]] = []

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return _big(path)

    compaction = CompactionFilter(Compactor(None, 4_000), recall=recall)
    tools = [read_file, *([compaction.recall_tool] if recall else [])]
    model = _agents_model(_reads(30), requests)
    agent = agents.Agent(name="a", instructions=SYSTEM, tools=tools, model=model)
    config = agents.RunConfig(call_model_input_filter=compaction)
    asyncio.run(agents.Runner.run(agent, TASK, run_config=config, max_turns=40))
    assert compaction.compactor.stats.compactions >= 1 and compaction.compactor.tool_tokens == 0
    _check_notes(requests, recall)


def test_litellm_notes_name_the_tools_a_request_offers() -> None:
    pytest.importorskip("litellm")
    from compaction.integrations.litellm import CompactionHook

    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for i in range(1, 31):
        arguments = json.dumps({"path": f"src/f_{i}.py"})
        call = {"id": f"r{i}", "type": "function",
                "function": {"name": "read_file", "arguments": arguments}}  # fmt: skip
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"r{i}", "content": _big(f"src/f_{i}.py")})

    def notes(hook: CompactionHook, **request: Any) -> str:
        sent = hook.compact_messages("openai/local-model", messages, **request)
        noted = [str(m.get("content")) for m in sent if "Recall ids:" in str(m.get("content"))]
        assert noted
        return "\n".join(noted)

    both = CompactionHook(window=4_000, recall=True, search=True)
    # No tools given: those the hook was asked for.
    assert BOTH_LINE in notes(both)
    # The request says what it offers: only recall, or none at all.
    assert RECALL_LINE in notes(CompactionHook(window=4_000, recall=True, search=True),
                                tools=[both.recall_tool.spec])  # fmt: skip
    assert "reach" not in notes(CompactionHook(window=4_000, recall=True), tools=[])
    assert "reach" not in notes(CompactionHook(window=4_000))


@pytest.mark.parametrize("recall", [True, False])
def test_pydantic_ai_processor_notes_name_its_tools(recall: bool) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from compaction.integrations.pydantic_ai import compaction_processor

    requests: list[list[str]] = []
    plan = _reads(30)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        texts = pydantic_texts(messages)
        step = plan(texts)
        requests.append(texts)
        if step is None:
            return ModelResponse([TextPart("done")])
        return ModelResponse([ToolCallPart(step[0], step[1], f"c{len(requests)}")])

    process = compaction_processor(window=4_000, recall=recall)
    toolsets = [process.toolset] if recall else []
    agent = Agent(FunctionModel(model), toolsets=toolsets, capabilities=[ProcessHistory(process)])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return _big(path)

    result = agent.run_sync(TASK)
    compactor = process.compactor(result.conversation_id)
    assert compactor is not None and compactor.stats.compactions >= 1
    _check_notes(requests, recall)
