"""ToolResults: old tool output replaced by placeholders, oldest first, just enough."""

from __future__ import annotations

import copy
import json

import pytest

from compaction import events
from compaction.memory.transcript import message_ref, provenance
from compaction.messages import Message, ToolCall, assistant, system, tool, user
from compaction.pipeline import CompactionPipeline
from compaction.registry import registry
from compaction.strategies.tool_results import DEFAULT_PLACEHOLDER, ToolResults
from compaction.tokens import ApproximateCounter, TiktokenCounter
from compaction.validate import InvalidConversationError, validate


def step(n: int, *, name: str = "bash", args: str = '{"command": "ls"}', size: int = 400):
    """One tool-calling step: an assistant call and its ``size``-character result."""
    call = ToolCall(f"call_{n}", name, args)
    return [
        assistant(f"step {n}", [call]),
        tool(call.id, f"{n}" * size, name=name),
    ]


def run(n_steps: int, **kwargs) -> list[Message]:
    out = [system("You are a coding agent."), user("Fix the failing test.")]
    for k in range(n_steps):
        out.extend(step(k, **kwargs))
    return out


def tool_indices(messages) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role == "tool"]


def replaced(messages) -> list[int]:
    return [i for i, m in enumerate(messages) if (provenance(m) or {}).get("kind") == "placeholder"]


# -- the ladder rules, as this strategy meets them --------------------------------------------


def test_under_target_nothing_is_asked():
    counter = ApproximateCounter()
    msgs = run(4)
    total = counter.count_messages(msgs)
    result = ToolResults().compact(msgs, target=total, counter=counter)  # == is not over
    assert result.messages == tuple(msgs)
    assert result.applied == () and result.declined == ()
    assert not result.changed


def test_replaces_oldest_first_and_stops_at_target():
    counter = ApproximateCounter()
    msgs = run(4)
    before = counter.count_messages(msgs)
    strategy = ToolResults()
    # Every result here has the same length and the same call arguments.
    call = msgs[2].tool_calls[0]
    saving = counter.count(msgs[3]) - counter.count(strategy.placeholder_for(msgs[3], call))
    assert saving > 0

    # Exactly one replacement's worth over: one is enough (target == tokens is not over).
    one = strategy.compact(msgs, target=before - saving, counter=counter)
    assert replaced(one.messages) == [3]
    assert one.after == before - saving

    # One token more to give: clearing the second oldest would throw away far more than
    # that, so just enough of its middle is cut (head and tail kept, recall id named).
    two = strategy.compact(msgs, target=before - saving - 1, counter=counter)
    assert replaced(two.messages) == [3]
    cut = two.messages[5]
    record = provenance(cut)
    assert record["kind"] == "truncated" and record["replaces"] == (message_ref(msgs[5]),)
    assert f"recall id {message_ref(msgs[5])}" in cut.content
    assert cut.content[:20] == msgs[5].content[:20] and cut.content[-5:] == msgs[5].content[-5:]
    assert before - 2 * saving < two.after <= before - saving - 1
    assert two.applied[0].strategy == "tool_results"

    # Clearing it whole is just enough: then it is cleared.
    both = strategy.compact(msgs, target=before - 2 * saving, counter=counter)
    assert replaced(both.messages) == [3, 5]


def test_partial_progress_is_kept_when_target_is_out_of_reach():
    counter = ApproximateCounter()
    msgs = run(4)
    result = ToolResults().compact(msgs, target=1, counter=counter)
    # Every step but the newest is replaced; the newest is kept (keep_steps=1).
    assert replaced(result.messages) == [3, 5, 7]
    assert result.messages[9] == msgs[9]
    assert result.after < result.before
    assert not result.fits
    validate(result.messages)


def test_nothing_left_to_give_declines():
    counter = ApproximateCounter()
    msgs = run(1)  # the only step is the newest, which is kept
    result = ToolResults().compact(msgs, target=1, counter=counter)
    assert result.messages == tuple(msgs)
    assert [d.reason for d in result.declined] == ["declined"]
    assert ToolResults().rewrite(tuple(msgs), target=1, counter=counter) is None


def test_idempotent_placeholders_are_never_replaced_again():
    counter = ApproximateCounter()
    msgs = run(3)
    first = ToolResults().compact(msgs, target=1, counter=counter)
    assert replaced(first.messages) == [3, 5]
    second = ToolResults().compact(first.messages, target=1, counter=counter)
    assert second.messages == first.messages
    assert [d.reason for d in second.declined] == ["declined"]


def test_a_placeholder_is_not_replaced_by_another_even_a_shorter_one():
    counter = ApproximateCounter()
    wordy = ToolResults(min_tokens=0, placeholder="[" + "cleared " * 20 + "{name}]")
    first = wordy.compact(run(3), target=1, counter=counter)
    assert replaced(first.messages) == [3, 5]
    terse = ToolResults(min_tokens=0, placeholder="[{name} cleared]")
    assert terse.rewrite(first.messages, target=1, counter=counter) is None


# -- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("keep_steps", "expected"), [(1, [3, 5, 7]), (3, [3]), (2, [3, 5])])
def test_keep_steps_protects_the_newest_steps(keep_steps, expected):
    msgs = run(4)
    result = ToolResults(keep_steps=keep_steps).compact(
        msgs, target=1, counter=ApproximateCounter()
    )
    assert replaced(result.messages) == expected


def test_keep_steps_equal_to_the_number_of_steps_declines():
    msgs = run(4)
    result = ToolResults(keep_steps=4).compact(msgs, target=1, counter=ApproximateCounter())
    assert not result.changed
    assert [d.reason for d in result.declined] == ["declined"]


@pytest.mark.parametrize("bad", [0, -1])
def test_keep_steps_below_one_is_an_error_that_says_why(bad):
    with pytest.raises(ValueError, match="keep_steps") as info:
        ToolResults(keep_steps=bad)
    assert "acted on" in str(info.value)


@pytest.mark.parametrize("bad", [True, 1.5, "2"])
def test_keep_steps_must_be_an_int(bad):
    with pytest.raises(TypeError, match="keep_steps"):
        ToolResults(keep_steps=bad)


def test_min_tokens_boundary():
    # Known token counts make the boundary exact: 50 is worth a placeholder, 49 is not.
    calls = [ToolCall("a", "bash", "{}"), ToolCall("b", "bash", "{}")]
    msgs = [
        user("go"),
        assistant("", calls),
        Message("tool", "x" * 10, tool_call_id="a", tokens=49),
        Message("tool", "y" * 10, tool_call_id="b", tokens=50),
        *step(9),
    ]
    result = ToolResults(min_tokens=50).compact(msgs, target=1, counter=ApproximateCounter())
    assert replaced(result.messages) == [3]
    result = ToolResults(min_tokens=49).compact(msgs, target=1, counter=ApproximateCounter())
    assert replaced(result.messages) == [2, 3]


def test_min_tokens_must_not_be_negative():
    with pytest.raises(ValueError, match="min_tokens"):
        ToolResults(min_tokens=-1)


def test_placeholder_is_never_larger_than_what_it_replaces():
    counter = ApproximateCounter()
    strategy = ToolResults(min_tokens=0)
    call = ToolCall("a", "bash", "{}")
    placeholder_tokens = counter.count(strategy.placeholder_for(tool("a", "z"), call))
    for old_tokens, expect_replaced in [
        (placeholder_tokens - 1, False),
        (placeholder_tokens, False),  # equal is not smaller
        (placeholder_tokens + 1, True),
    ]:
        msgs = [
            user("go"),
            assistant("", [call]),
            Message("tool", "z", tool_call_id="a", tokens=old_tokens),
            *step(9),
        ]
        result = strategy.compact(msgs, target=1, counter=counter)
        assert (replaced(result.messages) == [2]) is expect_replaced, old_tokens
        assert result.after <= result.before
        # Asked directly (outside the ladder's own must-shrink check), it still declines.
        answer = strategy.rewrite(tuple(msgs), target=1, counter=counter)
        assert (answer is not None) is expect_replaced


def test_exclude_tools_are_never_touched():
    msgs = [user("go")]
    for k, name in enumerate(["read_file", "bash", "read_file", "grep", "bash"]):
        msgs.extend(step(k, name=name))
    result = ToolResults(exclude_tools=["read_file", "grep"]).compact(
        msgs, target=1, counter=ApproximateCounter()
    )
    assert [result.messages[i].name for i in replaced(result.messages)] == ["bash"]
    # A single name is one name, not its letters.
    single = ToolResults(exclude_tools="bash").compact(msgs, target=1, counter=ApproximateCounter())
    assert [single.messages[i].name for i in replaced(single.messages)] == [
        "read_file",
        "read_file",
        "grep",
    ]


def test_exclude_tools_uses_the_call_name_when_the_result_has_none():
    call = ToolCall("c1", "read_file", '{"path": "a.py"}')
    msgs = [user("go"), assistant("", [call]), tool("c1", "x" * 800), *step(9)]
    result = ToolResults(exclude_tools={"read_file"}).compact(
        msgs, target=1, counter=ApproximateCounter()
    )
    assert not result.changed


def test_exclude_tools_must_be_names():
    with pytest.raises(TypeError, match="exclude_tools"):
        ToolResults(exclude_tools=[1])


def test_custom_placeholder_and_its_fields():
    call = ToolCall("c1", "read_file", {"path": "src/app.py"})
    msgs = [user("go"), assistant("", [call]), tool("c1", "x" * 800), *step(9)]
    strategy = ToolResults(placeholder="<{name} {args} {call_id} gone; {{rerun}}>")
    result = strategy.compact(msgs, target=1, counter=ApproximateCounter())
    assert result.messages[2].content == '<read_file {"path": "src/app.py"} c1 gone; {rerun}>'


@pytest.mark.parametrize("bad", ["{nme} cleared", "{} cleared", "{name", 42])
def test_placeholder_is_checked_at_construction(bad):
    with pytest.raises((ValueError, TypeError), match="placeholder"):
        ToolResults(placeholder=bad)


def test_default_placeholder_names_tool_args_and_recall_id_and_never_says_run_it_again():
    long_args = json.dumps({"content": "x" * 500})
    calls = [
        ToolCall("a", "bash", '{"command": "pytest -q"}'),
        ToolCall("b", "write_file", long_args),
        ToolCall("c", "list_dir", "{}"),
    ]
    msgs = [
        user("go"),
        assistant("", calls),
        tool("a", "1" * 800),
        tool("b", "2" * 8000),
        tool("c", "3" * 800),
        *step(9),
    ]
    out = ToolResults().apply(msgs, 1, counter=ApproximateCounter())
    assert out[2].content == DEFAULT_PLACEHOLDER.format(
        name="bash",
        args='{"command": "pytest -q"}',
        call_id="a",
        ref=message_ref(msgs[2]),
        errors="",
    )
    assert "write_file(…)" in out[3].content and "x" * 50 not in out[3].content
    assert "list_dir()" in out[4].content
    for old, new in zip(msgs[2:5], out[2:5], strict=True):
        # a write or a shell command run again repeats its side effect: never invited
        assert "again" not in new.content.lower()
        assert f"recall id {message_ref(old)}" in new.content
        assert "already ran" in new.content


def test_the_placeholder_keeps_the_error_names_the_output_reported():
    msgs = [
        user("go"),
        assistant("", [ToolCall("a", "bash", '{"command": "pytest"}')]),
        tool("a", "Traceback ...\nValueError: bad\n" + "x" * 800 + "\nKeyError: 'k'"),
        *step(9),
    ]
    out = ToolResults().apply(msgs, 1, counter=ApproximateCounter())
    assert "it reported ValueError, KeyError" in out[2].content


def test_a_pinned_result_is_never_cleared():
    msgs = run(2)
    msgs[3] = msgs[3].replace(meta={"pinned": True})
    out = ToolResults().apply(msgs, 1, counter=ApproximateCounter())
    assert out[3] == msgs[3]


def test_provenance_is_in_meta_and_the_call_stays_answered():
    msgs = run(2)
    old = msgs[3]
    old = old.replace(id="msg-3", meta={"source": "log"})
    msgs[3] = old
    out = ToolResults().apply(msgs, 1, counter=ApproximateCounter())
    new = out[3]
    assert new.tool_call_id == old.tool_call_id and new.name == old.name
    assert new.id == "msg-3"
    assert new.meta["source"] == "log"
    record = provenance(new)
    assert record["strategy"] == "tool_results"
    assert record["kind"] == "placeholder"
    assert record["replaces"] == (message_ref(old),) == ("msg-3",)
    assert record["tool"] == "bash"
    validate(out)


def test_the_input_is_not_modified():
    msgs = tuple(run(3))
    snapshot = copy.deepcopy(msgs)
    ToolResults().apply(msgs, 1, counter=ApproximateCounter())
    assert msgs == snapshot
    assert [dict(m.meta) for m in msgs] == [dict(m.meta) for m in snapshot]


def test_each_message_is_counted_at_most_once():
    # The reference recounts the whole conversation per candidate; here each message is
    # encoded once, and each placeholder once, however many replacements it takes.
    counter = ApproximateCounter()
    msgs = run(300)
    result = ToolResults().compact(msgs, target=1, counter=counter)
    n_placeholders = len(replaced(result.messages))
    assert n_placeholders == 299
    distinct_inputs = len(set(msgs))
    distinct_placeholders = len(set(result.messages) - set(msgs))
    assert counter.encoded == distinct_inputs + distinct_placeholders


# -- invalid input -----------------------------------------------------------------------------


def test_invalid_input_raises_naming_the_first_offending_message():
    msgs = [*run(2)]
    msgs.insert(2, tool("ghost", "x" * 400))  # a result answering no call
    with pytest.raises(InvalidConversationError) as info:
        ToolResults().apply(msgs, 1, counter=ApproximateCounter())
    assert info.value.index == 2
    with pytest.raises(InvalidConversationError) as info:
        ToolResults().rewrite(tuple(msgs), target=1, counter=ApproximateCounter())
    assert info.value.index == 2 and "message 2" in str(info.value)


def test_unanswered_call_is_refused():
    msgs = [user("go"), assistant("", [ToolCall("a", "bash")]), user("next")]
    with pytest.raises(InvalidConversationError) as info:
        ToolResults().rewrite(tuple(msgs), target=1, counter=ApproximateCounter())
    assert info.value.index == 1


# -- protocol, registry, events ------------------------------------------------------------------


def test_explain_capabilities_and_can_handle():
    strategy = ToolResults(keep_steps=2, min_tokens=80, exclude_tools=["grep", "bash"])
    text = strategy.explain()
    assert text.count(".") == 1 and text.endswith(".")
    for setting in ("2", "80", "bash", "grep", "placeholder"):
        assert setting in text
    assert ToolResults.name == "tool_results"
    assert ToolResults.capabilities.model_call is False
    assert ToolResults.capabilities.lossless is False
    assert strategy.can_handle(run(3, name="read")) == 1.0
    assert strategy.can_handle(run(2, name="read")) == 0.0  # both steps are kept
    assert strategy.can_handle([]) == 0.0
    assert strategy.can_handle(run(3)) == 0.0  # bash is never touched
    done = ToolResults(keep_steps=2).apply(run(3, name="read"), 10)
    assert replaced(done) and ToolResults(keep_steps=2).can_handle(done) == 0.0


def test_registered_under_its_key():
    strategy = registry.create("tool_results", keep_steps=2)
    assert isinstance(strategy, ToolResults) and strategy.keep_steps == 2
    result = (
        CompactionPipeline()
        .use("tool_results")
        .compact(run(3), target=1, counter=ApproximateCounter())
    )
    assert replaced(result.messages) == [3, 5]


def test_strategy_applied_event_carries_before_and_after():
    seen = []

    def receiver(sender, **kw):
        seen.append((sender, kw))

    strategy = ToolResults()
    counter = ApproximateCounter()
    with events.strategy_applied.connected_to(receiver):
        result = (
            CompactionPipeline()
            .use(strategy)
            .compact(run(3), target=1, counter=counter, labels={"run": 7})
        )
    assert len(seen) == 1
    sender, kw = seen[0]
    assert sender is strategy
    assert kw["name"] == "tool_results"
    assert (kw["before"], kw["after"]) == (result.before, result.after)
    assert kw["after"] < kw["before"]
    assert kw["labels"]["run"] == 7


def test_declined_event_when_nothing_to_give():
    seen = []
    with events.strategy_declined.connected_to(lambda s, **kw: seen.append(kw)):
        ToolResults().compact(run(1), target=1, counter=ApproximateCounter())
    assert [kw["reason"] for kw in seen] == ["declined"]


def test_realistic_run_with_tiktoken():
    counter = TiktokenCounter()
    listing = "\n".join(
        f"-rw-r--r-- 1 dev dev {k * 37 % 9000:>5} src/module_{k}.py" for k in range(80)
    )
    msgs = [system("You are a careful coding agent."), user("Why does test_parse fail?")]
    for k in range(6):
        call = ToolCall(f"t{k}", "bash", {"command": f"ls -la src/ | head -{k + 80}"})
        msgs += [assistant(f"Looking at the tree ({k}).", [call]), tool(call.id, listing)]
    before = counter.count_messages(msgs)
    target = before // 2
    result = ToolResults().compact(msgs, target=target, counter=counter)
    assert result.fits and result.after <= target
    validate(result.messages)
    # Just enough: the newest outputs are still whole.
    assert result.messages[-1] == msgs[-1]
    kept = [m for m in result.messages if m.role == "tool" and m.content == listing]
    assert kept, "stopped too late: every result was replaced"
    assert result.after == counter.count_messages(result.messages)


@pytest.mark.parametrize("bad", ["{args.x}", "{name[0][1]}", "{name:d}"])
def test_a_placeholder_that_cannot_format_is_a_value_error(bad) -> None:
    with pytest.raises(ValueError, match="placeholder"):
        ToolResults(placeholder=bad)
