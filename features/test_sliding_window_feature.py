"""Steps for features/sliding_window.feature: seed 000's scenarios, against the public API.

A seed "fragment" is a :class:`compaction.Message` whose ``meta`` carries the fragment's
``uko_node``, ``score`` and ``depth``, and whose ``tokens`` is the fragment's token count (every
counter honours it). "Apply the strategy" is ``strategy.apply(fragments, Budget(...))``.
"""

from __future__ import annotations

import re

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import (
    ApproximateCounter,
    Budget,
    Capabilities,
    CompactionPipeline,
    Message,
    Strategy,
    ToolCall,
    validate,
)
from compaction.memory.transcript import is_note, mark, provenance
from compaction.registry import registry
from compaction.strategies.sliding_window import SlidingWindow

scenarios("sliding_window.feature")

_QUOTED = re.compile(r'"([^"]*)"')


@pytest.fixture
def sw():
    """The scenario's state; unregisters the custom key afterwards so no test leaks it."""
    state: dict = {"fragments": [], "error": None}
    yield state
    registry.unregister("custom_sliding_window")


# -- seed 000 -------------------------------------------------------------------------------


@given(
    parsers.parse('a SlidingWindow with window_size {size:d} and window_mode "{mode}"'),
)
def given_strategy(sw, size, mode):
    sw["strategy"] = SlidingWindow(window_size=size, window_mode=mode)


@given("the following sliding window fragments:")
def given_fragments(sw, datatable):
    header, *rows = datatable
    for row in rows:
        record = dict(zip(header, row, strict=True))
        sw["fragments"].append(
            Message(
                record["role"],
                record["content"],
                meta={
                    "uko_node": record["uko_node"],
                    "score": float(record["score"]),
                    "depth": int(record["depth"]),
                },
                tokens=int(record["tokens"]),
            )
        )


@given("an empty sliding window fragment list")
def given_no_fragments(sw):
    sw["fragments"] = []


@given(
    parsers.parse(
        "a sliding window budget with max_tokens {max_tokens:d} and reserved_tokens {reserved:d}"
    )
)
def given_budget(sw, max_tokens, reserved):
    sw["budget"] = Budget(max_tokens, reserved)


@when("I apply the SlidingWindow")
def when_apply(sw):
    sw["result"] = sw["strategy"].apply(sw["fragments"], sw["budget"])


@then(parsers.parse("{n:d} fragments should be returned by sliding window strategy"))
def then_count(sw, n):
    assert len(sw["result"]) == n, sw["result"]


def _nodes(messages):
    return [m.meta.get("uko_node") for m in messages]


@then(parsers.parse('the sliding window result should contain uko_node "{node}"'))
def then_contains_node(sw, node):
    assert node in _nodes(sw["result"])


@then(parsers.parse('the sliding window result should not contain uko_node "{node}"'))
def then_lacks_node(sw, node):
    assert node not in _nodes(sw["result"])


@then("the sw strategy should satisfy the Strategy protocol")
def then_protocol(sw):
    strategy = sw["strategy"]
    assert isinstance(strategy, Strategy)
    assert isinstance(strategy.name, str) and strategy.name
    assert isinstance(strategy.explain(), str) and strategy.explain()
    assert 0.0 < strategy.can_handle([]) <= 1.0
    assert callable(strategy.apply) and callable(strategy.rewrite)
    # and it does its job through that protocol
    msgs = [Message("user", f"m{i}", tokens=10) for i in range(12)]
    assert len(strategy.apply(msgs, 1000)) == 10


@then(parsers.parse('the sw strategy name should be "{name}"'))
def then_name(sw, name):
    assert sw["strategy"].name == name


@then("the sw strategy should have a capabilities object")
def then_capabilities(sw):
    caps = sw["strategy"].capabilities
    assert isinstance(caps, Capabilities)
    assert caps.model_call is False and caps.keeps_tool_pairs is True


@then(parsers.parse('the sw strategy explain should contain "{text}"'))
def then_explain(sw, text):
    assert text in sw["strategy"].explain().lower()


@when("I check can_handle on SlidingWindow")
def when_can_handle(sw):
    sw["confidence"] = sw["strategy"].can_handle([])


@then(parsers.parse("the sliding window confidence should be greater than {value:f}"))
def then_confidence(sw, value):
    assert sw["confidence"] > value


@given("the strategy registry for sliding window tests")
def given_registry(sw):
    sw["registry"] = registry


@when("I register a custom SlidingWindow with the registry")
def when_register(sw):
    sw["registry"].register("custom_sliding_window", SlidingWindow)


@then(parsers.parse('the sw registry should have strategy "{key}"'))
def then_registered(sw, key):
    assert key in sw["registry"]
    assert sw["registry"].get(key) is SlidingWindow
    # and a ladder can be built from the key
    (layer,) = CompactionPipeline().use(key, window_size=3).strategies
    assert isinstance(layer, SlidingWindow) and layer.window_size == 3


@when(parsers.parse("I attempt to create a SlidingWindow with window_size {size:d}"))
def when_bad_size(sw, size):
    try:
        SlidingWindow(window_size=size)
    except Exception as exc:
        sw["error"] = exc


@when(parsers.parse('I attempt to create a SlidingWindow with window_mode "{mode}"'))
def when_bad_mode(sw, mode):
    try:
        SlidingWindow(window_size=5, window_mode=mode)
    except Exception as exc:
        sw["error"] = exc


@when(parsers.parse('I create a SlidingWindow with window_size {size:d} and window_mode "{mode}"'))
def when_create(sw, size, mode):
    try:
        sw["strategy"] = SlidingWindow(window_size=size, window_mode=mode)
    except Exception as exc:
        sw["error"] = exc


@then("a ValueError should be raised for sliding window")
def then_value_error(sw):
    assert isinstance(sw["error"], ValueError)


@then("no error should be raised for sliding window")
def then_no_error(sw):
    assert sw["error"] is None
    assert isinstance(sw["strategy"], SlidingWindow)


# -- as a ladder layer ------------------------------------------------------------------------


@given("an agent conversation:")
def given_conversation(sw, datatable):
    header, *rows = datatable
    msgs = []
    for row in rows:
        r = dict(zip(header, row, strict=True))
        calls = tuple(ToolCall(c.strip(), "bash") for c in r["calls"].split(",") if c.strip())
        msgs.append(
            Message(
                r["role"],
                r["content"],
                tool_calls=calls,
                tool_call_id=r["answers"] or None,
                tokens=int(r["tokens"]),
            )
        )
    validate(msgs)
    sw["messages"] = msgs


@given(
    parsers.parse(
        "a note from an earlier compaction standing for {n:d} messages after the system prompt"
    )
)
def given_note(sw, n):
    gone = [Message("user", f"old {i}") for i in range(n)]
    note = mark(
        Message("user", f"[{n} earlier messages were removed to fit the context window]"),
        strategy="sliding_window",
        kind="note",
        replaces=gone,
    )
    sw["messages"].insert(1, note)


def _compact(sw, messages, target, options):
    pipeline = CompactionPipeline(counter=ApproximateCounter()).use(SlidingWindow, **options)
    sw["input"] = list(messages)
    sw["target"] = target
    sw["compacted"] = pipeline.compact(messages, target=target)
    sw["result"] = sw["compacted"].messages


@when(parsers.parse("I compact it with a sliding_window layer to {target:d} tokens"))
def when_compact(sw, target):
    _compact(sw, sw["messages"], target, {})


@when(
    parsers.parse(
        "I compact it with a sliding_window layer with keep_steps {k:d} to {target:d} tokens"
    )
)
def when_compact_keep(sw, k, target):
    _compact(sw, sw["messages"], target, {"keep_steps": k})


@when(parsers.parse("I compact the result again with a sliding_window layer to {target:d} tokens"))
def when_compact_again(sw, target):
    _compact(sw, sw["result"], target, {})


@then("the sliding window layer was applied")
def then_applied(sw):
    assert [a.strategy for a in sw["compacted"].applied] == ["sliding_window"]


@then("the sliding window layer was declined")
def then_declined(sw):
    assert [d.strategy for d in sw["compacted"].declined] == ["sliding_window"]
    assert not sw["compacted"].applied


@then("the conversation is unchanged")
def then_unchanged(sw):
    assert list(sw["result"]) == sw["input"]


@then("the result fits the target")
def then_fits(sw):
    assert sw["compacted"].after <= sw["target"]
    assert sw["compacted"].fits


def _contents(sw):
    return [m.content for m in sw["result"]]


@then(parsers.re(r"the result should contain (?P<texts>.+)$"))
def then_contains(sw, texts):
    for text in _QUOTED.findall(texts):
        assert text in _contents(sw), text


@then(parsers.re(r"the result should not contain (?P<texts>.+)$"))
def then_lacks(sw, texts):
    for text in _QUOTED.findall(texts):
        assert text not in _contents(sw), text


@then(parsers.parse('the note where the dropped messages were says "{text}"'))
def then_note_in_place(sw, text):
    out = sw["result"]
    (where,) = [i for i, m in enumerate(out) if is_note(m)]
    note = out[where]
    # it stands where the first dropped message stood: everything before it is as it was
    assert tuple(out[:where]) == tuple(sw["messages"][:where])
    assert provenance(note)["strategy"] == "sliding_window"
    assert text in note.content
    dropped = int(text.split()[0])
    assert len(provenance(note)["replaces"]) == dropped


@then(parsers.parse('the message after the system prompt is a note saying "{text}"'))
def then_note(sw, text):
    note = sw["result"][1]
    assert is_note(note)
    assert provenance(note)["strategy"] == "sliding_window"
    assert text in note.content
    # the count in the text is the count in the provenance record
    dropped = int(text.split()[0])
    assert len(provenance(note)["replaces"]) == dropped


@then(parsers.parse("there is exactly {n:d} note in the result"))
def then_note_count(sw, n):
    assert sum(is_note(m) for m in sw["result"]) == n


@then(parsers.re(r"no kept assistant message calls (?P<ids>.+)$"))
def then_no_calls(sw, ids):
    wanted = set(_QUOTED.findall(ids))
    called = {c.id for m in sw["result"] for c in m.tool_calls}
    answered = {m.tool_call_id for m in sw["result"] if m.role == "tool"}
    assert not (wanted & called) and not (wanted & answered)


@then("the result is a valid conversation")
def then_valid(sw):
    validate(sw["result"])
