"""Steps for features/ladder.feature: the rules, stated against the public API."""

from __future__ import annotations

import pytest
from pytest_bdd import given, parsers, scenarios, then

from compaction import ApproximateCounter, CompactionPipeline, events, validate
from tests import ladder_support

scenarios("ladder.feature")

LAYERS = {
    cls.name: cls
    for cls in (
        ladder_support.ToTarget,
        ladder_support.SameSize,
        ladder_support.DropOldestGroup,
        ladder_support.Declines,
        ladder_support.Raises,
        ladder_support.BreaksPairs,
    )
}


@pytest.fixture
def world():
    state = {"events": [], "failed": [], "error": None, "result": None}

    def on(name):
        def receive(sender, **kw):
            state["events"].append(name)
            if name == "failed":
                state["failed"].append(kw["name"])

        return receive

    receivers = []
    for name in (
        "started",
        "strategy_applied",
        "strategy_declined",
        "compacted",
        "duration",
        "failed",
    ):
        fn = on(name)
        getattr(events, name).connect(fn)
        receivers.append((getattr(events, name), fn))
    yield state
    for sig, fn in receivers:
        sig.disconnect(fn)


def _build(world, names, terminal=None, strict=False):
    layers = {}
    pipeline = CompactionPipeline(counter=ApproximateCounter(), strict=strict)
    for name in [n.strip() for n in names.split(",")]:
        layers[name] = LAYERS[name]()
        pipeline.use(layers[name])
    if terminal:
        layers[terminal] = LAYERS[terminal]()
        pipeline.run(layers[terminal])
    world["layers"], world["pipeline"] = layers, pipeline


@given(parsers.parse('a ladder: "{names}" with terminal "{terminal}"'))
def ladder_with_terminal(world, names, terminal):
    _build(world, names, terminal)


@given(parsers.parse('a ladder: "{names}"'))
def ladder(world, names):
    _build(world, names)


@given(parsers.parse('a strict ladder: "{names}"'))
def strict_ladder(world, names):
    _build(world, names, strict=True)


@then(parsers.parse('"{name}" was asked {times:d} time'))
@then(parsers.parse('"{name}" was asked {times:d} times'))
def asked(world, name, times):
    assert len(world["layers"][name].asked) == times


@then("the conversation is unchanged")
def unchanged(world):
    assert world["result"].messages == tuple(world["messages"])
    assert not world["result"].changed


@then("the result fits the target")
def fits(world):
    assert world["result"].fits


@then(parsers.parse('"{name}" was declined because "{reason}"'))
def declined(world, name, reason):
    assert (name, reason) in [(d.strategy, d.reason) for d in world["result"].declined]


@then(parsers.parse('the applied strategies are "{names}"'))
def applied(world, names):
    assert [a.strategy for a in world["result"].applied] == [n.strip() for n in names.split(",")]


@then(parsers.parse('a failure event named "{name}" was emitted'))
def failure_event(world, name):
    assert name in world["failed"]


@then("the result is a valid conversation")
def valid(world):
    validate(world["result"].messages)


@then(parsers.parse('the error says "{text}"'))
def error_says(world, text):
    assert world["error"] is not None and text in str(world["error"])


@then(parsers.parse('the events were "{names}"'))
def events_were(world, names):
    assert world["events"] == [n.strip() for n in names.split(",")]
