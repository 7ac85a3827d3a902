"""The compacted view written back incrementally is exactly what writing it whole gives.

Between compactions a drop-in writes only the steps appended since the last call
(:class:`~compaction.integrations._written.WrittenView`); whatever the sequence of views (grown
by steps, rewritten at the front by a compaction, cut back, replaced by equal copies), each
call's output must equal the whole conversion of that view, for each framework's writer, and
the objects written for the part both views share must be the very objects sent last time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.adapters.openai import message_to_openai, to_openai
from compaction.adapters.responses import message_to_responses, to_responses
from compaction.integrations._written import WrittenView, many_each, one_each
from compaction.messages import Message, ToolCall

pydantic_ai_messages = pytest.importorskip("compaction.integrations.pydantic_ai_messages")


def _step(i: int, calls: int) -> list[Message]:
    tool_calls = tuple(
        ToolCall(f"c{i}_{j}", "bash", json.dumps({"cmd": f"make {i} {j}"})) for j in range(calls)
    )
    out = [Message("assistant", f"step {i}" if calls == 0 else "", tool_calls=tool_calls)]
    out += [Message("tool", f"output {i} {j}", tool_call_id=c.id) for j, c in enumerate(tool_calls)]
    return out


def _user(i: int) -> Message:
    return Message("user", f"please go on ({i})")


# A script of what happens between calls: append steps or user turns, compact (the front
# replaced by a note), cut the view back, or hand in equal copies of the same messages.
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.integers(0, 3)),
        st.tuples(st.just("user"), st.just(0)),
        st.tuples(st.just("compact"), st.integers(1, 6)),
        st.tuples(st.just("cut"), st.integers(1, 4)),
        st.tuples(st.just("copy"), st.just(0)),
    ),
    min_size=1,
    max_size=25,
)


def _views(ops: list[tuple[str, int]]) -> list[list[Message]]:
    view = [Message("system", "You are a coding agent."), Message("user", "Fix the build.")]
    views = []
    for n, (op, arg) in enumerate(ops):
        if op == "step":
            view = [*view, *_step(n, arg)]
        elif op == "user":
            view = [*view, _user(n)]
        elif op == "compact" and len(view) > 2:
            keep = max(2, len(view) - arg)
            view = [view[0], Message("user", f"[note {n}]"), *view[keep:]]
        elif op == "cut":
            view = view[: max(1, len(view) - arg)]
        elif op == "copy":
            view = [Message(m.role, m.content, m.tool_calls, m.tool_call_id) for m in view]
        views.append(view)
    return views


def _pydantic_shape(written: list[Any]) -> list[Any]:
    # Fresh parts carry the time they were made; the shape and text are what must agree.
    return [
        (
            type(m).__name__,
            [
                (type(p).__name__, getattr(p, "content", None), getattr(p, "tool_call_id", None))
                for p in m.parts
            ],
        )
        for m in written
    ]


WRITERS = {
    "openai": (one_each(message_to_openai), to_openai, lambda w: w),
    "responses": (many_each(message_to_responses), to_responses, lambda w: w),
    "pydantic-ai": (
        pydantic_ai_messages.pydantic_ai_units,
        pydantic_ai_messages.to_pydantic_ai,
        _pydantic_shape,
    ),
}


@settings(max_examples=150, deadline=None)
@given(ops=_ops, writer=st.sampled_from(sorted(WRITERS)))
def test_each_call_writes_what_the_whole_conversion_gives(ops, writer) -> None:
    units, whole, shape = WRITERS[writer]
    written = WrittenView(units)
    last_view: list[Message] = []
    last_out: list[Any] = []
    for view in _views(ops):
        out = written.write(view)
        assert shape(out) == shape(whole(view))
        # What both views start with (the same message objects) was not written again,
        # except the last unit before the first difference, which may have grown.
        same = 0
        while same < min(len(view), len(last_view)) and view[same] is last_view[same]:
            same += 1
        if writer == "openai" and same:
            assert all(out[i] is last_out[i] for i in range(same - 1))
        last_view, last_out = view, out


def test_the_output_is_a_new_list_each_call() -> None:
    written = WrittenView(one_each(message_to_openai))
    view = [Message("system", "s"), Message("user", "u")]
    first = written.write(view)
    first.append({"role": "user", "content": "the caller appended this"})
    assert written.write(view) == to_openai(view)
