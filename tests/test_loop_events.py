"""The turn loop's events and its approve-tool hook: a run with four tool calls (one approved,
one denied, one rewritten, one that raises), sync and async; runs that raise; and a retried
turn that records its prompt once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from compaction import events
from compaction.loop import Deny, ToolCallError, TurnLoop
from compaction.messages import Message, ToolCall, assistant
from compaction.tokens import default_counter
from compaction.validate import validate
from tests.event_recorder import recording

LOOP_SIGNALS = (
    "turn_started",
    "turn_finished",
    "model_call_started",
    "model_call_finished",
    "model_call_failed",
    "tool_call_started",
    "tool_call_finished",
    "tool_call_failed",
    "tool_call_denied",
)

USAGE = {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}


class Scripted:
    """A model answering from a script (a reply, an exception to raise, or a function of the
    request); records what each call was sent."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[Message, ...]] = []

    def __call__(self, messages, tools=None):
        self.calls.append(messages)
        reply = self.replies[len(self.calls) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return reply(messages) if callable(reply) else reply


class AsyncScripted(Scripted):
    async def __call__(self, messages, tools=None):
        await asyncio.sleep(0)
        return Scripted.__call__(self, messages, tools)


def four_calls() -> Message:
    return assistant(
        "",
        [
            ToolCall("c1", "add", {"a": 2, "b": 3}),
            ToolCall("c2", "delete", {"path": "/etc"}),
            ToolCall("c3", "search", {"query": "blinker"}),
            ToolCall("c4", "explode", {}),
        ],
        meta={"usage": USAGE},
    )


class Tools:
    def __init__(self) -> None:
        self.ran: list[tuple[str, dict]] = []

    def add(self, a: int, b: int) -> int:
        self.ran.append(("add", {"a": a, "b": b}))
        return a + b

    def delete(self, path: str) -> str:
        self.ran.append(("delete", {"path": path}))
        return "deleted"

    def search(self, query: str) -> str:
        self.ran.append(("search", {"query": query}))
        return f"results for {query}"

    def explode(self) -> None:
        self.ran.append(("explode", {}))
        raise RuntimeError("disk full")

    def all(self) -> list[Any]:
        return [self.add, self.delete, self.search, self.explode]


class AsyncTools(Tools):
    async def search(self, query: str) -> str:  # type: ignore[override]
        await asyncio.sleep(0)
        return Tools.search(self, query)


asked: list[tuple[str, dict]] = []


def approve(call: ToolCall, arguments: dict) -> Any:
    asked.append((call.name, arguments))
    if call.name == "delete":
        return Deny("deleting files is not allowed")
    if call.name == "search":
        return {**arguments, "query": arguments["query"] + " site:docs"}
    return True


async def aapprove(call: ToolCall, arguments: dict) -> Any:
    await asyncio.sleep(0)
    return approve(call, arguments)


def check_four_call_run(seen, loop, result, tools: Tools) -> None:
    assert seen.names(*LOOP_SIGNALS) == [
        "turn_started",
        "model_call_started",
        "model_call_finished",
        "tool_call_started",  # add: approved
        "tool_call_finished",
        "tool_call_denied",  # delete: denied, never started
        "tool_call_started",  # search: rewritten
        "tool_call_finished",
        "tool_call_started",  # explode: raises
        "tool_call_failed",
        "model_call_started",
        "model_call_finished",
        "turn_finished",
    ]
    assert {id(s) for n, s, _ in seen if n in LOOP_SIGNALS} == {id(loop)}
    assert all(kw["agent"] == "tester" for n, _, kw in seen if n in LOOP_SIGNALS)
    assert all(kw["labels"] == {"agent": "tester"} for n, _, kw in seen if n in LOOP_SIGNALS)

    (started,) = seen.of("turn_started")
    assert started["prompt"].content == "do four things" and started["retry"] is False

    counter = default_counter()
    model_started = seen.of("model_call_started")
    assert [(m["step"], m["messages"]) for m in model_started] == [(0, 1), (1, 6)]
    assert [m["tokens"] for m in model_started] == [
        counter.count_messages(r) for r in result.requests
    ]
    finished = seen.of("model_call_finished")
    assert [(m["step"], m["usage"], m["tool_calls"]) for m in finished] == [
        (0, USAGE, 4),
        (1, None, 0),
    ]
    assert all(m["seconds"] >= 0 and m["tokens"] > 0 for m in finished)

    tool_started = seen.of("tool_call_started")
    assert [(t["name"], t["arguments"], t["rewritten"], t["step"]) for t in tool_started] == [
        ("add", {"a": 2, "b": 3}, False, 0),
        ("search", {"query": "blinker site:docs"}, True, 0),
        ("explode", {}, False, 0),
    ]
    assert [t["call"].id for t in tool_started] == ["c1", "c3", "c4"]
    tool_finished = seen.of("tool_call_finished")
    assert [(t["name"], t["result"]) for t in tool_finished] == [
        ("add", "5"),
        ("search", "results for blinker site:docs"),
    ]
    assert all(t["seconds"] >= 0 for t in tool_finished)
    (denied,) = seen.of("tool_call_denied")
    assert denied["name"] == "delete" and denied["call"].id == "c2"
    assert denied["reason"] == (
        "refused: the call to 'delete' was not approved and did not run: "
        "deleting files is not allowed"
    )
    (failed,) = seen.of("tool_call_failed")
    assert (failed["name"], failed["stage"], failed["arguments"]) == ("explode", "run", {})
    assert isinstance(failed["error"], RuntimeError) and str(failed["error"]) == "disk full"

    (turn,) = seen.of("turn_finished")
    assert (turn["steps"], turn["stopped"], turn["ok"], turn["error"]) == (2, "answer", True, None)
    assert turn["messages"] == 6 and turn["seconds"] >= 0

    # What the tools did and what the model got back.
    assert tools.ran == [
        ("add", {"a": 2, "b": 3}),
        ("search", {"query": "blinker site:docs"}),
        ("explode", {}),
    ]
    results = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert results["c1"] == "5"
    assert results["c2"] == denied["reason"]
    assert results["c3"] == "results for blinker site:docs"
    assert results["c4"] == "error: explode raised RuntimeError: disk full"
    # The conversation keeps the call the model made; the events say what ran.
    assert result.messages[1].tool_calls[2].arguments == '{"query": "blinker"}'
    validate(result.messages)


def test_a_sync_run_with_tools_sends_every_event_in_order() -> None:
    asked.clear()
    tools = Tools()
    model = Scripted(four_calls(), assistant("done"))
    loop = TurnLoop(model, tools.all(), name="tester", approve_tool=approve)
    with recording() as seen:
        result = loop.run("do four things")
    check_four_call_run(seen, loop, result, tools)
    # The hook is asked about every call, with its decoded arguments.
    assert asked == [
        ("add", {"a": 2, "b": 3}),
        ("delete", {"path": "/etc"}),
        ("search", {"query": "blinker"}),
        ("explode", {}),
    ]


def test_an_async_run_with_tools_sends_the_same_events() -> None:
    tools = AsyncTools()
    model = AsyncScripted(four_calls(), assistant("done"))
    loop = TurnLoop(model, tools.all(), name="tester", approve_tool=aapprove)
    with recording() as seen:
        result = asyncio.run(loop.arun("do four things"))
    check_four_call_run(seen, loop, result, tools)


def test_false_denies_without_a_reason_and_none_allows() -> None:
    tools = Tools()
    model = Scripted(
        assistant(
            "", [ToolCall("a", "delete", {"path": "x"}), ToolCall("b", "add", {"a": 1, "b": 1})]
        ),
        assistant("ok"),
    )
    loop = TurnLoop(
        model, tools.all(), approve_tool=lambda call, args: False if call.name == "delete" else None
    )
    result = loop.run("go")
    texts = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert texts == {
        "a": "refused: the call to 'delete' was not approved and did not run",
        "b": "2",
    }
    assert tools.ran == [("add", {"a": 1, "b": 1})]


def test_an_async_hook_in_a_sync_run_and_a_bad_answer_are_errors() -> None:
    model = Scripted(assistant("", [ToolCall("a", "add", {"a": 1, "b": 1})]))
    with pytest.raises(TypeError, match="approve_tool hook is async"):
        TurnLoop(model, Tools().all(), approve_tool=aapprove).run("go")
    model = Scripted(assistant("", [ToolCall("a", "add", {"a": 1, "b": 1})]))
    with pytest.raises(TypeError, match="approve_tool must answer"):
        TurnLoop(model, Tools().all(), approve_tool=lambda c, a: "yes").run("go")
    with pytest.raises(TypeError, match="approve_tool must be callable"):
        TurnLoop(model, approve_tool="yes")  # type: ignore[arg-type]


def test_calls_refused_before_they_run_send_only_tool_call_failed() -> None:
    model = Scripted(
        assistant("", [ToolCall("a", "nope", {}), ToolCall("b", "add", "{not json")]),
        assistant("sorry"),
    )
    with recording() as seen:
        TurnLoop(model, Tools().all()).run("go")
    assert seen.names("tool_call_started", "tool_call_failed") == ["tool_call_failed"] * 2
    stages = [(f["name"], f["stage"], type(f["error"])) for f in seen.of("tool_call_failed")]
    assert stages == [("nope", "arguments", ToolCallError), ("add", "arguments", ToolCallError)]


def test_a_model_call_that_raises_ends_the_turn_with_the_error() -> None:
    boom = ConnectionError("server went away")
    loop = TurnLoop(Scripted(boom), name="tester")
    with recording() as seen, pytest.raises(ConnectionError):
        loop.run("hello")
    assert seen.names(*LOOP_SIGNALS) == [
        "turn_started",
        "model_call_started",
        "model_call_failed",
        "turn_finished",
    ]
    (failed,) = seen.of("model_call_failed")
    assert failed["error"] is boom and failed["step"] == 0 and failed["tokens"] > 0
    (turn,) = seen.of("turn_finished")
    assert (turn["ok"], turn["stopped"], turn["error"], turn["steps"]) == (False, "error", boom, 1)


def test_a_hook_that_raises_stops_the_turn_and_runs_nothing() -> None:
    tools = Tools()

    def broken(call, arguments):
        raise PermissionError("policy server down")

    model = Scripted(assistant("", [ToolCall("a", "delete", {"path": "/"})]))
    loop = TurnLoop(model, tools.all(), approve_tool=broken)
    with recording() as seen, pytest.raises(PermissionError):
        loop.run("go")
    assert tools.ran == []
    assert seen.names(*LOOP_SIGNALS) == [
        "turn_started",
        "model_call_started",
        "model_call_finished",
        "turn_finished",
    ]
    assert seen.of("turn_finished")[0]["ok"] is False
    assert [m.role for m in loop.history] == ["user"]  # no unanswered call is kept


def test_a_tool_interrupted_by_ctrl_c_is_reported_failed_then_let_through() -> None:
    def slow() -> str:
        raise KeyboardInterrupt

    loop = TurnLoop(Scripted(assistant("", [ToolCall("a", "slow", {})])), [slow])
    with recording() as seen, pytest.raises(KeyboardInterrupt):
        loop.run("go")
    assert seen.names("tool_call_started", "tool_call_failed", "turn_finished") == [
        "tool_call_started",
        "tool_call_failed",
        "turn_finished",
    ]


# -- retries -------------------------------------------------------------------------------------


def test_a_retried_turn_records_its_prompt_once_in_a_session(tmp_path) -> None:
    sessions = pytest.importorskip("compaction.sessions")
    session = sessions.SessionStore(tmp_path).open("retry")
    model = Scripted(
        ConnectionError("first try"),
        ConnectionError("second try"),
        assistant("hello back"),
    )
    loop = TurnLoop(model, session=session)
    for _ in range(2):
        with pytest.raises(ConnectionError):
            loop.run("hello")
    with recording() as seen:
        result = loop.run("hello")
    reopened = sessions.SessionStore(tmp_path).open("retry").messages
    assert [(m.role, m.content) for m in reopened] == [
        ("user", "hello"),
        ("assistant", "hello back"),
    ]
    assert [m.content for m in model.calls[2]] == ["hello"]  # the model saw the prompt once
    assert seen.of("turn_started")[0]["retry"] is True
    assert [m.content for m in result.messages] == ["hello", "hello back"]


def test_a_turn_that_failed_after_a_tool_continues_without_running_it_again() -> None:
    tools = Tools()
    model = Scripted(
        assistant("", [ToolCall("a", "add", {"a": 2, "b": 2})]),
        ConnectionError("lost"),
        assistant("it is 4"),
    )
    loop = TurnLoop(model, tools.all())
    with pytest.raises(ConnectionError):
        loop.run("2 + 2?")
    result = loop.run("2 + 2?")
    assert result.reply.content == "it is 4"
    assert tools.ran == [("add", {"a": 2, "b": 2})]
    assert [(m.role, m.content) for m in loop.history] == [
        ("user", "2 + 2?"),
        ("assistant", ""),
        ("tool", "4"),
        ("assistant", "it is 4"),
    ]
    validate(loop.history)


def test_the_same_prompt_after_a_finished_turn_is_a_new_turn() -> None:
    loop = TurnLoop(Scripted(assistant("one"), assistant("two")))
    loop.run("again")
    with recording() as seen:
        loop.run("again")
    assert [m.content for m in loop.history] == ["again", "one", "again", "two"]
    assert seen.of("turn_started")[0]["retry"] is False


def test_loop_signals_are_in_the_events_module() -> None:
    for name in LOOP_SIGNALS:
        assert getattr(events, name).name == f"loop.{name}"


def test_a_hook_that_edits_its_arguments_in_place_changes_nothing() -> None:
    tools = Tools()

    def meddle(call, arguments):
        arguments["a"] = 100  # edits its copy; only a returned mapping rewrites
        return True

    model = Scripted(assistant("", [ToolCall("a", "add", {"a": 1, "b": 1})]), assistant("ok"))
    TurnLoop(model, tools.all(), approve_tool=meddle).run("go")
    assert tools.ran == [("add", {"a": 1, "b": 1})]


def test_loop_events_are_logged_through_structlog() -> None:
    structlog = pytest.importorskip("structlog")
    model = Scripted(assistant("", [ToolCall("a", "add", {"a": 1, "b": 2})]), assistant("3"))
    with structlog.testing.capture_logs() as logs:
        TurnLoop(model, Tools().all(), name="logged").run("1 + 2?")
    loop_lines = [e for e in logs if e["event"].startswith("loop.")]
    assert [e["event"] for e in loop_lines] == [
        "loop.turn_started",
        "loop.model_call_started",
        "loop.model_call_finished",
        "loop.tool_call_started",
        "loop.tool_call_finished",
        "loop.model_call_started",
        "loop.model_call_finished",
        "loop.turn_finished",
    ]
    assert all(e["agent"] == "logged" for e in loop_lines)
    assert loop_lines[-1]["ok"] is True and loop_lines[-1]["stopped"] == "answer"
