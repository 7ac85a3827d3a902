"""The OpenAI Agents SDK, for real: an agent with a tool runs against a local OpenAI-compatible
server on 127.0.0.1 for several turns, long enough to trigger compaction."""

from __future__ import annotations

import asyncio
import os

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
agents = pytest.importorskip("agents")
from openai import AsyncOpenAI  # noqa: E402

from compaction import validate  # noqa: E402
from compaction.adapters.openai import from_openai  # noqa: E402
from compaction.adapters.responses import from_responses  # noqa: E402
from compaction.integrations.openai_agents import (  # noqa: E402
    CompactionFilter,
    CompactionSession,
)
from compaction.tokens import TiktokenCounter  # noqa: E402
from tests.model_server import ScriptedChatServer, text_reply, tool_call_reply  # noqa: E402

agents.set_tracing_disabled(True)

WINDOW = 6000
TASK = "Task: audit every module of the project and report the largest one."
TURNS = ["and the tests too", "now the docs"]
CALLS_PER_TURN = 5
COUNTER = TiktokenCounter()


def script():
    """Each turn: CALLS_PER_TURN tool calls, then an answer. Call ids are unique."""
    state = {"n": 0, "in_turn": 0}

    def reply(body):
        state["n"] += 1
        if state["in_turn"] < CALLS_PER_TURN:
            state["in_turn"] += 1
            return tool_call_reply("read_file", {"path": f"m{state['n']}.py"}, f"call_{state['n']}")
        state["in_turn"] = 0
        return text_reply(f"answer {state['n']}")

    return reply


@agents.function_tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"# {path}\n" + "\n".join(f"line {i} of {path}: x = {i} * 42" for i in range(120))


def run_agent(server, *, session, run_config=None, hooks=None):
    model = agents.OpenAIChatCompletionsModel(
        model="local-model",
        openai_client=AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0),
    )
    agent = agents.Agent(
        name="auditor",
        instructions="You audit code. Use read_file.",
        tools=[read_file],
        model=model,
    )

    async def main():
        outputs = []
        for text in [TASK, *TURNS]:
            result = await agents.Runner.run(
                agent, text, session=session, run_config=run_config, max_turns=20, hooks=hooks
            )
            outputs.append(result.final_output)
        return outputs

    return asyncio.run(main())


def sent_tokens(body) -> int:
    return COUNTER.count_messages(from_openai(body["messages"]))


def check_requests(requests, per_run=CALLS_PER_TURN + 1):
    for i, body in enumerate(requests):
        messages = from_openai(body["messages"])
        validate(messages)  # every call has its output, every output its call
        # The whole request fits: messages and the tool schemas sent with them.
        assert COUNTER.count_messages(messages) + COUNTER.count_tools(body["tools"]) <= WINDOW
        # The task the agent is working on (the user message that started this run) is sent
        # with every request of the run.
        task = [TASK, *TURNS][i // per_run]
        assert any(m.role == "user" and m.content == task for m in messages), "task dropped"


def stored(session) -> list:
    return asyncio.run(session.get_items())


def check_store_complete(items):
    calls = [i for i in items if i.get("type") == "function_call"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    users = [i.get("content") for i in items if i.get("role") == "user"]
    assert len(calls) == len(outputs) == CALLS_PER_TURN * (1 + len(TURNS))
    assert users == [TASK, *TURNS]
    assert all(len(o["output"]) > 3000 for o in outputs)  # stored raw, never compacted


def baseline(tmp_path):
    with ScriptedChatServer(script()) as server:
        session = agents.SQLiteSession("plain", str(tmp_path / "plain.db"))
        run_agent(server, session=session)
        return server.requests


def test_input_filter_keeps_every_call_in_the_window(tmp_path):
    plain = baseline(tmp_path)
    assert max(sent_tokens(b) for b in plain) > WINDOW  # the run does need compacting
    with ScriptedChatServer(script()) as server:
        session = agents.SQLiteSession("filtered", str(tmp_path / "f.db"))
        flt = CompactionFilter(window=WINDOW, counter=COUNTER)
        outputs = run_agent(
            server, session=session, run_config=agents.RunConfig(call_model_input_filter=flt)
        )
        requests = server.requests
    assert outputs[-1].startswith("answer")
    assert len(requests) == len(plain)
    assert flt.compactor.stats.compactions >= 1
    assert flt.compactor.tool_tokens > 0  # the agent's read_file schema is counted
    check_requests(requests)
    assert sum(map(sent_tokens, requests)) < sum(map(sent_tokens, plain))
    # The newest tool output is always there, whole, for the model to act on.
    last = requests[-1]["messages"]
    assert any(m["role"] == "tool" and len(m["content"]) > 3000 for m in last)
    check_store_complete(stored(session))


def test_session_wrapper_compacts_history_and_stores_everything(tmp_path):
    plain = baseline(tmp_path)
    with ScriptedChatServer(script()) as server:
        raw = agents.SQLiteSession("wrapped", str(tmp_path / "w.db"))
        session = CompactionSession(raw, window=WINDOW, counter=COUNTER)
        assert isinstance(session, agents.memory.Session)
        # The wrapper for what each run starts from, the filter for the tool loop inside it.
        flt = CompactionFilter(window=WINDOW, counter=COUNTER)
        run_agent(server, session=session, run_config=agents.RunConfig(call_model_input_filter=flt))
        requests = server.requests
    check_requests(requests)
    assert session.compactor.stats.compactions >= 1  # a later run started from a compacted history
    assert sum(map(sent_tokens, requests)) < sum(map(sent_tokens, plain))
    items = stored(raw)
    check_store_complete(items)
    compacted = asyncio.run(session.get_items())
    assert len(compacted) < len(items)
    validate(from_responses(compacted))
    # Reads with a limit are the store's own tail (the runner checks its writes with them).
    assert asyncio.run(session.get_items(limit=3)) == items[-3:]
    assert session.session_id == "wrapped"


def test_session_wrapper_alone_compacts_between_runs(tmp_path):
    with ScriptedChatServer(script()) as server:
        raw = agents.SQLiteSession("alone", str(tmp_path / "a.db"))
        session = CompactionSession(raw, window=WINDOW, counter=COUNTER)
        run_agent(server, session=session)
        requests = server.requests
    first_of_each_run = [requests[i * (CALLS_PER_TURN + 1)] for i in range(1 + len(TURNS))]
    check_requests(first_of_each_run, per_run=1)
    check_store_complete(stored(raw))


def test_filter_passes_untouched_items_back_as_the_same_objects():
    flt = CompactionFilter(window=100_000)
    items = [{"role": "user", "content": "hi"}]
    data = agents.run_config.CallModelData(
        model_data=agents.run_config.ModelInputData(input=items, instructions="be brief"),
        agent=None,
        context=None,
    )
    out = asyncio.run(flt(data))
    assert out.input[0] is items[0]
    assert out.instructions == "be brief"


def test_wrong_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="context window"):
        CompactionFilter()
    with pytest.raises(TypeError, match="Session"):
        CompactionSession(object(), window=1000)


def test_unreadable_input_goes_to_the_model_as_it_is():
    flt = CompactionFilter(window=1000)
    model_data = agents.run_config.ModelInputData(
        input=[{"type": "function_call_output", "output": "no call id"}], instructions=None
    )
    data = agents.run_config.CallModelData(model_data=model_data, agent=None, context=None)
    assert asyncio.run(flt(data)) is model_data


def provider_tokens(body) -> int:
    """What the local server reports as prompt_tokens: its tokenizer counts a quarter more
    than ours (as Anthropic's does), tool schemas included."""
    return (sent_tokens(body) + COUNTER.count_tools(body.get("tools") or [])) * 5 // 4 + 1


def test_run_hooks_anchor_the_estimate_on_the_providers_count(tmp_path):
    with ScriptedChatServer(script(), prompt_tokens=provider_tokens) as server:
        session = agents.SQLiteSession("anchored", str(tmp_path / "h.db"))
        flt = CompactionFilter(window=WINDOW, counter=COUNTER)
        run_agent(
            server,
            session=session,
            run_config=agents.RunConfig(call_model_input_filter=flt),
            hooks=flt.run_hooks(),
        )
        requests = server.requests
    assert flt.compactor.stats.anchored
    assert flt.compactor.stats.compactions >= 1
    for body in requests:
        validate(from_openai(body["messages"]))
        assert provider_tokens(body) <= WINDOW
    check_store_complete(stored(session))
