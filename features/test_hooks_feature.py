"""Steps for features/hooks.feature: seed 004's hook catalogue, against the public API."""

from __future__ import annotations

import json

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import ApproximateCounter, CompactionPipeline, Strategy, ToolCall
from compaction.loop import Deny, TurnLoop
from compaction.messages import assistant
from tests import ladder_support
from tests.event_recorder import recording

scenarios("hooks.feature")

LAYERS = {
    cls.name: cls
    for cls in (ladder_support.ToTarget, ladder_support.DropOldestGroup, ladder_support.Declines)
}


class SeedSignature(Strategy):
    """Written as seed 004 writes one: ``rewrite(conversation, target:)``."""

    name = "seed_signature"

    def rewrite(self, conversation, *, target):
        return conversation[:1] + conversation[-3:]


class Unfinished(Strategy):
    name = "unfinished"


@pytest.fixture
def world():
    with recording() as seen:
        yield {"seen": seen, "error": None, "tools_ran": [], "approve": None}


def _layers(names: str) -> list[str]:
    return [n.strip() for n in names.split(",")]


# -- the ladder ------------------------------------------------------------------------------------


def _pipeline(strict: bool = False) -> CompactionPipeline:
    return CompactionPipeline(counter=ApproximateCounter(), strict=strict)


@when(parsers.parse('I build a ladder: "{names}" with terminal "{terminal}"'))
@given(parsers.parse('a ladder: "{names}" with terminal "{terminal}"'))
def ladder_with_terminal(world, names, terminal):
    pipeline = _pipeline()
    for name in _layers(names):
        pipeline.use(LAYERS[name]())
    world["pipeline"] = pipeline.run(LAYERS[terminal]())


@given(parsers.parse('a ladder: "{names}"'))
def ladder(world, names):
    pipeline = _pipeline()
    for name in _layers(names):
        pipeline.use(LAYERS[name]())
    world["pipeline"] = pipeline


@given("a ladder of a strategy whose rewrite takes only the conversation and the target")
def seed_ladder(world):
    world["pipeline"] = _pipeline().use(SeedSignature())


@given("a strict ladder of a named strategy without rewrite")
def strict_unfinished(world):
    world["pipeline"] = _pipeline(strict=True).use(Unfinished())


@when(parsers.parse('I define a strategy class "{name}" without a name'))
def define_nameless(world, name):
    try:
        type(name, (Strategy,), {"rewrite": lambda self, messages, *, target: None})
    except TypeError as exc:
        world["error"] = exc


@then(parsers.parse('the layers announced were "{expected}"'))
def layers_announced(world, expected):
    shown = [
        f"{kw['name']} at {kw['position']}" + (" as terminal" if kw["terminal"] else "")
        for kw in world["seen"].of("layer_added")
    ]
    assert shown == _layers(expected)
    assert set(map(id, world["seen"].senders("layer_added"))) == {id(world["pipeline"])}


@then(parsers.parse('the layer events were "{expected}"'))
def layer_events(world, expected):
    shown = [
        f"{'enter' if n == 'layer_entered' else 'exit'} {kw['name']}"
        for n, _, kw in world["seen"]
        if n in ("layer_entered", "layer_exited")
    ]
    assert shown == _layers(expected)


@then("every layer entered was asked")
def all_asked(world):
    assert all(kw["asked"] for kw in world["seen"].of("layer_entered"))


@then("no layer entered was asked")
def none_asked(world):
    entered = world["seen"].of("layer_entered")
    assert entered and not any(kw["asked"] for kw in entered)
    assert not any(kw["asked"] for kw in world["seen"].of("layer_exited"))


@then(parsers.parse('"{name}" handed back a conversation under {target:d} tokens'))
def handed_back(world, name, target):
    (exited,) = [kw for kw in world["seen"].of("layer_exited") if kw["name"] == name]
    assert exited["after"] <= target < exited["before"]
    assert exited["passed"] is False and exited["ok"] is True


@then(parsers.parse("{runs:d} runs finished and {count:d} of them was a compaction"))
def compactions(world, runs, count):
    finished = world["seen"].of("compacted")
    assert len(finished) == runs
    assert sum(kw["changed"] for kw in finished) == count


@then(parsers.parse("{count:d} run durations were measured"))
def run_durations(world, count):
    runs = [kw for kw in world["seen"].of("duration") if kw["scope"] == "run"]
    assert len(runs) == count and all(kw["seconds"] >= 0 for kw in runs)


@then(parsers.parse('the applied strategies are "{names}"'))
def applied(world, names):
    assert [a.strategy for a in world["result"].applied] == _layers(names)


@then("no failure was reported")
def no_failure(world):
    assert world["seen"].of("failed") == []


@then(parsers.parse('a TypeError names "{name}"'))
def type_error_names(world, name):
    assert isinstance(world["error"], TypeError) and name in str(world["error"])


@then(parsers.parse('the error is a NotImplementedError naming "{name}"'))
def not_implemented(world, name):
    assert isinstance(world["error"], NotImplementedError) and name in str(world["error"])


# -- the turn loop ---------------------------------------------------------------------------------

USAGE = {"prompt_tokens": 11, "completion_tokens": 2}


def _model(*replies):
    def model(messages, tools=None):
        reply = replies[sum(m.role == "assistant" for m in messages)]
        if isinstance(reply, Exception):
            raise reply
        return reply

    return model


def _tools(world):
    def add(a: int, b: int) -> int:
        world["tools_ran"].append("add")
        return a + b

    def delete(path: str) -> str:
        world["tools_ran"].append("delete")
        return f"deleted {path}"

    return [add, delete]


@given(parsers.parse('a turn loop whose model answers "{text}"'))
def loop_answers(world, text):
    world["loop"] = TurnLoop(_model(assistant(text, meta={"usage": USAGE})), _tools(world))


@given(parsers.parse('a turn loop whose model fails with "{text}"'))
def loop_fails(world, text):
    world["loop"] = TurnLoop(_model(ConnectionError(text)), _tools(world))


@given(
    parsers.parse('a turn loop whose model calls "{name}" with a={a:d} and b={b:d}, then answers')
)
def loop_calls_add(world, name, a, b):
    call = assistant("", [ToolCall("c1", name, {"a": a, "b": b})])
    world["model"] = _model(call, assistant("done"))


@given(parsers.parse('a turn loop whose model calls "{name}" with path={path}, then answers'))
def loop_calls_delete(world, name, path):
    call = assistant("", [ToolCall("c1", name, {"path": path})])
    world["model"] = _model(call, assistant("done"))


@given(parsers.parse('an approval hook that denies "{name}" because "{reason}"'))
def deny_hook(world, name, reason):
    world["approve"] = lambda call, arguments: Deny(reason) if call.name == name else True


@given(parsers.parse("an approval hook that sets {key} to {value:d}"))
def rewrite_hook(world, key, value):
    world["approve"] = lambda call, arguments: {**arguments, key: value}


def _loop(world) -> TurnLoop:
    if "loop" not in world:
        world["loop"] = TurnLoop(world["model"], _tools(world), approve_tool=world["approve"])
    return world["loop"]


@when(parsers.parse('I run the turn "{prompt}" expecting an error'))
def run_turn_error(world, prompt):
    try:
        _loop(world).run(prompt)
    except Exception as exc:
        world["error"] = exc


@when(parsers.parse('I run the turn "{prompt}"'))
def run_turn(world, prompt):
    world["result"] = _loop(world).run(prompt)


@then(parsers.parse('the loop events were "{expected}"'))
def loop_events(world, expected):
    names = _layers(expected)
    loop_names = {n for n in names}
    loop_names |= {"tool_call_failed", "tool_call_denied", "model_call_failed"}
    assert world["seen"].names(*loop_names) == names
    assert {id(s) for n, s, _ in world["seen"] if n in loop_names} == {id(world["loop"])}


@then("the turn and the model call took a measured time")
def measured(world):
    (turn,) = world["seen"].of("turn_finished")
    (call,) = world["seen"].of("model_call_finished")
    assert turn["ok"] and turn["seconds"] >= call["seconds"] >= 0


@then("the model call reported the tokens it sent and the provider's usage")
def usage(world):
    (started,) = world["seen"].of("model_call_started")
    (finished,) = world["seen"].of("model_call_finished")
    assert started["tokens"] == finished["tokens"] > 0
    assert finished["usage"] == USAGE


@then(parsers.parse('the failure carries the error "{text}"'))
def failure_error(world, text):
    (failed,) = world["seen"].of("model_call_failed")
    assert failed["error"] is world["error"] and str(failed["error"]) == text


@then("the turn finished not ok")
def turn_not_ok(world):
    (turn,) = world["seen"].of("turn_finished")
    assert turn["ok"] is False and turn["error"] is world["error"]


@then(parsers.parse('the tool "{name}" returned "{text}" in a measured time'))
def tool_returned(world, name, text):
    (finished,) = world["seen"].of("tool_call_finished")
    assert (finished["name"], finished["result"], finished["seconds"] >= 0) == (name, text, True)
    results = [m.content for m in world["result"].messages if m.role == "tool"]
    assert results == [text]


@then(parsers.parse('the tool "{name}" did not run'))
def did_not_run(world, name):
    assert name not in world["tools_ran"]
    assert world["seen"].of("tool_call_started") == []


@then(parsers.parse('the model was told the call was refused because "{reason}"'))
def told_refused(world, reason):
    (result,) = [m for m in world["result"].messages if m.role == "tool"]
    assert result.content.startswith("refused:") and result.content.endswith(reason)
    (denied,) = world["seen"].of("tool_call_denied")
    assert denied["reason"] == result.content
    assert json.loads(world["result"].messages[1].tool_calls[0].arguments) == {"path": "/etc"}
