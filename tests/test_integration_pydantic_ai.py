"""The pydantic-ai capability and history processor, run in a real ``Agent`` with a
``FunctionModel`` that calls a tool every turn and records every request it is sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from compaction import TiktokenCounter, validate
from compaction.integrations.pydantic_ai import (
    Compaction,
    compaction_processor,
    from_pydantic_ai,
)

TASK = "Find where the config parser drops the last line of every file, and fix it."
INSTRUCTIONS = "You are a careful coding agent. Use read_file to inspect files."
WINDOW = 12_000
STEPS = 40


class Script:
    """Calls ``read_file`` for ``steps`` turns, then answers; records every request."""

    def __init__(self, steps: int = STEPS) -> None:
        self.steps = steps
        self.received: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.received.append(list(messages))
        turn = len(self.received)
        if turn > self.steps:
            return ModelResponse([TextPart("The parser skipped the final line; fixed.")])
        call = ToolCallPart("read_file", {"path": f"src/mod_{turn}.py"}, f"c{turn}")
        return ModelResponse([TextPart(f"Reading module {turn}."), call])


def make_agent(script: Script, capabilities: list[Any]) -> Agent:
    agent = Agent(FunctionModel(script), instructions=INSTRUCTIONS, capabilities=capabilities)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return "\n".join(f"{path}:{n}: value_{n} = parse(line_{n}) # keep going" for n in range(40))

    return agent


def shape(messages: list[ModelMessage]) -> list[Any]:
    return [[(type(p).__name__, getattr(p, "content", None)) for p in m.parts] for m in messages]


def run(capabilities: list[Any], script: Script | None = None) -> tuple[Script, Any]:
    script = script or Script()
    result = asyncio.run(make_agent(script, capabilities).run(TASK))
    return script, result


def check_requests(script: Script, counter: TiktokenCounter, tool_tokens: int) -> list[int]:
    sizes = []
    for request in script.received:
        ours = from_pydantic_ai(request)
        validate(ours)  # every tool call answered right after it, no orphan result
        assert any(m.role == "user" and m.content == TASK for m in ours)
        sizes.append(counter.count_messages(ours) + tool_tokens)
        assert sizes[-1] <= WINDOW
    return sizes


def test_capability_compacts_requests_and_keeps_the_history_whole():
    counter = TiktokenCounter()
    # FunctionModel reports a word-count estimate as usage, not a tokenizer's count: the
    # test checks the window by tiktoken, so the estimate is not anchored on that.
    capability = Compaction(window=WINDOW, counter=counter, observe_usage=False)
    script, result = run([capability])
    baseline_script, baseline = run([])

    assert len(script.received) == STEPS + 1
    compactor = capability.compactor(result.conversation_id)
    sizes = check_requests(script, counter, compactor.tool_tokens)
    baseline_sizes = [counter.count_messages(from_pydantic_ai(r)) for r in baseline_script.received]
    assert max(baseline_sizes) > WINDOW
    assert sum(sizes) < sum(baseline_sizes)
    assert compactor.stats.compactions >= 1
    # The run's history is complete: exactly what it is without the capability.
    assert shape(result.all_messages()) == shape(baseline.all_messages())
    assert len(result.all_messages()) == 2 * STEPS + 2
    # Between compactions, each request extends the previous one (prompt cache stays warm).
    rewrites = sum(
        1
        for before, after in zip(script.received, script.received[1:], strict=False)
        if shape(after[: len(before)]) != shape(before)
    )
    assert rewrites == compactor.stats.compactions


def test_the_instructions_and_tools_count_against_the_window():
    counter = TiktokenCounter()
    capability = Compaction(window=WINDOW, counter=counter, observe_usage=False)
    script, result = run([capability], Script(steps=2))
    compactor = capability.compactor(result.conversation_id)
    assert compactor.tool_tokens > 0  # read_file's schema
    # The instructions are counted as a system block in front of the messages.
    first = from_pydantic_ai(script.received[0])
    assert compactor.stats.last_tokens > counter.count_messages(first) + compactor.tool_tokens


def test_history_processor_compacts_the_history_itself():
    counter = TiktokenCounter()
    processor = compaction_processor(window=WINDOW, counter=counter)
    script, result = run([ProcessHistory(processor)])
    check_requests(script, counter, 0)
    history = from_pydantic_ai(result.all_messages())
    validate(history)
    # pydantic-ai writes what a processor answers back into the history: it is compacted
    # (old tool output cleared), and it stays a valid conversation.
    assert any(m.meta.get("compaction") for m in history)


def test_window_from_the_model_profile_or_a_clear_error():
    script = Script(steps=1)
    model = FunctionModel(script, profile={"context_window": 50_000})
    capability = Compaction()
    agent = Agent(model, capabilities=[capability])
    result = agent.run_sync(TASK)
    assert capability.compactor(result.conversation_id).window == 50_000

    # No window anywhere: the run fails at its first request, rather than go on uncompacted.
    with pytest.raises(ValueError, match="context window"):
        Agent(FunctionModel(Script(steps=0)), capabilities=[Compaction()]).run_sync(TASK)
    with pytest.raises(ValueError, match="window"):
        Compaction(window=-1)


def test_a_history_from_an_earlier_run_is_compacted_too():
    counter = TiktokenCounter()
    history: list[ModelMessage] = [ModelRequest([UserPromptPart(TASK)])]
    for n in range(40):
        call = ToolCallPart("read_file", {"path": f"old_{n}.py"}, f"old{n}")
        history.append(ModelResponse([call]))
        history.append(ModelRequest([ToolReturnPart("read_file", "x = 1\n" * 150, f"old{n}")]))
    history.append(ModelResponse([TextPart("Done with the first pass.")]))
    capability = Compaction(window=WINDOW, counter=counter, observe_usage=False)
    script = Script(steps=0)
    agent = make_agent(script, [capability])
    result = agent.run_sync("Now check the tests too.", message_history=history)
    sent = from_pydantic_ai(script.received[0])
    validate(sent)
    assert counter.count_messages(sent) <= WINDOW
    assert any(m.role == "user" and m.content == TASK for m in sent)
    assert sent[-1].role == "user" and sent[-1].content == "Now check the tests too."
    assert result.all_messages()[: len(history)] == history


def test_the_providers_usage_anchors_the_estimate():
    from pydantic_ai.usage import RequestUsage

    counter = TiktokenCounter()

    class Reporting(Script):
        """Reports twice the local count as input tokens, as a provider that sees more."""

        def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            response = super().__call__(messages, info)
            local = counter.count_messages(from_pydantic_ai(messages))
            response.usage = RequestUsage(input_tokens=2 * local)
            return response

    capability = Compaction(window=WINDOW, counter=counter)
    script, result = run([capability], Reporting())
    compactor = capability.compactor(result.conversation_id)
    assert compactor.stats.compactions >= 1
    local = [counter.count_messages(from_pydantic_ai(r)) for r in script.received]
    # The provider sees twice what we count: requests stay near half the window by our count.
    assert max(local) <= WINDOW // 2
    plain = Compaction(window=WINDOW, counter=counter, observe_usage=False)
    unanchored, _ = run([plain])
    assert max(counter.count_messages(from_pydantic_ai(r)) for r in unanchored.received) > (
        WINDOW // 2
    )
