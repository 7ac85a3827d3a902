"""Step definitions for features/turn_loop.feature (seed 001's turn-loop scenarios).

The model is a scripted callable that records what it was sent; tools are plain functions.
Persistence is checked from a separate Python process reading the session folder, so nothing
can come from this process's memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction.loop import MISSING, LoopResult, TurnLoop, chain
from compaction.memory.transcript import provenance
from compaction.messages import Message, ToolCall, assistant, user

scenarios("turn_loop.feature")

SIMPLE_CONFIG = """
[loop]
history_limit = 10
max_message_chars = 500
"""


class Scripted:
    """A model that answers from a script (replies or functions of the request)."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[Message, ...]] = []
        self.options: list[dict[str, Any]] = []

    def __call__(self, messages, tools=None, **options):
        self.requests.append(messages)
        self.options.append(options)
        reply = self.replies[len(self.requests) - 1]
        return reply(messages) if callable(reply) else reply


def call(name: str, **arguments: Any) -> Message:
    return assistant("", [ToolCall(f"call_{name}", name, arguments)])


def run_python(code: str, context: dict) -> str:
    """Run Python code with the shared context in scope as `context`."""
    namespace: dict[str, Any] = {"context": context}
    exec(code, namespace)  # a test tool: the code comes from the scenario
    return "ok"


@pytest.fixture
def world() -> dict[str, Any]:
    return {}


def read_context_in_new_process(root: Path, name: str) -> dict[str, Any]:
    code = (
        "import json, sys\n"
        "from compaction.sessions import SessionStore\n"
        "s = SessionStore(sys.argv[1]).open(sys.argv[2], create=False)\n"
        "print(json.dumps(dict(s.global_context)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), name],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(out.stdout)


# -- Tool agent context updates are captured ---------------------------------------------------


@given("a turn loop with a tool that runs Python code with the context")
def tool_agent(world, tmp_path):
    sessions = pytest.importorskip("compaction.sessions")
    world["root"] = tmp_path / "sessions"
    session = sessions.SessionStore(world["root"]).open("tool-agent")
    world["model"] = Scripted()
    world["loop"] = TurnLoop(world["model"], [run_python], session=session, name="tool-agent")


@when(
    parsers.parse('the tool executes code that sets context["{key}"] to "{value}"'),
)
def tool_sets_context(world, key, value):
    code = f"context[{key!r}] = {value!r}"
    world["key"], world["value"] = key, value
    world["model"].replies += [call("run_python", code=code), assistant("done")]
    world["result"] = world["loop"].run("update the stage")


@then("the global context updates should be captured")
def updates_captured(world):
    result: LoopResult = world["result"]
    key, value = world["key"], world["value"]
    assert [(c.key, c.old, c.new, c.source) for c in result.context_changes] == [
        (key, MISSING, value, "run_python")
    ]
    assert result.context[key] == value
    assert world["loop"].context[key] == value


@then("the context should persist after execution")
def context_persists(world):
    key, value = world["key"], world["value"]
    assert read_context_in_new_process(world["root"], "tool-agent") == {key: value}
    # and the next run's tools see it
    model = world["model"]
    model.replies += [
        call("run_python", code="context['seen'] = context['writing_stage']"),
        assistant("ok"),
    ]
    world["loop"].run("check")
    assert read_context_in_new_process(world["root"], "tool-agent") == {key: value, "seen": value}


# -- Context updates through stream routing ----------------------------------------------------


def classify(context: dict) -> str:
    """Tag the message with a route from its metadata."""
    context["route"] = f"{context['channel']}->writer"
    return "classified"


def draft(context: dict) -> str:
    context["writing_stage"] = "drafting"
    context["history"] = [*context.get("history", []), "drafted"]
    return "drafted"


def review(context: dict) -> str:
    context["writing_stage"] = "reviewing"
    context["history"] = [*context["history"], "reviewed"]
    return "reviewed"


@given("a stream router of three context-aware agents")
def router(world):
    world["router"] = chain(
        TurnLoop(Scripted(call("classify"), assistant("route: writer")), [classify], name="router"),
        TurnLoop(Scripted(call("draft"), assistant("a draft")), [draft], name="drafter"),
        TurnLoop(
            Scripted(call("review"), lambda request: assistant(f"reviewed {request[0].content}")),
            [review],
            name="reviewer",
        ),
    )


@when("a message flows through the stream with context metadata")
def message_flows(world):
    world["message"] = "please write the report"
    world["metadata"] = {"channel": "email", "document_type": "report"}


@when("the agents modify the context during processing")
def agents_modify(world):
    world["out"] = world["router"].run(world["message"], metadata=world["metadata"])


@then("all context modifications should be preserved")
def modifications_preserved(world):
    changes = [(c.agent, c.key, c.old, c.new) for c in world["out"].context_changes]
    assert changes == [
        ("chain", "channel", MISSING, "email"),
        ("chain", "document_type", MISSING, "report"),
        ("router", "route", MISSING, "email->writer"),
        ("drafter", "writing_stage", MISSING, "drafting"),
        ("drafter", "history", MISSING, ["drafted"]),
        ("reviewer", "writing_stage", "drafting", "reviewing"),
        ("reviewer", "history", ["drafted"], ["drafted", "reviewed"]),
    ]


@then("the final context should reflect all changes")
def final_context(world):
    expected = {
        "channel": "email",
        "document_type": "report",
        "route": "email->writer",
        "writing_stage": "reviewing",
        "history": ["drafted", "reviewed"],
    }
    out = world["out"]
    assert out.context == expected
    assert dict(world["router"].context) == expected
    assert out.reply.content == "reviewed a draft"  # each agent's answer fed the next


# -- Run with context ... (simple config) -------------------------------------------------------


@given("an application with a simple config for context")
def simple_app(world, tmp_path):
    pytest.importorskip("compaction.strategies.truncate")
    path = tmp_path / "app.toml"
    path.write_text(SIMPLE_CONFIG, encoding="utf-8")
    world["model"] = Scripted(assistant("answer"))
    world["loop"] = TurnLoop.from_config(path, world["model"])
    world["prompt"] = "Summarise our conversation so far."


@when(parsers.parse("running with a {n:d} message conversation history"))
def run_with_history(world, n):
    world["history"] = [(user if i % 2 == 0 else assistant)(f"message {i + 1}") for i in range(n)]
    world["result"] = world["loop"].run(world["prompt"], history=world["history"])


@then(parsers.parse("only the last {n:d} messages are used"))
def last_n_used(world, n):
    (request,) = world["model"].requests
    assert request[:-1] == tuple(world["history"][-n:])
    assert len(request) == n + 1


@then("the prompt is formatted with the history")
def prompt_with_history(world):
    (request,) = world["model"].requests
    assert [m.content for m in request] == [
        *(f"message {i}" for i in range(6, 16)),
        world["prompt"],
    ]
    assert request[-1].role == "user"
    assert [m.role for m in request[:-1]] == [m.role for m in world["history"][-10:]]


@when(parsers.parse("running with a {n:d} character assistant response in the history"))
def run_with_long_response(world, n):
    world["long"] = "The answer is long. " * (n // 20)
    assert len(world["long"]) == n
    world["history"] = [user("Tell me everything."), assistant(world["long"])]
    world["result"] = world["loop"].run(world["prompt"], history=world["history"])


@then(parsers.parse("the response is truncated to {n:d} characters"))
def response_truncated(world, n):
    (request,) = world["model"].requests
    sent = request[1]
    assert sent.role == "assistant"
    assert len(sent.content) <= n
    assert sent.content.startswith(world["long"][: n - 50])
    record = provenance(sent)
    assert record is not None and record["kind"] == "truncated"
    assert record["original_chars"] == len(world["long"])
    # the recorded history keeps the full text: only what was sent was cut
    assert world["history"][1].content == world["long"]


@when("running with no conversation history")
def run_without_history(world):
    world["result"] = world["loop"].run(world["prompt"])


@then("the prompt is used without modification")
def prompt_unmodified(world):
    (request,) = world["model"].requests
    assert len(request) == 1
    assert request[0].role == "user" and request[0].content is world["prompt"]


# -- Temperature override in global context ----------------------------------------------------


@given("a config file path for context")
def config_path(world, tmp_path):
    path = tmp_path / "app.toml"
    path.write_text("[model]\ntemperature = 0.2\n\n[loop]\nmax_steps = 3\n", encoding="utf-8")
    world["path"] = path


@when(parsers.parse("creating the app with temperature override {value:g}"))
def app_with_override(world, value):
    world["model"] = Scripted(assistant("ok"))
    world["loop"] = TurnLoop.from_config(world["path"], world["model"], temperature=value)


@then(parsers.parse("the global context contains temperature value {value:g}"))
def context_has_temperature(world, value):
    loop = world["loop"]
    assert loop.context["temperature"] == value
    loop.run("hello")
    assert world["model"].options == [{"temperature": value}]  # the override wins over 0.2
