"""Messages, transcript grouping and validation: the shapes every strategy relies on."""

from __future__ import annotations

import pickle

import attrs
import pytest

from compaction import InvalidConversationError, Message, ToolCall, validate
from compaction.memory.transcript import is_note, mark, message_ref, parse, provenance
from compaction.messages import assistant, system, tool, user
from compaction.validate import problems


def call(i: str, name: str = "bash") -> ToolCall:
    return ToolCall(i, name, '{"command": "ls"}')


class TestMessage:
    def test_frozen(self) -> None:
        m = user("hi")
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            m.content = "x"  # type: ignore[misc]

    @pytest.mark.parametrize("role", ["developer", "bot", "", "USER"])
    def test_unknown_role_names_the_field(self, role: str) -> None:
        with pytest.raises(ValueError, match="Message.role"):
            Message(role, "x")

    def test_developer_role_hints_at_mapping(self) -> None:
        with pytest.raises(ValueError, match="developer.*system"):
            Message("developer", "x")

    def test_tool_message_needs_tool_call_id(self) -> None:
        with pytest.raises(ValueError, match="tool_call_id"):
            Message("tool", "out")

    def test_tool_call_id_only_on_tool_messages(self) -> None:
        with pytest.raises(ValueError, match="tool_call_id"):
            Message("user", "x", tool_call_id="c1")

    def test_tool_calls_only_on_assistant(self) -> None:
        with pytest.raises(ValueError, match="tool_calls"):
            Message("user", "x", tool_calls=(call("c1"),))

    @pytest.mark.parametrize("content", [b"bytes", 3, [{"type": "text", "text": "x"}]])
    def test_non_text_content_is_a_type_error(self, content: object) -> None:
        with pytest.raises(TypeError, match="Message.content"):
            Message("user", content)  # type: ignore[arg-type]

    def test_none_content_is_empty(self) -> None:
        assert Message("assistant", None).content == ""  # type: ignore[arg-type]

    def test_bad_tool_call_entries(self) -> None:
        with pytest.raises(TypeError, match=r"tool_calls\[0\]"):
            Message("assistant", "", tool_calls=({"id": "x"},))  # type: ignore[arg-type]

    @pytest.mark.parametrize("tokens", [-1, 1.5, True])
    def test_bad_tokens(self, tokens: object) -> None:
        with pytest.raises(ValueError, match="tokens"):
            Message("user", "x", tokens=tokens)  # type: ignore[arg-type]

    def test_meta_is_copied(self) -> None:
        meta = {"a": 1}
        m = user("x", meta=meta)
        meta["a"] = 2
        assert m.meta["a"] == 1

    def test_replace_forgets_known_tokens(self) -> None:
        m = user("x", tokens=10)
        assert m.replace(content="longer text").tokens is None
        assert m.replace(content="y", tokens=3).tokens == 3
        assert m.with_meta(k=1).tokens == 10

    def test_hashable_and_picklable(self) -> None:
        m = assistant("a", [call("c1")], meta={"x": [1]})
        assert hash(m) == hash(assistant("a", [call("c1")]))
        assert pickle.loads(pickle.dumps(m)) == m

    def test_tool_call_arguments_from_mapping(self) -> None:
        assert ToolCall("c", "f", {"a": 1}).arguments == '{"a": 1}'
        with pytest.raises(TypeError, match="arguments"):
            ToolCall("c", "f", 3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="id"):
            ToolCall("", "f")

    def test_constructors(self) -> None:
        assert system("s").role == "system"
        t = tool("c1", "out", name="bash")
        assert (t.role, t.tool_call_id, t.name) == ("tool", "c1", "bash")


def conversation() -> list[Message]:
    return [
        system("sys"),
        user("first task"),
        assistant("", [call("a"), call("b")]),
        tool("a", "A"),
        tool("b", "B"),
        assistant("done"),
        user("second task"),
        assistant("", [call("c")]),
        tool("c", "C"),
    ]


class TestTranscript:
    def test_groups_and_anchor(self) -> None:
        t = parse(conversation())
        assert t.system_end == 1
        assert [(g.start, g.end, g.kind) for g in t.groups] == [
            (1, 2, "user"),
            (2, 5, "step"),
            (5, 6, "assistant"),
            (6, 7, "user"),
            (7, 9, "step"),
        ]
        assert t.groups[t.anchor].start == 6
        assert [len(u) for u in t.turns()] == [3]
        assert [g.start for g in t.current] == [7]

    def test_a_note_is_never_the_anchor(self) -> None:
        msgs = conversation()
        note = mark(
            user("[earlier messages removed]"), strategy="x", kind="note", replaces=msgs[1:6]
        )
        t = parse([msgs[0], note, *msgs[6:]])
        assert t.groups[t.anchor].start == 2
        # the newest real user message is the anchor even when a note comes after it
        t2 = parse([msgs[0], msgs[1], note])
        assert t2.groups[t2.anchor].start == 1

    def test_a_synthetic_user_message_is_never_the_anchor(self) -> None:
        reminder = user("<system-reminder>stay on task</system-reminder>", meta={"synthetic": True})
        t = parse([user("the real request"), reminder])
        assert t.anchor == 0
        assert [g.kind for g in t.groups] == ["user", "user"]
        assert parse([reminder]).anchor is None

    def test_text_that_looks_like_a_note_is_not_one(self) -> None:
        fake = tool("c", "[12 earlier messages were removed to fit the context window]")
        real_looking_user = user("[12 earlier messages were removed to fit the context window]")
        assert not is_note(fake)
        assert not is_note(real_looking_user)
        t = parse([real_looking_user])
        assert t.anchor == 0

    def test_provenance_folds_in_older_notes(self) -> None:
        msgs = conversation()
        first = mark(user("n1"), strategy="s", kind="note", replaces=msgs[1:3])
        second = mark(user("n2"), strategy="s", kind="note", replaces=[first, msgs[3]])
        refs = provenance(second)["replaces"]
        assert refs == (message_ref(msgs[1]), message_ref(msgs[2]), message_ref(msgs[3]))

    def test_provenance_of_a_rewrite_over_a_rewrite_names_the_original(self) -> None:
        original = tool("c1", "x" * 500)
        truncated = mark(
            original.replace(content="x" * 50), strategy="t", kind="truncated", replaces=[original]
        )
        placeholder = mark(
            truncated.replace(content="[cleared]"),
            strategy="p",
            kind="placeholder",
            replaces=[truncated],
        )
        assert provenance(placeholder)["replaces"] == (message_ref(original),)

    def test_message_ref_prefers_id(self) -> None:
        assert message_ref(user("x", id="m-1")) == "m-1"
        assert message_ref(user("x")) == message_ref(user("x"))
        assert message_ref(user("x")) != message_ref(user("y"))

    def test_orphans_are_their_own_group(self) -> None:
        t = parse([user("u"), tool("zz", "orphan")])
        assert t.groups[-1].kind == "orphan"


class TestValidate:
    def test_valid(self) -> None:
        validate(conversation())
        validate([])

    def test_orphan_result(self) -> None:
        msgs = [user("u"), tool("x", "out")]
        with pytest.raises(InvalidConversationError) as info:
            validate(msgs)
        assert info.value.index == 1

    def test_unanswered_call(self) -> None:
        msgs = [user("u"), assistant("", [call("a"), call("b")]), tool("a", "A")]
        with pytest.raises(InvalidConversationError, match="'b'.*unanswered"):
            validate(msgs)

    def test_result_after_a_user_message(self) -> None:
        msgs = [user("u"), assistant("", [call("a")]), user("hey"), tool("a", "A")]
        found = problems(msgs)
        assert [p.index for p in found] == [1, 3]

    def test_system_in_the_middle(self) -> None:
        with pytest.raises(InvalidConversationError, match="system") as info:
            validate([system("s"), user("u"), system("late")])
        assert info.value.index == 2

    def test_answered_twice_and_wrong_id(self) -> None:
        msgs = [user("u"), assistant("", [call("a")]), tool("a", "A"), tool("a", "again")]
        assert "twice" in str(problems(msgs)[0])
        msgs = [user("u"), assistant("", [call("a")]), tool("a", "A"), tool("q", "Q")]
        assert "answers no call" in str(problems(msgs)[0])
