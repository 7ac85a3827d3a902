"""``Message.replace`` / ``with_meta`` take a shorter path than ``attrs.evolve`` when only the
text, meta or count change; these properties hold it to exactly what the attrs path gives:
the same message (fields, hash, repr) or the same error, for valid and invalid changes alike.
And equality keeps its value meaning beside its identity shortcut."""

from __future__ import annotations

import pickle
from types import MappingProxyType
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import Message, ToolCall

TEXT = st.text(max_size=20)
CALLS = st.lists(
    st.builds(ToolCall, st.text(min_size=1, max_size=5), st.text(max_size=5)), max_size=2
).map(tuple)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    return Message(
        role,
        draw(TEXT),
        tool_calls=draw(CALLS) if role == "assistant" else (),
        tool_call_id=draw(st.text(min_size=1, max_size=5)) if role == "tool" else None,
        name=draw(st.none() | TEXT),
        meta=draw(st.dictionaries(st.text(max_size=3), st.integers(), max_size=3)),
        tokens=draw(st.none() | st.integers(0, 100)),
        id=draw(st.none() | TEXT),
    )


# Valid and invalid values for every field: the shortcut must fail exactly where attrs fails.
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "content": st.none() | TEXT | st.integers() | st.binary(max_size=3) | st.just(["x"]),
    "meta": st.none()
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
    | st.just(MappingProxyType({"p": 1}))
    | st.just([("a", 1)])
    | st.integers(),
    "tokens": st.none() | st.integers(-2, 50) | st.booleans() | st.just(1.5),
    "role": st.sampled_from(["user", "assistant", "tool", "system", "developer"]),
    "name": st.none() | TEXT | st.integers(),
    "tool_call_id": st.none() | TEXT,
    "tool_calls": st.none() | CALLS | st.just(["x"]) | st.just("calls"),
    "id": st.none() | TEXT | st.integers(),
}


def outcome(build: Any) -> tuple[str, Any]:
    try:
        m = build()
    except (TypeError, ValueError) as error:
        return "error", (type(error), str(error))
    assert type(m.meta) is dict
    return "message", (m, hash(m), repr(m))


@settings(max_examples=400, deadline=None)
@given(message=messages(), data=st.data())
def test_replace_is_evolve(message: Message, data: st.DataObject) -> None:
    fields = data.draw(st.sets(st.sampled_from(sorted(VALUES)), max_size=3))
    changes = {name: data.draw(VALUES[name]) for name in sorted(fields)}
    evolved = {**changes} if "tokens" in changes else {**changes, "tokens": None}
    got = outcome(lambda: message.replace(**changes))
    assert got == outcome(lambda: attrs.evolve(message, **evolved))
    if got[0] == "message":
        copy = got[1][0]
        assert pickle.loads(pickle.dumps(copy)) == copy
        assert copy.meta is not message.meta  # never shared: each message owns its dict


@settings(max_examples=200, deadline=None)
@given(message=messages(), entries=st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
def test_with_meta_is_evolve(message: Message, entries: dict[str, int]) -> None:
    got = outcome(lambda: message.with_meta(**entries))
    assert got == outcome(lambda: attrs.evolve(message, meta={**message.meta, **entries}))


def test_replace_copies_the_meta_it_is_given() -> None:
    meta = {"a": 1}
    m = Message("user", "x").replace(meta=meta)
    meta["a"] = 2
    assert m.meta == {"a": 1}


def test_equality_is_by_value_beside_identity() -> None:
    m = Message("user", "x", meta={"v": float("nan")})
    assert m == m
    assert (m != m) is False
    assert m == m.replace()  # another object, equal fields (the same nan object in meta)
    assert Message("user", "x", meta={"v": float("nan")}) != m  # two nans differ, as in attrs
    assert m != m.replace(content="y") and m != m.with_meta(k=1)
    assert len({m, m.replace()}) == 1
    assert hash(Message("user", "x")) == hash(m)  # meta is not in the hash
