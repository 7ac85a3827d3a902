"""Truncate: single messages too long to keep whole are cut, the cut marked, oldest first."""

from __future__ import annotations

import copy
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import events
from compaction.memory.transcript import message_ref, parse, provenance
from compaction.messages import Message, ToolCall, assistant, system, tool, user
from compaction.pipeline import CompactionPipeline
from compaction.registry import registry
from compaction.strategies.truncate import DEFAULT_MARKER, Truncate
from compaction.tokens import ApproximateCounter, TiktokenCounter
from compaction.validate import InvalidConversationError, validate

CUT = re.compile(r"\[… ([\d,]+) characters cut …\]")


def cut_of(text: str) -> int:
    """The number of characters the marker in ``text`` says were cut."""
    found = CUT.search(text)
    assert found, f"no marker in {text[:80]!r}…"
    return int(found.group(1).replace(",", ""))


def truncated(messages) -> list[int]:
    return [i for i, m in enumerate(messages) if (provenance(m) or {}).get("kind") == "truncated"]


def numbered(n: int) -> str:
    """Text whose every position is recognisable, so what was kept can be checked."""
    return "".join(chr(ord("a") + k % 26) for k in range(n))


# -- seed 001: a 600-character assistant response is truncated to 500 characters --------------


def test_seed_001_600_character_response_is_truncated_to_500():
    reply = assistant(numbered(600))
    out = Truncate(max_chars=500).truncate_message(reply)
    assert len(out.content) == 500
    kept = provenance(out)["kept_chars"]
    assert out.content.startswith(reply.content[:kept])
    assert cut_of(out.content) == 600 - kept
    assert provenance(out)["original_chars"] == 600


def test_a_message_that_fits_is_returned_as_is():
    reply = assistant("x" * 500)
    assert Truncate(max_chars=500).truncate_message(reply) is reply


@pytest.mark.parametrize("keep", ["head", "tail", "both"])
def test_keep_modes_keep_the_right_part(keep):
    text = numbered(3000)
    out = Truncate(max_chars=400, keep=keep).truncate_message(tool("c", text)).content
    assert len(out) == 400
    record_cut = cut_of(out)
    kept = 3000 - record_cut
    if keep == "head":
        assert out.startswith(text[:kept]) and not out.startswith(text[: kept + 1])
    elif keep == "tail":
        assert out.endswith(text[-kept:])
    else:
        head, tail = kept - kept // 2, kept // 2
        assert out.startswith(text[:head]) and out.endswith(text[-tail:])
        assert CUT.search(out).start() > 0 and CUT.search(out).end() < len(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 30_000),
    limit=st.integers(40, 5_000),
    keep=st.sampled_from(["head", "tail", "both"]),
)
def test_the_result_never_exceeds_the_character_limit(n, limit, keep):
    text = numbered(n)
    message = Truncate(max_chars=limit, keep=keep).truncate_message(user(text))
    out = message.content
    assert len(out) <= limit
    if n <= limit:
        assert out == text
    else:
        kept = provenance(message)["kept_chars"]
        assert cut_of(out) == n - kept
        # As much kept as the limit allows (a shorter count in the marker may leave 1-2 over).
        assert len(out) >= limit - 2


def test_custom_marker():
    text = "0123456789" * 4
    out = Truncate(max_chars=20, marker="~{cut}~").truncate_message(user(text))
    assert out.content == text[:16] + "~24~"


# -- constructor --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, ValueError, "exactly one"),
        ({"max_chars": 500, "max_tokens": 100}, ValueError, "exactly one"),
        ({"max_chars": 0}, ValueError, "positive"),
        ({"max_tokens": -5}, ValueError, "positive"),
        ({"max_chars": True}, TypeError, "int"),
        ({"max_chars": 500, "roles": ["robot"]}, ValueError, "robot"),
        ({"max_chars": 500, "roles": []}, ValueError, "at least one"),
        ({"max_chars": 500, "keep": "middle"}, ValueError, "keep"),
        ({"max_chars": 500, "marker": "[{cuts}]"}, ValueError, "marker"),
        ({"max_chars": 20}, ValueError, "no room"),
    ],
)
def test_bad_options_are_refused_with_a_clear_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        Truncate(**kwargs)


def test_default_roles_do_not_include_system():
    assert "system" not in Truncate(max_chars=500).roles


# -- the ladder layer -----------------------------------------------------------------------------


def conversation() -> list[Message]:
    call = ToolCall("c1", "bash", '{"command": "pytest"}')
    return [
        system("S" * 2000),  # 0: never touched by default
        user("U" * 2000),  # 1: an old request
        assistant("A" * 2000, [call]),  # 2
        tool("c1", "T" * 2000, name="bash"),  # 3
        assistant("B" * 2000),  # 4
        user("N" * 2000),  # 5: the task anchor
        assistant("C" * 2000),  # 6
    ]


def test_under_target_nothing_is_asked():
    counter = ApproximateCounter()
    msgs = conversation()
    result = Truncate(max_chars=500).compact(
        msgs, target=counter.count_messages(msgs), counter=counter
    )
    assert result.messages == tuple(msgs) and result.applied == () and result.declined == ()


def test_oldest_first_and_stops_at_target():
    counter = ApproximateCounter()
    msgs = conversation()
    strategy = Truncate(max_chars=500)
    before = counter.count_messages(msgs)
    saving_1 = counter.count(msgs[1]) - counter.count(strategy.truncate_message(msgs[1]))
    result = strategy.compact(msgs, target=before - saving_1, counter=counter)
    assert truncated(result.messages) == [1]
    result = strategy.compact(msgs, target=before - saving_1 - 1, counter=counter)
    assert truncated(result.messages) == [1, 2]
    assert result.after == counter.count_messages(result.messages)


def test_system_and_anchor_are_never_touched_by_default():
    counter = ApproximateCounter()
    msgs = conversation()
    result = Truncate(max_chars=500).compact(msgs, target=1, counter=counter)
    assert truncated(result.messages) == [1, 2, 3, 4, 6]
    assert result.messages[0] == msgs[0] and result.messages[5] == msgs[5]
    anchor = parse(result.messages)
    assert result.messages[anchor.groups[anchor.anchor].start] == msgs[5]
    validate(result.messages)


def test_anchor_and_system_only_when_asked():
    msgs = conversation()
    with_anchor = Truncate(max_chars=500, include_anchor=True).apply(
        msgs, 1, counter=ApproximateCounter()
    )
    assert truncated(with_anchor) == [1, 2, 3, 4, 5, 6]
    everything = Truncate(
        max_chars=500, include_anchor=True, roles=("system", "user", "assistant", "tool")
    ).apply(msgs, 1, counter=ApproximateCounter())
    assert truncated(everything) == [0, 1, 2, 3, 4, 5, 6]


def test_roles_limit_what_is_touched():
    out = Truncate(max_chars=500, roles=["tool"]).apply(
        conversation(), 1, counter=ApproximateCounter()
    )
    assert truncated(out) == [3]
    out = Truncate(max_chars=500, roles="assistant").apply(
        conversation(), 1, counter=ApproximateCounter()
    )
    assert truncated(out) == [2, 4, 6]


def test_tool_pairs_survive_a_cut():
    out = Truncate(max_chars=500).apply(conversation(), 1, counter=ApproximateCounter())
    assert out[2].tool_calls == conversation()[2].tool_calls
    assert out[3].tool_call_id == "c1" and out[3].name == "bash"
    validate(out)


def test_nothing_to_cut_declines():
    msgs = [system("S" * 5000), user("short"), assistant("also short"), user("N" * 5000)]
    result = Truncate(max_chars=500).compact(msgs, target=1, counter=ApproximateCounter())
    assert not result.changed
    assert [d.reason for d in result.declined] == ["declined"]


def test_exact_limit_is_not_cut():
    msgs = [user("x" * 500), assistant("y" * 500), user("go")]
    result = Truncate(max_chars=500).compact(msgs, target=1, counter=ApproximateCounter())
    assert not result.changed
    msgs[0] = user("x" * 501)
    out = Truncate(max_chars=500).apply(msgs, 1, counter=ApproximateCounter())
    assert truncated(out) == [0] and len(out[0].content) == 500


def test_notes_and_placeholders_are_left_alone():
    from compaction.memory.transcript import mark

    note = mark(user("N" * 3000), strategy="sliding_window", kind="note")
    placeholder = mark(tool("c", "P" * 3000), strategy="tool_results", kind="placeholder")
    msgs = [note, assistant("", [ToolCall("c", "bash")]), placeholder, user("go")]
    result = Truncate(max_chars=500).compact(msgs, target=1, counter=ApproximateCounter())
    assert not result.changed


def test_provenance_and_a_second_tighter_cut_keep_the_original_size():
    msgs = [user("x" * 3000, id="m1"), user("go")]
    once = Truncate(max_chars=1000).apply(msgs, 1, counter=ApproximateCounter())
    record = provenance(once[0])
    assert record["strategy"] == "truncate" and record["kind"] == "truncated"
    assert record["replaces"] == (message_ref(msgs[0]),) == ("m1",)
    assert record["original_chars"] == 3000 and record["kept"] == "head"
    twice = Truncate(max_chars=500).apply(once, 1, counter=ApproximateCounter())
    assert len(twice[0].content) == 500
    assert provenance(twice[0])["original_chars"] == 3000


def test_input_is_not_modified():
    msgs = tuple(conversation())
    snapshot = copy.deepcopy(msgs)
    Truncate(max_chars=500).apply(msgs, 1, counter=ApproximateCounter())
    assert msgs == snapshot


def test_invalid_input_raises_naming_the_first_offending_message():
    msgs = [user("x" * 3000), tool("ghost", "y" * 3000), user("go")]
    with pytest.raises(InvalidConversationError) as info:
        Truncate(max_chars=500).apply(msgs, 1, counter=ApproximateCounter())
    assert info.value.index == 1
    with pytest.raises(InvalidConversationError) as info:
        Truncate(max_chars=500).rewrite(tuple(msgs), target=1, counter=ApproximateCounter())
    assert info.value.index == 1
    with pytest.raises(InvalidConversationError):
        Truncate(max_chars=500).limit(msgs)


# -- token limits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("keep", ["head", "tail", "both"])
def test_max_tokens_with_tiktoken(keep):
    counter = TiktokenCounter()
    text = "\n".join(
        f"FAILED tests/test_mod_{k}.py::test_case_{k} - AssertionError" for k in range(400)
    )
    msg = tool("c", text, name="bash")
    out = Truncate(max_tokens=300, keep=keep).truncate_message(msg, counter=counter)
    assert counter.count(msg) > 300 >= counter.count(out)
    # Not cut needlessly far: most of the allowance is used.
    assert counter.count(out) >= 250
    assert CUT.search(out.content)


def test_max_tokens_counts_the_whole_message_but_cuts_only_content():
    counter = ApproximateCounter()
    call = ToolCall("c", "write_file", {"path": "a.py", "content": "z" * 400})
    msg = assistant("w" * 4000, [call])
    out = Truncate(max_tokens=300).truncate_message(msg, counter=counter)
    assert out.tool_calls == msg.tool_calls
    assert counter.count(out) <= 300
    # Tool calls alone over the limit: nothing the content can give fits it, so it is left.
    too_big = assistant("w" * 4000, [ToolCall("c", "write_file", {"content": "z" * 4000})])
    assert Truncate(max_tokens=300).truncate_message(too_big, counter=counter) is too_big


def test_max_tokens_ladder_uses_the_runs_counter():
    counter = TiktokenCounter()
    msgs = [user("word " * 3000), assistant("more " * 3000), user("go")]
    out = Truncate(max_tokens=200).apply(msgs, 1, counter=counter)
    assert truncated(out) == [0, 1]
    assert all(counter.count(m) <= 200 for m in out[:2])


# -- as a plain per-message limit ---------------------------------------------------------------


def test_limit_applies_whatever_the_target():
    msgs = conversation()
    out = Truncate(max_chars=500).limit(msgs)
    assert truncated(out) == [1, 2, 3, 4, 6]
    assert all(len(m.content) <= 500 for i, m in enumerate(out) if i not in (0, 5))


def test_truncate_message_ignores_roles_and_anchor():
    # The caller chose the message ("truncate the assistant's response to 500").
    out = Truncate(max_chars=500, roles=["tool"]).truncate_message(system("s" * 900))
    assert len(out.content) == 500


def test_truncate_message_rejects_non_messages():
    with pytest.raises(TypeError, match="Message"):
        Truncate(max_chars=500).truncate_message("text")


# -- protocol, registry, events ------------------------------------------------------------


def test_explain_capabilities_registry():
    strategy = Truncate(max_chars=500, keep="tail", roles=["tool", "assistant"])
    text = strategy.explain()
    assert text.endswith(".") and text.count(".") == 1
    for setting in ("500 characters", "tail", "assistant", "tool", "anchor"):
        assert setting in text
    assert "tokens" in Truncate(max_tokens=100).explain()
    assert Truncate.name == "truncate"
    assert Truncate.capabilities.model_call is False and Truncate.capabilities.lossless is False
    built = registry.create("truncate", max_chars=700)
    assert isinstance(built, Truncate) and built.max_chars == 700
    assert DEFAULT_MARKER.format(cut=1234) == "\n[… 1,234 characters cut …]\n"


def test_strategy_applied_event():
    seen = []
    with events.strategy_applied.connected_to(lambda sender, **kw: seen.append(kw)):
        result = (
            CompactionPipeline()
            .use("truncate", max_chars=500)
            .compact(conversation(), target=1, counter=ApproximateCounter())
        )
    assert [(kw["name"], kw["before"], kw["after"]) for kw in seen] == [
        ("truncate", result.before, result.after)
    ]


def test_can_handle_says_whether_any_message_is_over_the_limit():
    msgs = [system("s" * 900), user("short"), assistant("a" * 300), user("task " + "t" * 900)]
    assert Truncate(max_chars=100).can_handle(msgs) == 1.0
    assert Truncate(max_chars=400).can_handle(msgs) == 0.0  # system and the anchor are not cut
    assert Truncate(max_chars=400, include_anchor=True).can_handle(msgs) == 1.0
    assert Truncate(max_tokens=50).can_handle(msgs) == 1.0
    assert Truncate(max_tokens=500).can_handle(msgs) == 0.0
    assert Truncate(max_chars=100).can_handle([]) == 0.0
