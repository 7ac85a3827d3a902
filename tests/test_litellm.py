"""LiteLLM, for real: a tool-calling loop through ``litellm.acompletion`` against a local
OpenAI-compatible server on 127.0.0.1, with the hook in ``litellm.callbacks``."""

from __future__ import annotations

import asyncio
import itertools
import json
import os

import pytest

# Offline: LiteLLM's bundled model map, no telemetry.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")
litellm = pytest.importorskip("litellm")

from compaction import validate  # noqa: E402
from compaction.adapters.openai import from_openai  # noqa: E402
from compaction.integrations.litellm import CompactionHook, MissingWindowError  # noqa: E402
from compaction.tokens import TiktokenCounter  # noqa: E402
from tests.model_server import ScriptedChatServer, text_reply, tool_call_reply  # noqa: E402

litellm.telemetry = False
# LiteLLM's own types warn on import under new pydantic versions; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")
WINDOW = 5000
STEPS = 14
TASK = "Task: find which of the data files holds the largest value."
COUNTER = TiktokenCounter()
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a data file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def scripted_by_call_count():
    state = {"n": 0}

    def reply(body):
        n = state["n"]
        state["n"] += 1
        if n >= STEPS:
            return text_reply("data13.csv")
        return tool_call_reply("read", {"path": f"data{n}.csv"}, f"call_{n}")

    return reply


def agent_loop(server, model="openai/local-model", **extra):
    """A plain tool loop: the caller keeps the full history and sends it every time."""
    messages = [
        {"role": "system", "content": "You analyse data."},
        {"role": "user", "content": TASK},
    ]

    async def main():
        while True:
            response = await litellm.acompletion(
                model=model,
                messages=messages,
                tools=TOOLS,
                api_base=server.base_url,
                api_key="test",
                **extra,
            )
            message = response.choices[0].message
            messages.append(message)  # the SDK object itself, as people write it
            if not message.tool_calls:
                return messages
            for call in message.tool_calls:
                path = json.loads(call.function.arguments)["path"]
                rows = "\n".join(f"{path},{i},{i * 7 % 101}" for i in range(150))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": rows})

    return asyncio.run(main())


@pytest.fixture
def hook():
    saved = list(litellm.callbacks)
    made: list[CompactionHook] = []

    def install(**options):
        made.append(CompactionHook(**options))
        litellm.callbacks = [made[-1]]
        return made[-1]

    try:
        yield install
    finally:
        litellm.callbacks = saved


def tokens(body) -> int:
    return COUNTER.count_messages(from_openai(body["messages"]))


def run(**extra):
    with ScriptedChatServer(scripted_by_call_count(), prompt_tokens=provider_tokens) as server:
        history = agent_loop(server, **extra)
        return server.requests, history


def provider_tokens(body) -> int:
    """What the local server reports as the request's prompt_tokens: its own tokenizer counts
    a quarter more than ours (as Anthropic's does), and it is the measure of the window."""
    return tokens(body) * 5 // 4 + 1


def test_every_acompletion_is_compacted_to_the_window(hook):
    plain, _ = run()
    assert max(map(provider_tokens, plain)) > WINDOW  # without the hook, the loop overflows
    installed = hook(window=WINDOW, counter=COUNTER)
    requests, history = run()
    assert len(requests) == len(plain) == STEPS + 1
    for body in requests:
        messages = from_openai(body["messages"])
        validate(messages)
        # The provider's reported count of each answer anchors the next estimate, so the
        # window is kept by the provider's measure, not by our tokenizer's.
        assert provider_tokens(body) <= WINDOW
        assert any(m.role == "user" and m.content == TASK for m in messages)
        assert body["tools"] == TOOLS
    assert sum(map(tokens, requests)) < sum(map(tokens, plain))
    compactor = installed.compactor()
    assert compactor is not None and installed.stats.calls == len(requests)
    assert compactor.stats.compactions >= 1
    assert compactor.stats.anchored  # the last estimate stood on the provider's count
    # Between compactions each request extends the one before (the prompt cache stays warm).
    extended = sum(
        1
        for a, b in itertools.pairwise(requests)
        if b["messages"][: len(a["messages"])] == a["messages"]
    )
    assert extended > len(requests) // 2
    # The caller's own history is complete: every call and every output, raw.
    outputs = [m for m in history if isinstance(m, dict) and m.get("role") == "tool"]
    assert len(outputs) == STEPS and all(len(m["content"]) > 2000 for m in outputs)


def test_the_model_map_gives_the_window(hook):
    litellm.register_model(
        {
            "openai/tiny-window-model": {
                "max_input_tokens": WINDOW,
                "max_tokens": WINDOW,
                "litellm_provider": "openai",
                "mode": "chat",
                "input_cost_per_token": 0,
                "output_cost_per_token": 0,
            }
        }
    )
    installed = hook(counter=COUNTER)  # no window given: LiteLLM knows this one
    assert installed.window_for("openai/tiny-window-model") == WINDOW
    requests, _ = run(model="openai/tiny-window-model")
    assert max(map(provider_tokens, requests)) <= WINDOW
    assert hook(counter=COUNTER).window_for("gpt-4o-mini") == 128_000


def test_sync_code_compacts_with_compact_messages(hook):
    installed = CompactionHook(window=WINDOW, counter=COUNTER)
    with ScriptedChatServer(scripted_by_call_count()) as server:
        messages = [{"role": "user", "content": TASK}]
        for _ in range(STEPS + 1):
            response = litellm.completion(
                model="openai/local-model",
                messages=installed.compact_messages("openai/local-model", messages, tools=TOOLS),
                tools=TOOLS,
                api_base=server.base_url,
                api_key="test",
            )
            message = response.choices[0].message
            messages.append(message)
            for call in message.tool_calls or []:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "v," * 1500})
        requests = server.requests
    assert max(map(tokens, requests)) <= WINDOW
    assert len(messages) == 1 + STEPS * 2 + 1


def test_proxy_hook_rewrites_the_request_body():
    installed = CompactionHook(window=2000, counter=COUNTER)
    big = [{"role": "user", "content": TASK}]
    for n in range(10):
        big.append(tool_call_reply("read", {"path": str(n)}, f"c{n}"))
        big.append({"role": "tool", "tool_call_id": f"c{n}", "content": "row " * 400})
    data = {"model": "openai/local-model", "messages": big, "litellm_session_id": "s1"}
    out = asyncio.run(installed.async_pre_call_hook(None, None, data, "completion"))
    assert out is not data and out["model"] == data["model"]
    validate(from_openai(out["messages"]))
    assert tokens(out) <= 2000
    assert data["messages"] is big and len(big) == 21  # the caller's request is not touched
    small = {"model": "openai/local-model", "messages": big[:1]}
    assert asyncio.run(installed.async_pre_call_hook(None, None, small, "completion")) is small


def test_a_model_without_a_window_fails_the_call_at_once(hook):
    """Issue 21 item 7: no window from LiteLLM's map and none given is an error the caller
    sees, not a run that goes out uncompacted with a warning per call."""
    hook(counter=COUNTER)  # no fallback window
    with ScriptedChatServer(scripted_by_call_count()) as server:
        with pytest.raises(MissingWindowError, match="context window"):
            agent_loop(server, model="openai/unknown-model-x")
        assert server.requests == []


def test_unreadable_requests_go_out_as_they_came():
    windowed = CompactionHook(window=1000)
    bad = {"model": "openai/local-model", "messages": [{"role": "wizard", "content": "x"}]}
    assert asyncio.run(windowed.async_pre_call_deployment_hook(bad, None)) is None
    assert asyncio.run(windowed.async_pre_call_deployment_hook({"input": "x"}, None)) is None
    with pytest.raises(ValueError, match="window"):
        CompactionHook(window=0)
