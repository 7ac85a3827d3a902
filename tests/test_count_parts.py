"""A text counted from its parts counts what it counts whole: the counter splits only where
the tokenizer splits, and a placeholder's fixed text is encoded once per run."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import ApproximateCounter, Message, TiktokenCounter, ToolCall
from compaction.messages import assistant, tool
from compaction.strategies.tool_results import DEFAULT_PLACEHOLDER, ToolResults

COUNTER = TiktokenCounter()

# Every kind of character the pre-tokeniser tells apart: letters (also non-ASCII), digits,
# punctuation, apostrophes (contractions), blanks of every kind, line ends, CJK, emoji.
PART = st.text(
    alphabet=st.sampled_from(list("ab Zs'tm 09.,;:()[]{}\"-_/\\\n\r\téü—日本\u00a0\u2028\u3000😀")),
    max_size=40,
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(PART, min_size=1, max_size=6))
def test_a_text_counted_from_its_parts_counts_what_it_counts_whole(parts):
    assert COUNTER.count_parts(parts) == COUNTER.count_text("".join(parts))


@settings(max_examples=500, deadline=None)
@given(st.lists(PART.map(lambda p: " " + p + "x"), min_size=2, max_size=6))
def test_parts_that_meet_at_a_space_after_a_visible_character_count_what_the_whole_does(parts):
    # the case the counter counts part by part: each part but the first starts with a space
    # and each but the last ends with a visible character
    assert COUNTER.count_parts(parts) == COUNTER.count_text("".join(parts))


def test_fixed_parts_are_encoded_once_per_run():
    class Tally(TiktokenCounter):
        def __init__(self) -> None:
            super().__init__()
            self.texts: list[str] = []
            encode = self._encode

            def counted(text: str) -> list[int]:
                self.texts.append(text)
                return encode(text)

            self._encode = counted

    counter = Tally()
    fixed = " The call already ran; its effects stand.]"
    for i in range(5):
        counter.count_parts([f"[Output of Bash{i}()", fixed])
    assert counter.texts.count(fixed) == 1
    counter.forget_texts()  # a run ends: nothing of its texts is kept
    counter.count_parts(["[Output of Bash()", fixed])
    assert counter.texts.count(fixed) == 2


def test_other_counters_count_the_whole_text():
    approx = ApproximateCounter()
    parts = ["[Output of x()", " cleared"]
    assert approx.count_parts(parts) == approx.count_text("".join(parts))


NAMES = st.sampled_from(["Bash", "Read", "a tool", "日本", "x'y"])
ARGS = st.sampled_from(["", "{}", '{"command": "ls -la"}', '{"a": "b c"}', "x " * 80, " "])
OUTPUTS = st.sampled_from(
    [
        "ok\n" * 40,
        "Traceback...\nValueError: bad\nFAILED tests/test_a.py::test_b - x\n" * 5,
        "<returncode>1</returncode>\n" + "line\n" * 30,
        "日本語の出力 " * 30,
    ]
)


@settings(max_examples=200, deadline=None)
@given(NAMES, ARGS, OUTPUTS, st.sampled_from([None, "id 1", " lead", "x\n"]))
def test_a_placeholder_counts_what_the_same_message_counts_when_encoded(name, args, out, mid):
    call = ToolCall("c1", name, args)
    result = tool("c1", out, name=name, id=mid)
    layer = ToolResults()
    counter = TiktokenCounter()
    history = [assistant("", [call]), result, assistant("", [ToolCall("c2", name, args)])]
    history.append(tool("c2", "ok"))
    out_messages = layer.compact(history, target=1, counter=counter).messages
    placeholder = out_messages[1]
    assert placeholder.content.startswith("[Output of ")
    fresh = Message(
        placeholder.role,
        placeholder.content,
        tool_call_id=placeholder.tool_call_id,
        name=placeholder.name,
        meta=dict(placeholder.meta),
        id=placeholder.id,
    )
    assert counter.count(placeholder) == TiktokenCounter().count(fresh)
    assert layer.placeholder == DEFAULT_PLACEHOLDER
