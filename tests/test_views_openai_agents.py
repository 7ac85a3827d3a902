"""One Agents SDK ``CompactionFilter`` given to real ``Runner.run`` calls, with a model that
records its input, fed conversations that share a beginning but are not extensions of each
other: each request must be exactly what a fresh filter would send (issue 20 item 1, issue 21
item 6)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

agents = pytest.importorskip("agents")
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import ResponseOutputMessage, ResponseOutputText  # noqa: E402

from compaction import TiktokenCounter  # noqa: E402
from compaction.integrations.openai_agents import CompactionFilter  # noqa: E402

INSTRUCTIONS = "You are a bank's support agent."
GREETING = "Hello, I need help with my account."
WINDOW = 3_000


class Recorder(Model):  # type: ignore[misc]
    """Answers "ok"; records the input of every call."""

    def __init__(self) -> None:
        self.received: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any):
        self.received.append(input)
        text = ResponseOutputText(type="output_text", text="ok", annotations=[])
        message = ResponseOutputMessage(
            id="m", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def conversation(who: str, secret: str) -> list[dict[str, Any]]:
    """A long history: one greeting first and "continue" last, shared by every user."""
    items: list[dict[str, Any]] = [{"role": "user", "content": GREETING}]
    for i in range(25):
        detail = f"{who} note {i}: account {who}-{i}, code {secret}. " * 6
        items += [{"role": "user", "content": detail}, {"role": "assistant", "content": "Noted."}]
    return [*items, {"role": "user", "content": "continue"}]


def sent(flt: CompactionFilter, *histories: list[dict[str, Any]]) -> str:
    """What the model received for the last history, after running them all in turn."""
    model = Recorder()
    agent = agents.Agent(name="support", instructions=INSTRUCTIONS, model=model)
    config = agents.RunConfig(call_model_input_filter=flt, tracing_disabled=True)
    for history in histories:
        asyncio.run(agents.Runner.run(agent, history, run_config=config))
    return repr(model.received[-1])


def make_filter() -> CompactionFilter:
    return CompactionFilter(window=WINDOW, counter=TiktokenCounter())


def test_two_conversations_through_one_filter_never_share_a_view():
    a, b = conversation("alice", "4321"), conversation("bob", "9876")
    shared = make_filter()
    sent(shared, a)
    assert shared.compactor.stats.compactions >= 1  # A has a view to leak
    got = sent(shared, a, b)
    assert got == sent(make_filter(), b)
    assert "4321" not in got and "alice" not in got


def test_a_history_edited_in_the_middle_is_not_taken_for_an_extension():
    a = conversation("alice", "4321")
    edited = list(a)
    edited[21] = {"role": "user", "content": "alice note 10 was wrong: the code is 5555. " * 6}
    edited += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "and then?"}]
    got = sent(make_filter(), a, edited)
    assert got == sent(make_filter(), edited)
