"""The framework's own model as the summariser, with each framework's own test model.

Every framework gets the same four models: one that answers a short summary, one that is slow
(the deadline), one that answers far too much (the size cap) and one that fails (the Summary's
breaker). LangChain and the Agents SDK run a real model class of theirs, pydantic-ai its
``FunctionModel``, LiteLLM a real HTTP server on 127.0.0.1. The assertions are on what the
model received and on what the summary strategy did with its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from compaction import CompactionPipeline, events
from compaction.messages import user
from compaction.strategies.summary import Summary
from compaction.summarizers import INSTRUCTIONS, SummarizerError, model_summarizer
from compaction.tokens import ApproximateCounter

from .conversations import coding_conversation
from .model_server import ScriptedChatServer, text_reply

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_TELEMETRY", "False")
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")

COUNTER = ApproximateCounter()
SUMMARY = "## Objective\nkeep the tests green\n## Outstanding\nrun the suite"
TIMEOUT = 0.5
SLACK = 2.5  # how far past its deadline a call may return on a loaded machine
SLOW = 6.0  # how long the slow model takes: far past the deadline
KINDS = ["langchain", "pydantic_ai", "agents", "litellm"]


class Behaviour:
    """What the fake model does, and what it was sent.

    A slow model waits for ``release`` (at most ``SLOW`` seconds): the test's teardown
    releases it and waits for the call left behind at the deadline to end, so no thread of
    this test is still running in the next one.
    """

    def __init__(self, mode: str, release: threading.Event) -> None:
        self.mode = mode
        self.release = release
        self.seen: list[str] = []

    def wait(self) -> None:
        if self.mode == "slow":
            self.release.wait(SLOW)

    def text(self, received: str) -> str:
        self.seen.append(received)
        if self.mode == "fail":
            raise RuntimeError("the model is down")
        if self.mode == "big":
            return "x" * 200_000
        return SUMMARY

    async def atext(self, received: str) -> str:
        if self.mode == "slow":
            waited = 0.0
            while not self.release.is_set() and waited < SLOW:
                await asyncio.sleep(0.05)
                waited += 0.05
        return self.text(received)


def langchain_model(behaviour: Behaviour) -> Any:
    pytest.importorskip("langchain_core")
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    usage = {"input_tokens": 321, "output_tokens": 12, "total_tokens": 333}

    def result(text: str) -> ChatResult:
        message = AIMessage(text, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    class Fake(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "fake"

        def _generate(self, messages: list[Any], *a: Any, **k: Any) -> ChatResult:
            behaviour.wait()
            return result(behaviour.text("\n".join(m.text for m in messages)))

        async def _agenerate(self, messages: list[Any], *a: Any, **k: Any) -> ChatResult:
            return result(await behaviour.atext("\n".join(m.text for m in messages)))

    return Fake()


def pydantic_ai_model(behaviour: Behaviour) -> Any:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    async def answer(messages: list[Any], info: Any) -> ModelResponse:
        received = "\n".join(str(p.content) for m in messages for p in m.parts)
        return ModelResponse([TextPart(await behaviour.atext(received))])

    return FunctionModel(answer)


def agents_model(behaviour: Behaviour) -> Any:
    pytest.importorskip("agents")
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class Fake(Model):
        async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any):
            text = await behaviour.atext(f"{system_instructions}\n{input}")
            content: list[Any] = [ResponseOutputText(type="output_text", text=text, annotations=[])]
            item = ResponseOutputMessage(
                id="m", type="message", role="assistant", status="completed", content=content
            )
            usage = Usage(requests=1, input_tokens=321, output_tokens=12, total_tokens=333)
            return ModelResponse(output=[item], usage=usage, response_id=None)

        def stream_response(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

    return Fake()


@pytest.fixture
def make() -> Iterator[Any]:
    """``make(kind, mode)`` -> (summariser, behaviour); servers stop at the end of the test."""
    release = threading.Event()
    with contextlib.ExitStack() as stack:

        def build(kind: str, mode: str, **options: Any) -> tuple[Any, Behaviour]:
            behaviour = Behaviour(mode, release)
            # Generous, except where the deadline is what is tested: a loaded machine is slow.
            options.setdefault("timeout", TIMEOUT if mode == "slow" else 30.0)
            if kind == "litellm":
                pytest.importorskip("litellm")

                def reply(body: dict[str, Any]) -> Any:
                    received = "\n".join(str(m.get("content")) for m in body["messages"])
                    behaviour.wait()
                    try:
                        return text_reply(behaviour.text(received))
                    except RuntimeError:
                        return None  # the server answers HTTP 500

                server = stack.enter_context(ScriptedChatServer(reply))
                # Handler threads joined when the server closes: a reply written after the
                # client left (a broken pipe, its traceback) ends within this test.
                server._httpd.daemon_threads = False
                model: Any = "openai/local-model"
                options.update(api_base=server.base_url, api_key="t")
            else:
                model = {
                    "langchain": langchain_model,
                    "pydantic_ai": pydantic_ai_model,
                    "agents": agents_model,
                }[kind](behaviour)
            return model_summarizer(model, **options), behaviour

        yield build
        settle(release)  # before the servers close, so their handlers can answer and end


def settle(release: threading.Event) -> None:
    """Release slow models and wait for the calls left behind at their deadline to end.

    A left-behind call still runs code after the test (an exception and its traceback, which
    Python 3.11 formats with ``ast.parse``); ``ast.parse`` in two threads at once fails in
    CPython 3.11 ("AST constructor recursion depth mismatch"), so none may outlive its test.
    """
    release.set()
    for thread in threading.enumerate():
        if thread.name == "compaction-summarizer":
            thread.join(timeout=SLOW + 5)


def conversation() -> list[Any]:
    head, *turns = coding_conversation()
    return [head, user("the original task: keep the tests green"), *turns]


def timed(fn: Any) -> tuple[Any, float]:
    started = time.monotonic()
    try:
        return fn(), time.monotonic() - started
    except Exception as exc:
        return exc, time.monotonic() - started


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("use_async", [False, True])
def test_the_framework_model_summarises_and_is_reported(make: Any, kind: str, use_async: bool):
    summarizer, behaviour = make(kind, "ok")
    assert summarizer.name.startswith(kind.replace("_", "-"))
    pipeline = CompactionPipeline().run(Summary(summarizer))
    msgs = conversation()
    reports: list[dict[str, Any]] = []
    with events.summarized.connected_to(lambda sender, **kw: reports.append(kw)):
        if use_async:
            result = asyncio.run(pipeline.acompact(msgs, target=800, counter=COUNTER))
        else:
            result = pipeline.compact(msgs, target=800, counter=COUNTER)
    # The model was sent the instructions and the rendered transcript of what it replaces.
    assert behaviour.seen, "the model was never called"
    assert INSTRUCTIONS.splitlines()[0] in behaviour.seen[0]
    assert "--- user ---\ntask 0 on src/m0.py" in behaviour.seen[0]
    assert any(SUMMARY in m.content for m in result.messages)
    assert COUNTER.count_messages(result.messages) < COUNTER.count_messages(msgs)
    # Its calls and tokens: the strategy's report, and the usage the model gave.
    assert [r["ok"] for r in reports] == [True] * len(behaviour.seen)
    assert all(r["input_tokens"] > 0 and r["output_tokens"] > 0 for r in reports)
    assert summarizer.calls == len(behaviour.seen)
    assert summarizer.input_tokens > 0 and summarizer.output_tokens > 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("use_async", [False, True])
def test_a_slow_model_is_cut_at_the_deadline(make: Any, kind: str, use_async: bool) -> None:
    summarizer, _ = make(kind, "slow")
    if use_async:
        answer, seconds = timed(lambda: asyncio.run(summarizer.acall("hi", INSTRUCTIONS)))
    else:
        answer, seconds = timed(lambda: summarizer("hi", INSTRUCTIONS))
    assert isinstance(answer, TimeoutError), answer
    assert seconds < TIMEOUT + SLACK


@pytest.mark.parametrize("kind", KINDS)
def test_a_slow_model_fails_its_round_and_the_input_stays(make: Any, kind: str) -> None:
    summarizer, _ = make(kind, "slow")
    msgs = conversation()
    pipeline = CompactionPipeline().run(Summary(summarizer))
    result, seconds = timed(lambda: pipeline.compact(msgs, target=800, counter=COUNTER))
    assert seconds < TIMEOUT + SLACK
    assert result.messages == tuple(msgs)
    [failure] = result.failures
    assert isinstance(failure.error, TimeoutError)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("use_async", [False, True])
def test_an_oversized_answer_is_refused(make: Any, kind: str, use_async: bool) -> None:
    summarizer, behaviour = make(kind, "big", max_chars=10_000)
    if use_async:
        answer, _ = timed(lambda: asyncio.run(summarizer.acall("hi", INSTRUCTIONS)))
    else:
        answer, _ = timed(lambda: summarizer("hi", INSTRUCTIONS))
    assert isinstance(answer, SummarizerError), answer
    assert "max_chars=10000" in str(answer)
    assert len(behaviour.seen) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_failures_open_the_breaker(make: Any, kind: str) -> None:
    summarizer, behaviour = make(kind, "fail")
    strategy = Summary(summarizer, max_failures=2)
    pipeline = CompactionPipeline().run(strategy)
    msgs = conversation()
    for _ in range(4):
        result = pipeline.compact(msgs, target=800, counter=COUNTER)
        assert result.messages == tuple(msgs)
    # Two failed runs opened the breaker: the model was not asked again.
    assert strategy.breaker_open
    calls = len(behaviour.seen)
    assert calls >= 2
    pipeline.compact(msgs, target=800, counter=COUNTER)
    assert len(behaviour.seen) == calls


def test_an_unknown_model_is_refused_with_what_is_accepted() -> None:
    with pytest.raises(TypeError, match="LangChain chat model"):
        model_summarizer(object())
    with pytest.raises(ValueError, match="timeout"):
        model_summarizer("openai/m", timeout=float("inf"))
