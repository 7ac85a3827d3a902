"""What identifies a step is never cut, and the request fits before the newest outputs keep
their head and tail.

The last resort ([`Fit`][compaction.strategies.fit.Fit]) cuts tool-call arguments only where
their bulk is: a value shorter than ``ARG_FLOOR`` characters (a path, an id, a name, a short
command) stays whole; the arguments of a call whose result is shown whole are cut only while
the request is over its hard limit; a cut aimed at a target the request cannot reach is taken
only where it frees a meaningful share of what is still to free; a value it does cut keeps its
head and a marker. And when the request is still over the limit after every other cut, the
newest outputs give up their own head and tail: the request fitting comes first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import compaction as C
from compaction import CompactionPipeline, Message, ToolCall, validate
from compaction.memory.transcript import provenance
from compaction.messages import assistant, system, tool, user
from compaction.strategies._fit_args import ARG_FLOOR, _leaves
from compaction.strategies.fit import Fit
from compaction.tokens import ApproximateCounter, TiktokenCounter
from compaction.trigger import default_pipeline

BODY = "\n".join(f"def f{i}(x):\n    return x * {i}  # a line of module code" for i in range(160))


def _arguments(messages: Iterable[Message]) -> dict[str, str]:
    return {c.id: c.arguments for m in messages if m.role == "assistant" for c in m.tool_calls}


def _short_leaves(arguments: str) -> list[tuple[tuple[Any, ...], str]]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return [((), arguments)] if len(arguments) < ARG_FLOOR else []
    return [(path, leaf) for path, leaf in _leaves(value) if len(leaf) < ARG_FLOOR]


def _leaf(arguments: str, path: tuple[Any, ...]) -> Any:
    try:
        value: Any = json.loads(arguments)
    except ValueError:
        return arguments
    for key in path:
        value = value[key]
    return value


def _assert_short_values_whole(before: Sequence[Message], after: Sequence[Message]) -> None:
    sent = _arguments(after)
    for call_id, arguments in _arguments(before).items():
        if call_id not in sent:
            continue  # the step was dropped whole by a layer above
        for path, leaf in _short_leaves(arguments):
            assert _leaf(sent[call_id], path) == leaf, (call_id, path)


# -- the agent loop of the report ------------------------------------------------------------


def _reads() -> list[tuple[str, ...]]:
    return [("mod_1.py",), ("mod_2.py",), ("mod_3.py", "mod_4.py"), ("mod_5.py",), ("mod_6.py",)]


def test_every_argument_reaches_the_model_whole_through_the_trigger():
    msgs = [system("You are a careful coding agent."), user("Summarise mod_1.py .. mod_6.py.")]
    compactor = C.Compactor(None, window=12_000)
    compacted = 0
    for n, paths in enumerate(_reads()):
        calls = [
            ToolCall(f"call_{n}_{j}", "read_file", json.dumps({"path": p}))
            for j, p in enumerate(paths)
        ]
        msgs.append(assistant("", calls))
        msgs += [
            tool(c.id, f"# {p}\n" + BODY, name="read_file")
            for c, p in zip(calls, paths, strict=True)
        ]
        sent = compactor.before_call(msgs)
        compacted += sent != msgs
        validate(sent)
        # Each call the model is shown is the call the agent made, path and all.
        originals = _arguments(msgs)
        for call_id, arguments in _arguments(sent).items():
            assert arguments == originals[call_id]
        assert TiktokenCounter().count_messages(sent) <= 12_000
    assert compacted >= 2  # the loop did compact: the calls were in reach of a cut


def test_a_placeholder_and_a_path_are_left_alone_when_the_aim_is_out_of_reach():
    # The newest step alone is over the target (it is protected): cutting the older call's
    # path and its placeholder frees a few tokens of the ~1,400 to free, so neither is cut.
    counter = TiktokenCounter()
    old = ToolCall("c1", "read_file", json.dumps({"path": "mod_2.py"}))
    placeholder = C.tool("c1", "[read_file output cleared; recall id sha1:0123456789abcdef]")
    calls = [ToolCall(f"c{i}", "read_file", json.dumps({"path": f"mod_{i}.py"})) for i in (3, 4)]
    msgs = [
        system("You are a careful coding agent."),
        user("Summarise the modules."),
        assistant("", [old]),
        placeholder,
        assistant("", calls),
        *[tool(c.id, BODY, name="read_file") for c in calls],
    ]
    total = counter.count_messages(msgs)
    result = (
        CompactionPipeline()
        .run(Fit())
        .compact(msgs, target=total - 1_400, counter=counter, limit=12_000)
    )
    assert result.messages == tuple(msgs) and not result.changed


def test_a_cut_that_frees_a_share_is_still_taken_when_the_aim_is_out_of_reach():
    counter = TiktokenCounter()
    big = ToolCall("c1", "bash", json.dumps({"command": "cat build.log"}))
    msgs = [
        system("s"),
        user("Why does the build fail?"),
        assistant("", [big]),
        tool("c1", "build step ok\n" * 800, name="bash"),
        assistant("", [ToolCall("c2", "read_file", json.dumps({"path": "a.py"}))]),
        tool("c2", BODY * 2, name="read_file"),
    ]
    newest = counter.count_messages(msgs[4:])
    result = (
        CompactionPipeline()
        .run(Fit())
        .compact(msgs, target=newest - 100, counter=counter, limit=100_000)
    )
    # The old 4,000-token log is cut (the aim is out of reach, but the cut frees most of the
    # way); its call's command stays whole.
    assert (provenance(result.messages[3]) or {}).get("kind") == "truncated"
    assert result.messages[2] == msgs[2]
    assert result.messages[4:] == tuple(msgs[4:])


def test_a_call_whose_result_is_shown_whole_keeps_its_arguments_within_the_limit():
    counter = TiktokenCounter()
    script = "python - <<'EOF'\n" + "print('generating fixtures')\n" * 200 + "EOF"
    msgs = [
        system("s"),
        user("Regenerate the fixtures."),
        assistant("", [ToolCall("c1", "bash", json.dumps({"command": script}))]),
        tool("c1", "done", name="bash"),
        assistant("", [ToolCall("c2", "read_file", json.dumps({"path": "a.py"}))]),
        tool("c2", BODY, name="read_file"),
    ]
    total = counter.count_messages(msgs)
    result = (
        CompactionPipeline()
        .run(Fit())
        .compact(msgs, target=total // 3, counter=counter, limit=total)
    )
    # Its result ("done") is whole: the script that produced it is not cut for the target.
    assert result.messages[2] == msgs[2]


def test_over_the_limit_a_long_argument_keeps_its_head_and_a_marker():
    counter = TiktokenCounter()
    content = "".join(f"line {i}: the generated fixture number {i}\n" for i in range(2_000))
    call = ToolCall(
        "w", "Write", json.dumps({"file_path": "tests/fixtures.py", "content": content})
    )
    msgs = [system("s"), user("Write the fixtures."), assistant("", [call]), tool("w", "ok")]
    result = CompactionPipeline().run(Fit()).compact(msgs, target=1_000, counter=counter)
    assert result.fits
    args = json.loads(result.messages[2].tool_calls[0].arguments)
    assert args["file_path"] == "tests/fixtures.py"  # under the floor: whole
    assert args["content"].startswith("line 0: the generated fixture number 0")
    assert "characters cut to fit the context window; recall id" in args["content"]


# -- the property --------------------------------------------------------------------------


def _value(short: bool) -> st.SearchStrategy[str]:
    """A value under the floor or over it, built from a short seed repeated to its length."""
    low, high = (0, ARG_FLOOR - 1) if short else (ARG_FLOOR, 3 * ARG_FLOOR)
    return st.builds(
        lambda seed, n: (seed * (n // len(seed) + 1))[:n],
        st.text(st.sampled_from('src/app.py --flag\né"'), min_size=1, max_size=12),
        st.integers(low, high),
    )


_ARGUMENTS = st.one_of(
    st.dictionaries(
        st.sampled_from(["path", "command", "content", "id", "pattern"]),
        st.booleans().flatmap(_value),
        min_size=1,
        max_size=3,
    ).map(json.dumps),
    st.booleans().flatmap(_value),  # arguments that are not JSON
)


@st.composite
def _conversations(draw: st.DrawFn) -> list[Message]:
    msgs = [system(draw(st.sampled_from(["s", "You are an agent. " * 40]))), user("Do it.")]
    for n in range(draw(st.integers(1, 5))):
        calls = [
            ToolCall(f"c{n}_{j}", draw(st.sampled_from(["bash", "Write", "read_file"])), a)
            for j, a in enumerate(draw(st.lists(_ARGUMENTS, min_size=1, max_size=3)))
        ]
        msgs.append(assistant(draw(st.sampled_from(["", "Next."])), calls))
        for c in calls:
            msgs.append(tool(c.id, "out put " * draw(st.integers(0, 600)), name=c.name))
    return msgs


@settings(max_examples=150, deadline=None)
@given(_conversations(), st.floats(0.02, 0.95), st.floats(0.0, 2.0), st.booleans())
def test_no_argument_under_the_floor_is_ever_cut(
    msgs: list[Message], aim: float, room: float, ladder: bool
) -> None:
    counter = ApproximateCounter()
    total = counter.count_messages(msgs)
    target = max(int(total * aim), 1)
    limit = target + int(total * room)
    pipeline = default_pipeline(counter=counter) if ladder else CompactionPipeline().run(Fit())
    result = pipeline.compact(msgs, target=target, counter=counter, limit=limit)
    validate(result.messages)
    _assert_short_values_whole(msgs, result.messages)


# -- the fit guarantee before the newest outputs' head and tail -----------------------------


def test_the_request_fits_before_the_newest_outputs_keep_their_head_and_tail():
    counter = TiktokenCounter()
    prompt = " ".join(f"rule {i}: keep the workspace tidy;" for i in range(400))
    while counter.count_text(prompt) > 2_018:
        prompt = prompt[:-10]
    msgs = [system(prompt), user("Read the three modules and tell me what they do.")]
    calls = [
        ToolCall(f"c{i}", "read_file", json.dumps({"path": f"src/mod_{i}.py"})) for i in range(3)
    ]
    msgs.append(assistant("", calls))
    for i, c in enumerate(calls):
        msgs.append(tool(c.id, "\n".join(f"line {j} of module {i}" for j in range(400))))
    assert counter.count(msgs[0]) > 2_000
    for target in (2_200, 2_220, 2_240):
        result = default_pipeline(counter=counter).compact(msgs, target=target)
        assert result.after <= target, target
        assert result.messages[0] == msgs[0]  # the system prompt fits: it stays whole
        assert result.messages[1] == msgs[1]  # and so does the task
        assert _arguments(result.messages) == _arguments(msgs)
        for out in result.messages[3:]:
            # Each newest output still says what was cut and how to get it back.
            assert "recall id sha1:" in out.content
