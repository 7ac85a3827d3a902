"""A tool loop through LiteLLM's ``acompletion`` whose tool results are big, compacted before
every call by ``CompactionHook`` (a LiteLLM callback), streamed with ``stream=True``.

The model is a local OpenAI-compatible server on 127.0.0.1 (``fake_openai_server.py``), so this
runs offline. Run it::

    python examples/litellm_acompletion.py
"""

from __future__ import annotations

import asyncio
import json
import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # LiteLLM's bundled model map, offline
os.environ.setdefault("LITELLM_TELEMETRY", "False")
import litellm
from fake_openai_server import FakeOpenAIServer

from compaction import events
from compaction.integrations.litellm import CompactionHook

WINDOW = 8_000  # the window for a model LiteLLM's map does not know
TURNS = 12
TOOLS = [{
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a source file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}]  # fmt: skip


def read_file(path: str) -> str:
    """A big tool result: about 600 tokens."""
    return "\n".join(f"{path}:{n}: value_{n} = parse(line_{n})  # keep going" for n in range(40))


compactions: list[tuple[int, int]] = []


@events.compacted.connect
def record(sender, *, changed, before, after, **_):
    if changed:  # `compacted` fires for every run; a compaction is one that changed something
        compactions.append((before, after))


async def main(server: FakeOpenAIServer) -> None:
    litellm.suppress_debug_info = True  # LiteLLM prints a provider list on some lookups
    litellm.callbacks = [CompactionHook(window=WINDOW)]  # every acompletion is now compacted
    messages = [{"role": "user", "content": "Find why the parser drops the last line."}]
    answer = ""
    while True:
        stream = await litellm.acompletion(
            model="openai/local-model", api_base=server.base_url, api_key="local",
            messages=messages, tools=TOOLS, stream=True,
        )  # fmt: skip
        chunks = [chunk async for chunk in stream]
        reply = litellm.stream_chunk_builder(chunks, messages=messages).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))  # your history keeps everything
        if not reply.tool_calls:
            answer = reply.content
            break
        for call in reply.tool_calls:
            result = read_file(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    print(f"streamed answer ({len(chunks)} chunks): {answer.strip()}")
    print(f"model calls: {len(server.sizes)}, compactions: {len(compactions)}")
    for before, after in compactions:
        print(f"  compacted {before:,} -> {after:,} tokens")
    print(
        f"the model was sent at most {max(server.sizes):,} tokens (chars/4); your history: "
        f"{len(messages)} messages"
    )


if __name__ == "__main__":
    with FakeOpenAIServer(turns=TURNS) as server:
        asyncio.run(main(server))
