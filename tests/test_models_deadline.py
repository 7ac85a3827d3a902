"""``deadline=`` bounds a whole model call, against a real server that trickles its answer."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from compaction.loop.models import AsyncOpenAIChatModel, OpenAIChatModel
from compaction.messages import user

from .chat_server import ChatServer

pytest.importorskip("openai")

SLACK = 2.5


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with ChatServer() as running:
        yield running


def test_a_trickling_server_cannot_hold_a_model_call_past_its_deadline(server):
    server.mode, server.interval = "trickle", 0.1
    model = OpenAIChatModel("m", base_url=server.base_url, api_key="-", deadline=1.0)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="model m did not answer within 1.0s"):
        model([user("hi")])
    assert time.monotonic() - started < 1.0 + SLACK


def test_the_async_model_has_the_same_deadline(server):
    server.mode, server.interval = "trickle", 0.1
    model = AsyncOpenAIChatModel("m", base_url=server.base_url, api_key="-", deadline=1.0)

    async def ask():
        try:
            return await model([user("hi")])
        finally:
            await model.client.close()

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        asyncio.run(ask())
    assert time.monotonic() - started < 1.0 + SLACK


def test_a_reply_within_the_deadline_is_read(server):
    model = OpenAIChatModel("m", base_url=server.base_url, api_key="-", deadline=10)
    assert model([user("hi")]).content == server.text


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan])
def test_a_deadline_that_is_no_deadline_is_refused(value):
    with pytest.raises(ValueError, match="OpenAIChatModel deadline"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="-", deadline=value)
