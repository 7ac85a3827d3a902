"""The pydantic-ai capability in a real ``Agent`` with ``FunctionModel``: ``run_stream``
compacts as ``run`` does (issue 21 item 9), ``FunctionModel``'s own usage (a word count, far
under the real size) does not push requests over the window (item 5), and a missing window
fails the run at once (item 7)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from compaction import TiktokenCounter, validate
from compaction.integrations.pydantic_ai import Compaction, from_pydantic_ai

TASK = "Find why the parser drops the last line of input.txt."
WINDOW = 16_000
STEPS = 40
COUNT = TiktokenCounter().count_messages


class Script:
    """Calls read_file STEPS times, then answers; records every request (plain or streamed)."""

    def __init__(self) -> None:
        self.received: list[list[ModelMessage]] = []

    def step(self, messages: list[ModelMessage]) -> tuple[int, bool]:
        self.received.append(list(messages))
        n = len(self.received)
        return n, n > STEPS

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n, done = self.step(messages)
        if done:
            return ModelResponse([TextPart("Fixed: the loop stopped one line early.")])
        return ModelResponse([ToolCallPart("read_file", {"path": f"src/mod_{n}.py"}, f"c{n}")])

    async def stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        n, done = self.step(messages)
        if done:
            yield "Fixed: the loop "
            yield "stopped one line early."
            return
        args = json.dumps({"path": f"src/mod_{n}.py"})
        yield {0: DeltaToolCall(name="read_file", json_args=args[:10], tool_call_id=f"c{n}")}
        yield {0: DeltaToolCall(json_args=args[10:])}


def agent(script: Script, capability: Compaction) -> Agent:
    made = Agent(
        FunctionModel(script, stream_function=script.stream),
        instructions="You are a coding agent.",
        capabilities=[capability],
    )

    @made.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return "".join(
            f"{path}:{i}: x = parse(y)  # long line of source code here\n" for i in range(120)
        )

    return made


def sizes(script: Script) -> list[int]:
    return [COUNT(from_pydantic_ai(r)) for r in script.received]


def test_run_stream_compacts_as_run_does():
    plain, streamed = Script(), Script()
    result = agent(plain, Compaction(window=WINDOW)).run_sync(TASK)
    capability = Compaction(window=WINDOW)

    async def main() -> str:
        async with agent(streamed, capability).run_stream(TASK) as run:
            return await run.get_output()

    assert asyncio.run(main()) == result.output
    assert len(streamed.received) == len(plain.received) == STEPS + 1
    assert [len(r) for r in streamed.received] == [len(r) for r in plain.received]
    for a, b in zip(sizes(streamed), sizes(plain), strict=True):
        assert abs(a - b) <= b / 100  # recall ids are fresh per run
    assert max(sizes(streamed)) <= WINDOW
    for request in streamed.received:
        validate(from_pydantic_ai(request))


def test_function_models_undercounting_usage_does_not_push_requests_over_the_window():
    script = Script()
    capability = Compaction(window=WINDOW)
    result = agent(script, capability).run_sync(TASK)
    reported = [m.usage.input_tokens for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert reported[-1] < COUNT(from_pydantic_ai(script.received[-1])) * 0.8  # it undercounts
    assert max(sizes(script)) <= WINDOW
    stats = capability.compactor(result.conversation_id).stats
    assert stats.usage_ignored >= 1 and stats.compactions >= 1


def test_no_window_fails_the_first_request():
    script = Script()
    with pytest.raises(ValueError, match="context window"):
        agent(script, Compaction()).run_sync(TASK)
    assert script.received == []
