"""A LangChain ``create_agent`` tool loop whose tool results are big, compacted before every
model call by ``CompactionMiddleware``, and streamed.

The model is LangChain's own fake chat model (``GenericFakeChatModel``), scripted to read one
large file per turn and then answer, so this runs offline. Run it::

    python examples/langchain_agent.py
"""

from __future__ import annotations

import json
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from compaction.integrations.langchain import CompactionMiddleware

WINDOW = 8_000  # a small window, so that compaction happens within a few turns
TURNS = 12


class FakeModel(GenericFakeChatModel):
    """LangChain's fake chat model, taught two things a tool loop needs: ``create_agent``
    binds tools (ignored: the script decides), and a streamed reply carries its tool calls."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        message = next(self.messages)
        for word in message.content.split(" "):  # the text, word by word
            yield ChatGenerationChunk(message=AIMessageChunk(content=word + " "))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                    for i, c in enumerate(message.tool_calls)
                ],
                chunk_position="last",
            )
        )


def read_file(path: str) -> str:
    """Read a source file (a big tool result: about 600 tokens)."""
    return "\n".join(f"{path}:{n}: value_{n} = parse(line_{n})  # keep going" for n in range(40))


def script() -> list[AIMessage]:
    """One big file read per turn, then the answer."""
    calls = []
    for n in range(TURNS):
        call = {"name": "read_file", "args": {"path": f"src/mod_{n}.py"}, "id": f"call_{n}"}
        calls.append(AIMessage(f"Reading src/mod_{n}.py.", tool_calls=[call]))
    return [*calls, AIMessage("The parser stops one line early in src/mod_7.py; fixed.")]


def main() -> None:
    middleware = CompactionMiddleware(window=WINDOW)  # compact at 70% of it, down to 40%
    agent = create_agent(FakeModel(messages=iter(script())), [read_file], middleware=[middleware])
    replies: dict[str, str] = {}  # each model reply's text, by message id, as it streams in
    chunks = 0
    # stream_mode="messages": every model reply arrives chunk by chunk.
    for chunk, _meta in agent.stream(
        {"messages": [("user", "Find why the parser drops the last line.")]},
        {"recursion_limit": 100},
        stream_mode="messages",
    ):
        if chunk.type == "AIMessageChunk":
            replies[chunk.id] = replies.get(chunk.id, "") + chunk.content
            chunks += 1
    stats = middleware.compactor().stats
    print(f"streamed {len(replies)} model replies in {chunks} chunks; the answer:")
    print(" ", list(replies.values())[-1].strip())
    print(f"model calls: {TURNS + 1}, compactions: {stats.compactions}")
    print(f"last request: {stats.last_tokens:,} tokens (window {WINDOW:,})")


if __name__ == "__main__":
    main()
