"""The LangChain middleware in a real ``create_agent`` graph: streamed runs compact as plain
ones (issue 21 item 9), a model reporting 0 or half its input tokens still has its requests
kept in the window (item 5), and a missing window fails the run at once (item 7)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool

from compaction import TiktokenCounter, validate
from compaction.integrations.langchain import CompactionMiddleware, from_langchain

TASK = "Find why the parser drops the last line of input.txt."
WINDOW = 16_000
STEPS = 30
COUNT = TiktokenCounter().count_messages


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "".join(
        f"{path}:{i}: x = parse(y)  # some long line of source code here\n" for i in range(120)
    )


class RecordingModel(BaseChatModel):
    """Calls read_file STEPS times, then answers; reports ``share`` of the local count of each
    request as its input tokens (0: a fake or local server; 0.5: an undercounting one)."""

    share: float | None = None  # None: no usage reported
    received: list[list[BaseMessage]] = []  # noqa: RUF012  (a pydantic field)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingModel:
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        self.received.append(list(messages))
        n = len(self.received)
        usage = None
        if self.share is not None:
            reported = int(COUNT(from_langchain(messages)) * self.share)
            usage = {"input_tokens": reported, "output_tokens": 5, "total_tokens": reported + 5}
        if n > STEPS:
            return AIMessage("Fixed: the loop stopped one line early.", usage_metadata=usage)
        call = {"name": "read_file", "args": {"path": f"src/mod_{n}.py"}, "id": f"call_{n}"}
        return AIMessage("", tool_calls=[call], usage_metadata=usage)

    def _generate(self, messages, stop=None, run_manager=None, **kw) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(self, messages, stop=None, run_manager=None, **kw) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages)
        chunks = [
            AIMessageChunk(content=reply.content[:5]),
            AIMessageChunk(
                content=reply.content[5:],
                tool_call_chunks=[
                    {
                        "name": c["name"],
                        "args": str(c["args"]).replace("'", '"'),
                        "id": c["id"],
                        "index": 0,
                    }
                    for c in reply.tool_calls
                ],
                usage_metadata=reply.usage_metadata,
            ),
        ]
        for chunk in chunks:
            yield ChatGenerationChunk(message=chunk)


def run(
    mode: str, share: float | None = None, **options
) -> tuple[RecordingModel, CompactionMiddleware]:
    model = RecordingModel(share=share, received=[])
    mw = CompactionMiddleware(window=WINDOW, **options)
    agent = create_agent(
        model, [read_file], system_prompt="You are a coding agent.", middleware=[mw]
    )
    inputs = {"messages": [HumanMessage(TASK)]}
    config = {"recursion_limit": 500}
    if mode == "invoke":
        agent.invoke(inputs, config)
    elif mode == "stream":
        for _ in agent.stream(inputs, config, stream_mode="messages"):
            pass
    elif mode == "astream":

        async def main():
            async for _ in agent.astream(inputs, config, stream_mode="messages"):
                pass

        asyncio.run(main())
    else:
        asyncio.run(agent.ainvoke(inputs, config))
    return model, mw


def sizes(model: RecordingModel) -> list[int]:
    return [COUNT(from_langchain(r)) for r in model.received]


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_streamed_runs_compact_as_plain_runs(mode):
    plain, _ = run("invoke" if mode == "stream" else "ainvoke")
    streamed, mw = run(mode)
    assert len(streamed.received) == len(plain.received) == STEPS + 1
    # The same requests, message for message; recall ids are fresh uuids (message ids), whose
    # token counts differ by a token or two between runs, so sizes agree within 1%.
    assert [len(r) for r in streamed.received] == [len(r) for r in plain.received]
    for a, b in zip(sizes(streamed), sizes(plain), strict=True):
        assert abs(a - b) <= b / 100
    assert mw.compactor().stats.compactions >= 1
    assert max(sizes(streamed)) <= WINDOW
    for request in streamed.received:
        validate(from_langchain(request))


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_a_model_that_undercounts_its_input_stays_in_the_window(share):
    model, mw = run("invoke", share=share)
    assert max(sizes(model)) <= WINDOW
    stats = mw.compactor().stats
    assert stats.compactions >= 1 and stats.usage_ignored >= 1


def test_observe_usage_false_ignores_what_the_model_reports():
    model, mw = run("invoke", share=3.0, observe_usage=False)
    assert not mw.compactor().stats.anchored
    assert max(sizes(model)) <= WINDOW


def test_no_window_fails_the_first_model_call():
    model = RecordingModel(received=[])
    agent = create_agent(model, [read_file], middleware=[CompactionMiddleware()])
    with pytest.raises(ValueError, match="context window"):
        agent.invoke({"messages": [HumanMessage(TASK)]})
    assert model.received == []
