"""An OpenAI Agents SDK tool loop (``Runner.run`` and ``Runner.run_streamed``) whose tool
results are big, compacted before every model call by ``CompactionFilter``.

The model is the SDK's ``OpenAIChatCompletionsModel`` pointed at a local OpenAI-compatible
server on 127.0.0.1 (``fake_openai_server.py``), so this runs offline. Run it::

    python examples/openai_agents_runner.py
"""

from __future__ import annotations

import asyncio

import agents
from fake_openai_server import FakeOpenAIServer
from openai import AsyncOpenAI

from compaction import events
from compaction.integrations.openai_agents import CompactionFilter

WINDOW = 8_000  # a small window, so that compaction happens within a few turns
TURNS = 12
agents.set_tracing_disabled(True)  # the SDK would export traces to the network


@agents.function_tool
def read_file(path: str) -> str:
    """Read a source file (a big tool result: about 600 tokens)."""
    return "\n".join(f"{path}:{n}: value_{n} = parse(line_{n})  # keep going" for n in range(40))


compactions: list[tuple[int, int]] = []


@events.compacted.connect
def record(sender, *, changed, before, after, **_):
    if changed:  # `compacted` fires for every run; a compaction is one that changed something
        compactions.append((before, after))


async def main(server: FakeOpenAIServer) -> None:
    model = agents.OpenAIChatCompletionsModel(
        model="local-model", openai_client=AsyncOpenAI(base_url=server.base_url, api_key="local")
    )
    agent = agents.Agent(name="debugger", instructions="Use read_file.", tools=[read_file],
                         model=model)  # fmt: skip
    task = "Find why the parser drops the last line."

    flt = CompactionFilter(window=WINDOW)  # compact at 70% of it, down to 40%
    config = agents.RunConfig(call_model_input_filter=flt)
    result = await agents.Runner.run(agent, task, run_config=config, max_turns=30,
                                     hooks=flt.run_hooks())  # fmt: skip
    print("Runner.run:", result.final_output)
    print(f"  model calls: {len(server.sizes)}, compactions: {len(compactions)}, "
          f"largest request: {max(server.sizes):,} tokens (chars/4)")  # fmt: skip

    server.sizes.clear()
    compactions.clear()
    flt = CompactionFilter(window=WINDOW)  # a new run, a new trigger
    config = agents.RunConfig(call_model_input_filter=flt)
    streamed = agents.Runner.run_streamed(agent, task, run_config=config, max_turns=30,
                                          hooks=flt.run_hooks())  # fmt: skip
    deltas = 0
    async for event in streamed.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            deltas += 1
    print(f"Runner.run_streamed ({deltas} text deltas):", streamed.final_output.strip())
    print(f"  model calls: {len(server.sizes)}, compactions: {len(compactions)}, "
          f"largest request: {max(server.sizes):,} tokens (chars/4)")  # fmt: skip


if __name__ == "__main__":
    with FakeOpenAIServer(turns=TURNS) as server:
        asyncio.run(main(server))
