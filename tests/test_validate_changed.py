"""An answer checked from the valid view it was made from: whatever a layer keeps, drops,
rewrites or inserts, the problems found are exactly the whole conversation's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.messages import Message, ToolCall
from compaction.validate import changed_span, problems, problems_after

PIECES = st.sampled_from(
    ["user", "assistant", "step1", "step2", "partial", "stray", "system", "reuse_id", "dup"]
)


def _build(kinds: list[str], tag: str, taken: str = "cm0") -> list[Message]:
    out: list[Message] = []
    for i, kind in enumerate(kinds):
        word = f"{tag}{i}"
        if kind == "user":
            out.append(Message("user", word))
        elif kind == "assistant":
            out.append(Message("assistant", word))
        elif kind == "stray":
            out.append(Message("tool", word, tool_call_id=f"c{word}"))
        elif kind == "system":
            out.append(Message("system", word))
        else:
            # "reuse_id" calls with an id the original conversation also uses
            ids = {
                "step1": [f"c{word}"],
                "step2": [f"c{word}a", f"c{word}b"],
                "partial": [f"c{word}a", f"c{word}b"],
                "reuse_id": [taken],
                "dup": [f"c{word}", f"c{word}"],
            }[kind]
            out.append(Message("assistant", word, tool_calls=tuple(ToolCall(c, "r") for c in ids)))
            answered = ids[:1] if kind == "partial" else list(dict.fromkeys(ids))
            out.extend(Message("tool", c, tool_call_id=c) for c in answered)
    return out


VALID = st.lists(st.sampled_from(["user", "assistant", "step1", "step2"]), max_size=25)


@settings(max_examples=800, deadline=None)
@given(
    head=st.integers(0, 2),
    kinds=VALID,
    data=st.data(),
    new=st.lists(PIECES, max_size=4),
    pending=st.booleans(),
)
def test_an_answer_checked_from_a_valid_view_finds_what_a_whole_check_finds(
    head: int, kinds: list[str], data: st.DataObject, new: list[str], pending: bool
) -> None:
    before = tuple([Message("system", f"s{i}") for i in range(head)] + _build(kinds, "m"))
    assert problems(before) == []
    at = data.draw(st.integers(0, len(before)))
    drop = data.draw(st.integers(0, len(before) - at))
    ids = [c.id for m in before for c in m.tool_calls] or ["cm0"]
    taken = data.draw(st.sampled_from(ids))  # a call id the conversation already uses
    after = (*before[:at], *_build(new, "e", taken), *before[at + drop :])
    waiting = {"cea", "ceb", "ce0b", "ce1b"} if pending else set()
    if problems(before, pending=waiting):
        return
    expect = [(e.index, e.reason) for e in problems(after, pending=waiting)]
    assert [(e.index, e.reason) for e in problems_after(before, after, pending=waiting)] == expect


@given(kinds=VALID, at=st.integers(0, 40), drop=st.integers(0, 5))
def test_the_changed_stretch_bounds_what_differs(kinds: list[str], at: int, drop: int) -> None:
    before = tuple(_build(kinds, "m"))
    after = (*before[:at], *_build(["user"], "e"), *before[at + drop :])
    span = changed_span(before, after)
    assert span is not None
    x, y, y_old = span
    assert all(a is b for a, b in zip(after[:x], before[:x], strict=True))
    assert len(after) - y == len(before) - y_old
    assert all(a is b for a, b in zip(after[y:], before[y_old:], strict=True))
    assert changed_span(before, tuple(before)) is None


HOW = st.sampled_from(["content", "answer_other", "role", "drop_call", "rename_call"])


def _in_place(message: Message, how: str) -> Message:
    if how == "content":  # a placeholder: the same message, less text
        return message.replace(content="[cleared]")
    if how == "answer_other" and message.role == "tool":
        return message.replace(tool_call_id="elsewhere")
    if how == "role":
        return message.replace(role="user", tool_calls=(), tool_call_id=None)
    if how == "drop_call" and message.tool_calls:
        return message.replace(tool_calls=message.tool_calls[:-1])
    if how == "rename_call" and message.tool_calls:
        first = message.tool_calls[0]
        return message.replace(tool_calls=(ToolCall(first.id, "other", "{}"),))
    return message.replace(content=message.content + "!")


@settings(max_examples=500, deadline=None)
@given(kinds=VALID, rewrites=st.lists(st.tuples(st.integers(0, 80), HOW), max_size=4))
def test_messages_rewritten_in_place_are_checked_as_a_whole_check_would(
    kinds: list[str], rewrites: list[tuple[int, str]]
) -> None:
    before = tuple(_build(kinds, "m"))
    after = list(before)
    for at, how in rewrites:
        if after:
            at %= len(after)
            after[at] = _in_place(after[at], how)
    expect = [(e.index, e.reason) for e in problems(tuple(after))]
    assert [(e.index, e.reason) for e in problems_after(before, tuple(after))] == expect
