"""A summariser's timeout is a deadline for the whole call, and its answer is bounded in size.

Every test here runs against a real HTTP server on 127.0.0.1 (or a real blocking function) and
has a bounded runtime: the servers stop on their own, and every wait has a ceiling.
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
import tracemalloc

import pytest

from compaction import CompactionPipeline, events
from compaction.messages import user
from compaction.strategies.summary import Summary
from compaction.summarizers import INSTRUCTIONS, SummarizerError
from compaction.tokens import ApproximateCounter

from .chat_server import ChatServer
from .conversations import coding_conversation

openai = pytest.importorskip("openai")
from compaction.summarizers import OpenAIChatSummarizer  # noqa: E402

COUNTER = ApproximateCounter()
#: How far past its deadline a call may return (thread start-up, a loaded CI machine).
SLACK = 2.5


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "COMPACTION_SUMMARY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with ChatServer() as running:
        yield running


def conversation():
    # The original task comes first and is never summarised (the protection policy); the turns
    # after it are what a summary may give up, so every summariser here is really called.
    head, *turns = coding_conversation()
    return [head, user("the original task: keep the tests green"), *turns]


def timed(fn):
    started = time.monotonic()
    try:
        return fn(), time.monotonic() - started
    except Exception as exc:
        return exc, time.monotonic() - started


# -- a trickling server ------------------------------------------------------------------------


def test_a_trickling_server_cannot_hold_a_sync_call_past_its_timeout(server):
    server.mode, server.interval = "trickle", 0.1  # ~30 s to send the whole answer
    client = OpenAIChatSummarizer("m", base_url=server.base_url, timeout=1.0)
    answer, seconds = timed(lambda: client("--- user ---\nhi", INSTRUCTIONS))
    assert isinstance(answer, TimeoutError), answer
    assert "1.0" in str(answer)
    assert seconds < 1.0 + SLACK


def test_a_trickling_server_cannot_hold_an_async_call_past_its_timeout(server):
    server.mode, server.interval = "trickle", 0.1
    client = OpenAIChatSummarizer("m", base_url=server.base_url, timeout=1.0)

    async def ask():
        try:
            return await client.acall("--- user ---\nhi", INSTRUCTIONS)
        finally:
            await client.aclose()

    answer, seconds = timed(lambda: asyncio.run(ask()))
    assert isinstance(answer, TimeoutError), answer
    assert seconds < 1.0 + SLACK


def test_a_trickled_summary_fails_the_round_in_time_and_says_so(server):
    server.mode, server.interval = "trickle", 0.1
    strategy = Summary(OpenAIChatSummarizer("m", base_url=server.base_url, timeout=1.0))
    msgs = conversation()
    pipeline = CompactionPipeline().run(strategy)
    result, seconds = timed(lambda: pipeline.compact(msgs, target=800, counter=COUNTER))
    assert seconds < 1.0 + SLACK
    assert result.messages == tuple(msgs)
    [failure] = result.failures
    assert isinstance(failure.error, TimeoutError)


# -- an oversized answer -----------------------------------------------------------------------


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "no-length"])
def test_an_oversized_answer_is_refused_before_it_is_read_whole(server, declared):
    server.mode, server.size, server.declare_length = "huge", 50_000_000, declared
    client = OpenAIChatSummarizer("m", base_url=server.base_url, timeout=30)
    tracemalloc.start()
    try:
        answer, seconds = timed(lambda: client("--- user ---\nhi", INSTRUCTIONS))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(answer, SummarizerError), answer
    assert "max_bytes" in str(answer)
    assert peak < 16 * 2**20  # a cap of 1 MiB read, not 50 MB parsed (2.5 GB before)
    assert seconds < 30
    assert server.sent < 45_000_000  # the client hung up long before the end


def test_an_oversized_answer_is_refused_on_the_async_path_too(server):
    server.mode, server.size, server.declare_length = "huge", 50_000_000, False
    client = OpenAIChatSummarizer("m", base_url=server.base_url, timeout=30, max_bytes=100_000)

    async def ask():
        try:
            return await client.acall("--- user ---\nhi", INSTRUCTIONS)
        finally:
            await client.aclose()

    answer, _ = timed(lambda: asyncio.run(ask()))
    assert isinstance(answer, SummarizerError) and "max_bytes=100000" in str(answer)


def test_an_answer_within_the_cap_is_read(server):
    client = OpenAIChatSummarizer("m", base_url=server.base_url, max_bytes=2_000)
    assert client("--- user ---\nhi", INSTRUCTIONS) == server.text
    server.text = "x" * 3_000
    with pytest.raises(SummarizerError, match="max_bytes=2000"):
        client("--- user ---\nhi", INSTRUCTIONS)


# -- late answers are discarded ----------------------------------------------------------------


def test_an_async_summariser_that_ignores_cancellation_has_its_late_answer_discarded():
    async def stubborn(transcript, instructions):
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # it swallows the cancellation and answers anyway
        return "## Objective\nthe late answer"

    msgs = conversation()
    strategy = Summary(stubborn, timeout=0.2)
    result = asyncio.run(CompactionPipeline().run(strategy).acompact(msgs, target=800))
    assert result.messages == tuple(msgs)
    assert not any("late answer" in m.content for m in result.messages)
    [failure] = result.failures
    assert isinstance(failure.error, TimeoutError)


def test_a_sync_summariser_under_asyncio_run_does_not_hold_the_loop_open():
    release = threading.Event()

    def blocking(transcript, instructions):
        release.wait(10)  # the ceiling of this test, were the loop to wait for it
        return "## Objective\nlate"

    msgs = conversation()
    strategy = Summary(blocking, timeout=0.2)
    try:
        result, seconds = timed(
            lambda: asyncio.run(CompactionPipeline().run(strategy).acompact(msgs, target=800))
        )
    finally:
        release.set()
    assert seconds < 0.2 + SLACK
    assert result.messages == tuple(msgs)
    assert isinstance(result.failures[0].error, TimeoutError)


def test_a_sync_summariser_under_acompact_still_answers():
    def quick(transcript, instructions):
        return "## Objective\nshort"

    result = asyncio.run(
        CompactionPipeline().run(Summary(quick, timeout=5)).acompact(conversation(), target=800)
    )
    msgs = conversation()
    assert result.changed and result.messages[:2] == tuple(msgs[:2])  # the task kept verbatim
    assert "short" in result.messages[2].content


# -- invalid options are refused at construction -----------------------------------------------


@pytest.mark.parametrize("value", [math.inf, math.nan, 0, -1, 10**12])
def test_summary_refuses_a_timeout_that_is_no_deadline(value):
    with pytest.raises(ValueError, match="Summary timeout"):
        Summary(timeout=value)


@pytest.mark.parametrize("value", ["2", True, [1]])
def test_summary_refuses_a_timeout_of_the_wrong_type(value):
    with pytest.raises(TypeError, match="Summary timeout"):
        Summary(timeout=value)


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("timeout", math.inf, ValueError),
        ("timeout", math.nan, ValueError),
        ("timeout", "60", TypeError),
        ("max_bytes", 0, ValueError),
        ("max_bytes", 1.5, TypeError),
        ("temperature", "hot", TypeError),
        ("temperature", math.nan, ValueError),
        ("max_retries", -1, ValueError),
        ("max_retries", 1.0, TypeError),
        ("base_url", 8080, TypeError),
        ("api_key", b"k", TypeError),
    ],
)
def test_openai_summariser_refuses_bad_options_by_name(option, value, error):
    options = {"base_url": "http://127.0.0.1:9/v1", option: value}
    with pytest.raises(error, match=f"OpenAIChatSummarizer {option}"):
        OpenAIChatSummarizer("m", **options)


def test_openai_summariser_refuses_a_model_that_is_not_text():
    with pytest.raises(TypeError, match="OpenAIChatSummarizer model"):
        OpenAIChatSummarizer(3, base_url="http://127.0.0.1:9/v1")


# -- failures are visible where users look -----------------------------------------------------


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on exit: nothing listens there


def test_a_dead_endpoint_is_reported_as_a_failure_with_its_error(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    strategy = Summary(OpenAIChatSummarizer("m", base_url=url, timeout=5))
    failed = []

    def on_failed(sender, **kw):
        failed.append(kw)

    msgs = conversation()
    with events.failed.connected_to(on_failed):
        result = CompactionPipeline().run(strategy).compact(msgs, target=800, counter=COUNTER)
    assert result.messages == tuple(msgs)
    [declined] = result.declined
    assert declined.reason == "raised"
    assert isinstance(declined.error, openai.APIConnectionError)
    assert result.failures == (declined,)
    assert [f["error"] for f in failed] == [declined.error]  # reported once, with its error
    assert strategy.failures == 1


def test_no_api_key_fails_at_the_first_call_saying_what_to_set(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "COMPACTION_SUMMARY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    client = OpenAIChatSummarizer(model="gpt-4o-mini")  # built fine: nothing is sent yet
    strategy = Summary(client)
    result = CompactionPipeline().run(strategy).compact(conversation(), target=800)
    [failure] = result.failures
    assert "OPENAI_API_KEY" in str(failure.error)
    with pytest.raises(SummarizerError, match="OPENAI_API_KEY"):
        asyncio.run(client.acall("--- user ---\nhi", INSTRUCTIONS))
