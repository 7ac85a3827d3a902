"""Nothing the model would fetch again: ``Dedupe`` turns the older copy of a repeated read, or of
a call re-run with the same output, into a pointer to the newer one, recallable by id.

Checked on hand-made runs (each rule at its edge), as a property over generated runs (valid,
smaller, every pointer names a newer copy the result shows whole, every older copy recallable
from the raw history), through the default ladder (where it runs first), and on every real
transcript present.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import CompactionPipeline, Message, TiktokenCounter, ToolCall, validate
from compaction.integrations.recall_tools import find_original
from compaction.ladder import default_pipeline
from compaction.memory.ledger import ledger_of
from compaction.memory.transcript import provenance
from compaction.messages import assistant, system, tool, user
from compaction.registry import registry
from compaction.strategies.dedupe import Dedupe
from compaction.tokens import ApproximateCounter

from .conftest import transcript_files

COUNTER = ApproximateCounter()
FILE = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(120))


def run(*steps: tuple[str, dict[str, object] | str, str]) -> list[Message]:
    """A task, then one step per (tool, arguments, output)."""
    msgs = [system("You are a coding agent."), user("Fix the parser.")]
    for n, (name, args, output) in enumerate(steps):
        arguments = args if isinstance(args, str) else json.dumps(args)
        call = ToolCall(f"c{n}", name, arguments)
        msgs += [assistant("", [call]), tool(call.id, output, name=name)]
    return msgs


def kind(message: Message) -> str | None:
    return (provenance(message) or {}).get("kind")


def compact(msgs: Sequence[Message], target: int = 1) -> tuple[Message, ...]:
    return Dedupe().compact(msgs, target=target, counter=COUNTER).messages


def test_a_file_read_again_leaves_a_pointer_to_the_later_read():
    edited = FILE.replace("x + 7", "x - 7")
    msgs = run(
        ("read_file", {"path": "src/parser.py"}, FILE),
        ("edit_file", {"path": "src/parser.py", "old": "x + 7", "new": "x - 7"}, "ok"),
        ("read_file", {"path": "src/parser.py"}, edited),
    )
    out = compact(msgs)
    validate(out)
    pointer = out[3]
    assert pointer.tool_call_id == "c0"  # the call stays answered
    assert "superseded by the read at step 3 (call c2)" in pointer.content
    assert 'read_file({"path": "src/parser.py"})' in pointer.content
    record = provenance(pointer)
    assert record is not None and record["strategy"] == "dedupe" and kind(pointer) == "placeholder"
    assert record["superseded_by"] == "c2"
    # Recallable by the id it names: the raw history gives the original back whole.
    ref = record["replaces"][0]
    assert f"recall id {ref}" in pointer.content
    assert find_original(ref, msgs) == msgs[3]
    assert out[5:] == tuple(msgs[5:])  # the edit and the later read are untouched


def test_a_command_rerun_with_the_same_output_points_to_the_later_run():
    status = "On branch main\nnothing to commit, working tree clean\n" * 20
    msgs = run(
        ("bash", {"command": "git status"}, status),
        ("bash", {"command": "git status"}, status),
    )
    out = compact(msgs)
    assert "superseded by the same call at step 2 (call c1), which returned the same" in (
        out[3].content
    )
    assert out[5] == msgs[5]


def test_a_command_whose_output_changed_is_history_and_stays():
    before = "FAILED tests/test_p.py::test_last_line - AssertionError\n" * 10
    after = "1 passed in 0.1s\n" * 40
    msgs = run(
        ("bash", {"command": "pytest -x"}, before),
        ("bash", {"command": "pytest -x"}, after),
        ("bash", {"command": "pytest -x"}, after),
    )
    out = compact(msgs)
    assert out[3] == msgs[3]  # the failure before the fix: history, kept
    assert kind(out[5]) == "placeholder" and out[7] == msgs[7]


def test_a_shell_view_is_a_read_and_an_in_place_edit_is_not():
    view = "nl -ba src/parser.py | sed -n '1,80p'"
    msgs = run(
        ("bash", {"command": view}, FILE),
        ("bash", {"command": "sed -i 's/x + 7/x - 7/' src/parser.py"}, FILE[:300]),
        ("bash", {"command": view}, FILE.replace("x + 7", "x - 7")),
        ("bash", {"command": "sed -i 's/x + 7/x - 7/' src/parser.py"}, FILE[:200]),
    )
    out = compact(msgs)
    assert "superseded by the read at step 3" in out[3].content
    assert out[5] == msgs[5]  # an edit re-run with another output is not a read


def test_arguments_in_another_order_are_the_same_call():
    msgs = run(
        ("Read", '{"file_path": "a.py", "limit": 200}', FILE),
        ("Read", '{"limit": 200, "file_path": "a.py"}', FILE),
        ("Read", '{"file_path": "a.py", "limit": 100}', FILE),
    )
    out = compact(msgs)
    assert "superseded by the read at step 2 (call c1)" in out[3].content
    assert out[5] == msgs[5]  # another range of the file is another read


def test_pinned_and_rewritten_copies_stay():
    msgs = run(*[("read_file", {"path": "a.py"}, FILE)] * 4)
    pinned = msgs[5].replace(meta={"pinned": True})
    placeholder = msgs[9].replace(
        content="[cleared]", meta={"compaction": {"kind": "placeholder", "replaces": ("x",)}}
    )
    msgs[5], msgs[9] = pinned, placeholder
    out = compact(msgs)
    # The rewritten copy (step 4) is neither a target nor superseded; the pinned copy (step 2)
    # stays, and the copy before it points to it: the nearest newer copy shown whole.
    assert out[9] == placeholder and out[7] == msgs[7] and out[5] == pinned
    assert "(call c1)" in out[3].content


def test_it_stops_under_target_oldest_copy_first():
    msgs = run(*[("read_file", {"path": "a.py"}, FILE)] * 4)
    total = COUNTER.count_messages(msgs)
    one = COUNTER.count(msgs[3]) - COUNTER.count(compact(msgs)[3])
    out = compact(msgs, target=total - one // 2)
    assert kind(out[3]) == "placeholder"
    assert out[5:] == tuple(msgs[5:])


def test_what_the_older_copy_reported_stays_in_the_ledger():
    failing = "<returncode>1</returncode>\nFAILED tests/test_p.py::test_a - KeyError\n" * 8
    msgs = run(
        ("bash", {"command": "pytest -x"}, failing),
        ("bash", {"command": "pytest -x"}, failing),
    )
    out = compact(msgs)
    record = provenance(out[3])
    assert record is not None
    assert record["facts"]["failing"] == ("tests/test_p.py::test_a",)
    assert record["facts"]["errors"] == ("KeyError",) and record["facts"]["exit"] == 1
    assert "tests/test_p.py::test_a" in ledger_of(out).failing


def test_small_copies_are_left_alone_and_options_are_checked():
    msgs = run(*[("bash", {"command": "pwd"}, "/repo")] * 3)
    assert Dedupe().rewrite(tuple(msgs), target=1, counter=COUNTER) is None
    with pytest.raises(ValueError, match="min_tokens"):
        Dedupe(min_tokens=-1)
    with pytest.raises(TypeError, match="read_tools"):
        Dedupe(read_tools=[3])  # type: ignore[list-item]
    assert Dedupe(read_tools="show").read_tools == frozenset({"show"})


def test_it_is_the_first_layer_of_the_default_ladder_and_a_registry_key():
    assert registry.get("dedupe") is Dedupe
    assert default_pipeline().strategies[0].name == "dedupe"
    msgs = run(*[("read_file", {"path": "a.py"}, FILE)] * 3)
    total = COUNTER.count_messages(msgs)
    result = default_pipeline(counter=COUNTER).compact(msgs, target=total - 50)
    # A repeated read is the first thing given up: nothing else is touched.
    assert [a.strategy for a in result.applied] == ["dedupe"]
    assert result.messages[5:] == tuple(msgs[5:])


# -- the property ------------------------------------------------------------------------------

_OUTPUTS = st.sampled_from([FILE, FILE[:900], "ok\n" * 80, "FAILED t.py::a\n" * 40, "x"])
_CALLS = st.sampled_from(
    [
        ("read_file", {"path": "a.py"}),
        ("read_file", {"path": "b.py"}),
        ("bash", {"command": "git status"}),
        ("bash", {"command": "cat a.py"}),
        ("bash", {"command": "pytest"}),
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_CALLS, _OUTPUTS), min_size=1, max_size=12),
    st.floats(0.0, 1.0),
)
def test_pointers_name_a_newer_copy_shown_whole_and_originals_stay_recallable(steps, aim):
    msgs = run(*[(name, args, out) for (name, args), out in steps])
    total = COUNTER.count_messages(msgs)
    result = (
        CompactionPipeline()
        .run(Dedupe())
        .compact(msgs, target=max(int(total * aim), 1), counter=COUNTER)
    )
    out = result.messages
    validate(out)
    assert len(out) == len(msgs) and result.after <= total
    by_call = {m.tool_call_id: m for m in out if m.role == "tool"}
    for before, after in zip(msgs, out, strict=True):
        if after == before:
            continue
        record = provenance(after)
        assert record is not None and record["strategy"] == "dedupe"
        newer = by_call[record["superseded_by"]]
        original_newer = next(m for m in msgs if m.tool_call_id == record["superseded_by"])
        assert newer == original_newer  # the copy pointed to is shown whole
        assert msgs.index(original_newer) > msgs.index(before)  # and it is newer
        assert find_original(record["replaces"][0], msgs) == before


# -- every real transcript -----------------------------------------------------------------------


@pytest.mark.transcripts
@pytest.mark.parametrize("path", transcript_files(), ids=lambda p: p.name)
def test_dedupe_on_every_real_transcript(path):
    formats = pytest.importorskip("compaction.formats")
    msgs = tuple(formats.load(path).messages)
    counter = TiktokenCounter()
    result = Dedupe().compact(msgs, target=1, counter=counter)
    out = result.messages
    validate(out)
    assert len(out) == len(msgs)
    shown = {m.tool_call_id: m for m in out if m.role == "tool"}
    for before, after in zip(msgs, out, strict=True):
        if after is before or after == before:
            continue
        record = provenance(after)
        assert record is not None and record["strategy"] == "dedupe"
        assert provenance(shown[record["superseded_by"]]) is None
        assert find_original(record["replaces"][0], msgs) == before


# -- which calls are the same call ---------------------------------------------------------------

_VALUES = st.one_of(
    st.sampled_from(["a.py", "x", "é", "\\", '"', ""]),
    st.sampled_from([1, 1.0, 0.0, -0.0, True, None, [], ["a.py"], {"k": "v"}]),
    # long values: an object of strings is keyed by its JSON while short, by its items past
    # a few thousand characters (two of these are past it, one is not)
    st.sampled_from(["w" * 4_000, "é" * 2_100]),
)
_OBJECTS = st.dictionaries(st.sampled_from(["path", "limit", "command"]), _VALUES, max_size=3)


def _spelling(value: dict[str, object], order: list[int], ascii_only: bool) -> str:
    """``value`` as a model may write it: its keys in any order, non-ASCII escaped or not."""
    keys = sorted(value, key=lambda k: order[["path", "limit", "command"].index(k)])
    return json.dumps({k: value[k] for k in keys}, ensure_ascii=ascii_only)


_ARGUMENTS = st.one_of(
    st.builds(
        _spelling,
        _OBJECTS,
        st.permutations([0, 1, 2]),
        st.booleans(),
    ),
    # texts that are no JSON object: a bare command, broken JSON, a JSON string of an object
    st.sampled_from(['{"path": "a.py"', "ls", " ls ", '"{\\"path\\": \\"a.py\\"}"', "\u00a0{}"]),
)


def _canonical(arguments: str) -> str:
    """The rule: a call's arguments as JSON with sorted keys; text that is not JSON (or is a
    JSON string) as the text itself, stripped."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments.strip()
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(_ARGUMENTS, _ARGUMENTS)
def test_two_calls_are_the_same_call_exactly_when_their_sorted_json_is_equal(first, second):
    msgs = run(("bash", first, "ok\n" * 80), ("bash", second, "ok\n" * 80))
    out = compact(msgs)
    same = _canonical(first) == _canonical(second)
    assert (kind(out[3]) == "placeholder") is same
    assert out[5] == msgs[5]
