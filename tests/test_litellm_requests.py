"""LiteLLM, for real, against a local server on 127.0.0.1: whose conversation a request
carries (issue 20 item 1), what LiteLLM logs (issue 21 item 8), streamed calls (item 9) and a
provider reporting 0 input tokens (item 5)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")
litellm = pytest.importorskip("litellm")

from litellm.integrations.custom_logger import CustomLogger  # noqa: E402

from compaction import validate  # noqa: E402
from compaction.adapters.openai import from_openai  # noqa: E402
from compaction.integrations.litellm import CompactionHook  # noqa: E402
from compaction.tokens import TiktokenCounter  # noqa: E402
from tests.model_server import ScriptedChatServer, text_reply  # noqa: E402

litellm.telemetry = False
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")
COUNTER = TiktokenCounter()
MODEL = "openai/local-model"


def tokens(messages) -> int:
    return COUNTER.count_messages(from_openai(messages))


class Recorder(CustomLogger):  # type: ignore[misc]
    """LiteLLM's own logging callback: what it is told the request was."""

    def __init__(self) -> None:
        super().__init__()
        self.logged: list[list[Any]] = []

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        self.logged.append(list(kwargs.get("messages") or []))


@pytest.fixture
def callbacks():
    saved = list(litellm.callbacks)

    def install(*hooks):
        litellm.callbacks = list(hooks)

    try:
        yield install
    finally:
        litellm.callbacks = saved


def bank_conversation(who: str, secret: str, turns: int) -> list[dict[str, Any]]:
    out = [
        {"role": "system", "content": "You are the support assistant of ExampleBank."},
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": f"I am {who}. {secret}"},
    ]
    for _i in range(turns):
        out += [
            {"role": "assistant", "content": f"Noted, {who}. Details: " + "lorem ipsum " * 120},
            {"role": "user", "content": "continue"},
        ]
    return out


async def call(server, messages, **extra):
    return await litellm.acompletion(
        model=MODEL, messages=messages, api_base=server.base_url, api_key="test", **extra
    )


def test_another_users_conversation_never_goes_out_in_a_request(callbacks):
    """Two users, no session id, the same system prompt, greeting and "continue" at the same
    position: each request the server receives holds only its own user's conversation."""
    hook = CompactionHook(window=4000)  # as a new user writes it: the defaults
    callbacks(hook)
    alice = bank_conversation("Alice", "My account number is 1111-2222 and my PIN is 4321.", 12)
    bob = bank_conversation("Bob", "I want to close my account.", 12)
    bob += [{"role": "assistant", "content": "Sure."}, {"role": "user", "content": "My name?"}]
    with ScriptedChatServer([text_reply("ok")] * 4) as server:

        async def main():
            await call(server, alice)
            await call(server, bob)
            alice.append({"role": "assistant", "content": "ok"})
            alice.append({"role": "user", "content": "and my PIN?"})
            await call(server, alice)

        asyncio.run(main())
        _a1, b, a2 = (str(r["messages"]) for r in server.requests)
    assert tokens(server.requests[0]["messages"]) < tokens(alice)  # compacted: a view exists
    assert "4321" not in b and "Alice" not in b
    assert "I am Bob" in b
    assert "Bob" not in a2 and "4321" in a2
    assert hook.stats.calls == 3


def test_what_litellm_logs_is_what_was_sent(callbacks):
    recorder = Recorder()
    hook = CompactionHook(window=4000, counter=COUNTER)
    callbacks(hook, recorder)
    history = bank_conversation("Alice", "PIN 4321.", 14)
    with ScriptedChatServer([text_reply("ok")]) as server:

        async def main():
            await call(server, history)
            for _ in range(200):  # LiteLLM runs success callbacks as tasks after the call
                if recorder.logged:
                    return
                await asyncio.sleep(0.02)

        asyncio.run(main())
        sent = server.requests[0]["messages"]
    assert tokens(sent) < tokens(history)
    assert recorder.logged, "LiteLLM's success callback did not run"
    assert recorder.logged[0] == sent


def test_a_streamed_acompletion_is_compacted_as_a_plain_one(callbacks):
    bodies = {}
    for stream in (False, True):
        hook = CompactionHook(window=4000, counter=COUNTER)
        callbacks(hook)
        history = bank_conversation("Alice", "PIN 4321.", 14)
        with ScriptedChatServer([text_reply("ok")]) as server:

            async def main(stream=stream, server=server, history=history):
                response = await call(server, history, stream=stream)
                if stream:
                    return "".join(
                        [c.choices[0].delta.content or "" async for c in response if c.choices]
                    )
                return response.choices[0].message.content

            assert asyncio.run(main()) == "ok"
            bodies[stream] = server.requests[0]
    assert bodies[True].get("stream") is True
    assert bodies[True]["messages"] == bodies[False]["messages"]
    assert tokens(bodies[True]["messages"]) <= 0.7 * 4000
    validate(from_openai(bodies[True]["messages"]))


def test_a_server_that_reports_zero_input_tokens_does_not_switch_compaction_off(callbacks):
    hook = CompactionHook(window=3000, counter=COUNTER)
    callbacks(hook)
    messages: list[Any] = [{"role": "user", "content": "Summarise the logs."}]
    with ScriptedChatServer([text_reply("ok")] * 30, prompt_tokens=lambda body: 0) as server:

        async def main():
            for i in range(30):
                reply = await call(server, messages)
                messages.append(reply.choices[0].message.model_dump(exclude_none=True))
                messages.append({"role": "user", "content": f"log {i}: " + "error x " * 150})

        asyncio.run(main())
        sizes = [tokens(r["messages"]) for r in server.requests]
    assert tokens(messages) > 3 * 3000
    assert max(sizes) <= 3000
    assert hook.stats.usage_ignored >= 20 and hook.stats.compactions >= 1


def test_the_proxy_hook_never_sends_another_users_conversation():
    """The proxy's pre-call hook, as the proxy calls it: Bob's request shares Alice's system
    prompt, greeting and "continue" at her last position, and must still be his own."""
    hook = CompactionHook(window=4000)  # as a new user writes it: the defaults
    alice = bank_conversation("Alice", "My account number is 1111-2222 and my PIN is 4321.", 12)
    bob = bank_conversation("Bob", "I want to close my account.", 12)
    bob += [{"role": "assistant", "content": "Sure."}, {"role": "user", "content": "My name?"}]

    async def main():
        a = {"model": MODEL, "messages": alice, "litellm_call_id": "a1"}
        out_a = await hook.async_pre_call_hook(None, None, a, "completion")
        b = {"model": MODEL, "messages": bob, "litellm_call_id": "b1"}
        return out_a, await hook.async_pre_call_hook(None, None, b, "completion")

    out_a, out_b = asyncio.run(main())
    assert out_a["messages"] != alice  # Alice's request was compacted: a view exists
    sent = str(out_b["messages"])
    assert "4321" not in sent and "Alice" not in sent
    assert "I am Bob" in sent
    validate(from_openai(out_b["messages"]))
