"""Within a run, a view's shape is read from the previous view's where messages are the same
objects: whatever was kept, rewritten, dropped or inserted, the answer is exactly what reading
the whole view gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import _run_memo
from compaction.memory.transcript import (
    PINNED_KEY,
    PROVENANCE_KEY,
    SYNTHETIC_KEY,
    Transcript,
    parse,
)
from compaction.messages import Message, ToolCall

# The kinds of message that shape groups: the person, the harness, a note, a pinned one, an
# assistant reply, a step with one or two calls and its results (some missing or stray), a
# stray system message.
KINDS = st.sampled_from(
    ["user", "synthetic", "note", "pinned", "assistant", "step1", "step2", "partial", "tool", "sys"]
)


def _build(kinds: list[str], tag: str) -> list[Message]:
    out: list[Message] = []
    for i, kind in enumerate(kinds):
        word = f"{tag}{i}"
        if kind == "user":
            out.append(Message("user", word))
        elif kind == "synthetic":
            out.append(Message("user", word, meta={SYNTHETIC_KEY: True}))
        elif kind == "note":
            out.append(Message("user", word, meta={PROVENANCE_KEY: {"kind": "note"}}))
        elif kind == "pinned":
            out.append(Message("user", word, meta={PINNED_KEY: True}))
        elif kind == "assistant":
            out.append(Message("assistant", word))
        elif kind == "tool":
            out.append(Message("tool", word, tool_call_id=f"stray{word}"))
        elif kind == "sys":
            out.append(Message("system", word))
        else:
            ids = [f"c{word}a"] if kind == "step1" else [f"c{word}a", f"c{word}b"]
            calls = tuple(ToolCall(c, "run") for c in ids)
            out.append(Message("assistant", word, tool_calls=calls))
            answered = ids[:1] if kind == "partial" else ids
            out.extend(Message("tool", c, tool_call_id=c) for c in answered)
    return out


def _same(a: Transcript, b: Transcript) -> None:
    assert a.messages == b.messages
    assert (a.system_end, a.groups, a.anchor, a.task, a.pinned, a.words) == (
        b.system_end,
        b.groups,
        b.anchor,
        b.task,
        b.pinned,
        b.words,
    )


@settings(max_examples=300, deadline=None)
@given(
    head=st.integers(0, 2),
    kinds=st.lists(KINDS, max_size=30),
    edits=st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 6), st.lists(KINDS, max_size=4)),
        max_size=3,
    ),
)
def test_a_view_read_from_the_previous_one_reads_as_a_whole_reading(
    head: int, kinds: list[str], edits: list[tuple[int, int, list[str]]]
) -> None:
    view = [Message("system", f"s{i}") for i in range(head)] + _build(kinds, "m")
    token = _run_memo.open_memo()
    try:
        _same(parse(view), parse(view, counter=None))
        for n, (at, drop, new) in enumerate(edits):
            at = min(at, len(view))
            view = view[:at] + _build(new, f"e{n}x") + view[at + drop :]
            within = parse(view)
            _run_memo.close(token)
            token = _run_memo.open_memo()
            _same(within, parse(view))  # a fresh memo: read whole
            parse(view)  # ... and the next edit is read from it
    finally:
        _run_memo.close(token)


def test_outside_a_run_nothing_is_kept() -> None:
    view = _build(["user", "step1", "assistant"], "m")
    assert _run_memo.memo() is None
    parse(view)
    assert _run_memo.memo() is None


REWRITES = st.sampled_from(["content", "pin", "unpin", "note", "synthetic", "plain"])


def _rewrite(message: Message, how: str) -> Message:
    if how == "content":  # a cleared result, a placeholder: the same message, less text
        return message.replace(content=message.content + " (cleared)")
    if how == "pin":
        return message.replace(meta={**message.meta, PINNED_KEY: True})
    if how == "note":
        return message.replace(meta={**message.meta, PROVENANCE_KEY: {"kind": "summary"}})
    if how == "synthetic":
        return message.replace(meta={**message.meta, SYNTHETIC_KEY: True})
    if how == "unpin":
        return message.replace(meta={k: v for k, v in message.meta.items() if k != PINNED_KEY})
    return message.replace(meta={})


@settings(max_examples=300, deadline=None)
@given(
    kinds=st.lists(KINDS, max_size=30),
    rewrites=st.lists(st.tuples(st.integers(0, 60), REWRITES), max_size=6),
)
def test_messages_rewritten_in_place_read_as_a_whole_reading(
    kinds: list[str], rewrites: list[tuple[int, str]]
) -> None:
    view = _build(kinds, "m")
    token = _run_memo.open_memo()
    try:
        parse(view)
        for at, how in rewrites:
            if view:
                at %= len(view)
                view = [*view[:at], _rewrite(view[at], how), *view[at + 1 :]]
        within = parse(view)
    finally:
        _run_memo.close(token)
    _same(within, parse(view))
