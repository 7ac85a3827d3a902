"""The Agents SDK, for real, against a local server on 127.0.0.1: a streamed run compacts as a
plain one (issue 21 item 9) and a provider reporting 0 input tokens does not switch
compaction off (item 5)."""

from __future__ import annotations

import asyncio
import os

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
agents = pytest.importorskip("agents")

from openai import AsyncOpenAI  # noqa: E402

from compaction import validate  # noqa: E402
from compaction.adapters.openai import from_openai  # noqa: E402
from compaction.integrations.openai_agents import CompactionFilter  # noqa: E402
from compaction.tokens import TiktokenCounter  # noqa: E402
from tests.model_server import ScriptedChatServer  # noqa: E402
from tests.test_openai_agents import TASK, read_file, script  # noqa: E402

agents.set_tracing_disabled(True)
WINDOW = 6000
COUNTER = TiktokenCounter()


def agent(server):
    model = agents.OpenAIChatCompletionsModel(
        model="local-model",
        openai_client=AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0),
    )
    return agents.Agent(
        name="auditor", instructions="You audit code.", tools=[read_file], model=model
    )


def run(flt, *, streamed=False, hooks=None, prompt_tokens=None):
    with ScriptedChatServer(script(), prompt_tokens=prompt_tokens) as server:
        config = agents.RunConfig(call_model_input_filter=flt)

        async def main():
            if not streamed:
                result = await agents.Runner.run(
                    agent(server), TASK, run_config=config, max_turns=20, hooks=hooks
                )
                return result.final_output
            result = agents.Runner.run_streamed(
                agent(server), TASK, run_config=config, max_turns=20, hooks=hooks
            )
            async for _ in result.stream_events():
                pass
            return result.final_output

        output = asyncio.run(main())
        return output, server.requests


def tokens(body) -> int:
    return COUNTER.count_messages(from_openai(body["messages"])) + COUNTER.count_tools(
        body.get("tools") or []
    )


def test_run_streamed_compacts_as_run_does():
    plain_output, plain = run(CompactionFilter(window=WINDOW, counter=COUNTER))
    flt = CompactionFilter(window=WINDOW, counter=COUNTER)
    output, streamed = run(flt, streamed=True)
    assert output == plain_output
    assert all(body.get("stream") for body in streamed)
    assert [b["messages"] for b in streamed] == [b["messages"] for b in plain]
    assert flt.compactor.stats.compactions >= 1
    for body in streamed:
        validate(from_openai(body["messages"]))
        assert tokens(body) <= WINDOW


def test_a_provider_reporting_zero_input_tokens_does_not_switch_compaction_off():
    flt = CompactionFilter(window=WINDOW, counter=COUNTER)
    _, requests = run(flt, hooks=flt.run_hooks(), prompt_tokens=lambda body: 0)
    assert max(map(tokens, requests)) <= WINDOW
    assert flt.compactor.stats.compactions >= 1
    assert flt.compactor.stats.usage_ignored >= 1 and not flt.compactor.stats.anchored


def test_observe_usage_false_leaves_the_estimate_local():
    flt = CompactionFilter(window=WINDOW, counter=COUNTER, observe_usage=False)
    _, requests = run(flt, hooks=flt.run_hooks(), prompt_tokens=lambda body: 10 * tokens(body))
    assert not flt.compactor.stats.anchored
    assert max(map(tokens, requests)) <= WINDOW
