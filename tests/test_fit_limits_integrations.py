"""The window is the hard limit through an integration (issue 19.4): a real pydantic-ai
``Agent`` with a ``FunctionModel`` that records what it is sent, and a LangChain agent with a
fake chat model. A task over the compaction aim (40% of the window) but within the window reaches
the model whole in every request, and every request fits the window."""

from __future__ import annotations

import asyncio

import pytest

from compaction import TiktokenCounter, validate

TASK = "Port the config parser to the new tokenizer and keep every public name. " * 390
WINDOW = 12_000
STEPS = 25


def test_pydantic_ai_sends_a_task_that_fits_the_window_whole():
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from compaction.integrations.pydantic_ai import Compaction, from_pydantic_ai

    counter = TiktokenCounter()
    assert 0.4 * WINDOW < counter.count_text(TASK) < 0.5 * WINDOW
    received = []

    def script(messages, info):
        received.append(list(messages))
        if len(received) > STEPS:
            return ModelResponse([TextPart("Done.")])
        n = len(received)
        return ModelResponse([ToolCallPart("read_file", {"path": f"src/m{n}.py"}, f"c{n}")])

    capability = Compaction(window=WINDOW, counter=counter, observe_usage=False)
    agent = Agent(FunctionModel(script), capabilities=[capability])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return "\n".join(f"{path}:{n}: value_{n} = parse(line_{n})" for n in range(60))

    result = asyncio.run(agent.run(TASK))
    compactor = capability.compactor(result.conversation_id)
    assert compactor.stats.compactions >= 1
    for request in received:
        ours = from_pydantic_ai(request)
        validate(ours)
        assert any(m.role == "user" and m.content == TASK for m in ours)
        assert counter.count_messages(ours) + compactor.tool_tokens <= WINDOW
