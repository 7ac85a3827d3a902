"""Hypothesis strategies for valid conversations, shared by the property tests.

A generated conversation is always valid by :func:`compaction.validate`: an optional system
block, then turns of a user message followed by assistant steps, each step an assistant message
with zero or more (parallel) tool calls, every call answered right after it. Contents range from
empty to huge, so size-driven code paths are exercised too.
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from compaction import Message, ToolCall

_ids = itertools.count()

TOOL_NAMES = ("bash", "read_file", "grep", "edit", "python")
ARGUMENTS = ("{}", '{"path": "src/app.py"}', '{"command": "pytest -q"}')

_WORDS = ("src/app.py", "error:", "def main():", "ok", "Traceback", "https://x.org/a", "é漢")

texts = st.one_of(
    st.just(""),
    st.text(max_size=30),
    # long and huge outputs, cheap to generate: a repeated chunk
    st.builds(lambda w, n: (w + " ") * n, st.sampled_from(_WORDS), st.integers(20, 150)),
    st.builds(lambda w, n: (w + "\n") * n, st.sampled_from(_WORDS), st.integers(500, 3000)),
)


@st.composite
def steps(draw, *, max_calls: int = 3) -> list[Message]:
    n_calls = draw(st.integers(0, max_calls))
    calls = []
    for _ in range(n_calls):
        name = draw(st.sampled_from(TOOL_NAMES))
        arguments = draw(st.sampled_from(ARGUMENTS))
        calls.append(ToolCall(id=f"call_{next(_ids)}", name=name, arguments=arguments))
    out = [Message("assistant", draw(texts), tool_calls=tuple(calls))]
    results = [Message("tool", draw(texts), tool_call_id=c.id, name=c.name) for c in calls]
    # providers accept parallel results in any order
    out.extend(draw(st.permutations(results)) if len(results) > 1 else results)
    return out


@st.composite
def turns(draw, *, max_steps: int = 4) -> list[Message]:
    out = [Message("user", draw(texts))]
    for _ in range(draw(st.integers(0, max_steps))):
        out.extend(draw(steps()))
    return out


@st.composite
def conversations(draw, *, max_turns: int = 5, max_steps: int = 4) -> list[Message]:
    out = [Message("system", draw(texts)) for _ in range(draw(st.integers(0, 2)))]
    for _ in range(draw(st.integers(0, max_turns))):
        out.extend(draw(turns(max_steps=max_steps)))
    return out


def coding_conversation() -> list[Message]:
    """A fixed coding session: a system prompt, then three requests of two bash steps each
    (600-character texts), for tests that need a real summariser to be called."""
    msgs = [Message("system", "You are a coding agent.")]
    for t in range(3):
        msgs.append(Message("user", f"task {t} on src/m{t}.py " + "u" * 600))
        for s in range(2):
            cid = f"t{t}s{s}"
            call = ToolCall(cid, "bash", {"command": f"cat src/m{t}_{s}.py"})
            msgs.append(Message("assistant", "", tool_calls=(call,)))
            msgs.append(Message("tool", "o" * 600, tool_call_id=cid, name="bash"))
    return msgs
