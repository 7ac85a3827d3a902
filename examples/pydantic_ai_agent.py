"""A pydantic-ai ``Agent`` tool loop whose tool results are big, compacted before every model
request by the ``Compaction`` capability, and streamed.

The model is pydantic-ai's own ``FunctionModel`` with a streaming function, scripted to read one
large file per turn and then answer, so this runs offline. Run it::

    python examples/pydantic_ai_agent.py
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from compaction.integrations.pydantic_ai import Compaction

WINDOW = 8_000  # a small window, so that compaction happens within a few turns
TURNS = 12
requests: list[int] = []  # how many messages each model request was sent


async def model(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    """Streams a tool call for each of the first TURNS requests, then the answer, in pieces."""
    requests.append(len(messages))
    done = sum(
        isinstance(part, ToolReturnPart)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
    )
    if len(requests) <= TURNS:
        n = len(requests) - 1
        yield {0: DeltaToolCall("read_file", '{"path": ', tool_call_id=f"call_{n}")}
        yield {0: DeltaToolCall(json_args=f'"src/mod_{n}.py"}}')}
        return
    for word in f"After {done} files: the parser stops one line early in src/mod_7.py.".split():
        yield word + " "


# Compact at 70% of the window, down to 40%. A real model's reported input tokens anchor the
# next estimate; FunctionModel reports a word count instead, so this example does not use it.
compaction = Compaction(window=WINDOW, observe_usage=False)
agent = Agent(FunctionModel(stream_function=model), capabilities=[compaction])


@agent.tool_plain
def read_file(path: str) -> str:
    """Read a source file (a big tool result: about 600 tokens)."""
    return "\n".join(f"{path}:{n}: value_{n} = parse(line_{n})  # keep going" for n in range(40))


async def main() -> None:
    pieces = []
    async with agent.run_stream("Find why the parser drops the last line.") as run:
        async for piece in run.stream_text(delta=True, debounce_by=None):
            pieces.append(piece)
        history = run.all_messages()
        conversation = run.conversation_id
    stats = compaction.compactor(conversation).stats  # each conversation has its own trigger
    print(f"streamed the answer in {len(pieces)} pieces:", "".join(pieces).strip())
    print(f"model requests: {len(requests)}, compactions: {stats.compactions}")
    print(f"last request: {stats.last_tokens:,} tokens (window {WINDOW:,})")
    print(f"the run's history keeps all {len(history)} messages")


if __name__ == "__main__":
    asyncio.run(main())
