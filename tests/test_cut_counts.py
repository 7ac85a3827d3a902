"""A cut is counted once: the counter learns the count of a cut it just encoded, exactly."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import Message, TiktokenCounter, ToolCall
from compaction.memory.trace import cut_counted, cut_message
from compaction.memory.transcript import mark
from compaction.messages import assistant, system, tool, user
from compaction.strategies.fit import Fit

# Texts of every kind a cut meets: prose, code, whitespace runs, non-ASCII.
TEXT = st.text(
    alphabet=st.sampled_from(list("ab xyz\n\t{}()=.,;:'\"-_0123456789éü—日本")), max_size=600
)
NAME = st.none() | st.sampled_from(["Bash", "Read", "x"])
MEDIA = st.sampled_from(
    [
        {},
        {"anthropic": {"block": {"type": "tool_result", "content": [{"type": "text"}]}}},
        {
            "anthropic": {
                "blocks": [
                    {"type": "document", "source": {"type": "text", "data": "a page of text"}}
                ]
            }
        },
    ]
)


class Tally(TiktokenCounter):
    """A real tiktoken counter that also adds up the characters it encodes (at tiktoken's own
    call: its counts stay tiktoken's, so every shortcut it has stays on)."""

    def __init__(self) -> None:
        super().__init__()
        self.chars = 0
        encode = self._encode

        def tallied(text: str) -> list[int]:
            self.chars += len(text)
            return encode(text)

        self._encode = tallied


@settings(max_examples=80, deadline=None)
@given(content=TEXT, cut=TEXT, name=NAME, meta=MEDIA, args=TEXT)
def test_a_learnt_count_is_the_count(content, cut, name, meta, args):
    if name:
        message = tool("c1", content, name=name, meta=meta)
    else:
        calls = [ToolCall("c1", "Bash", json.dumps({"command": args}))]
        message = assistant(content, calls, meta=meta)
    cut_message_ = mark(
        message.replace(content=cut), strategy="fit", kind="truncated", replaces=[message]
    )
    counter = TiktokenCounter()
    learnt = counter.learn(cut_message_, counter.count_text(cut))
    # what a counter that never saw the cut measures, envelope, name, calls and media included
    assert learnt == TiktokenCounter().count(cut_message_)
    assert counter.count(cut_message_) == learnt  # recorded: counting it again reads nothing


@settings(max_examples=60, deadline=None)
@given(text=TEXT.filter(lambda t: len(t) > 40), want=st.integers(0, 200))
def test_cut_counted_says_what_the_cut_counts(text, want):
    counter = TiktokenCounter()
    found = cut_counted(text, want, "sha1:0", counter)
    if found is not None:
        assert found[1] == TiktokenCounter().count_text(found[0])


def test_a_cut_message_is_counted_without_encoding_it_again():
    big = "".join(f"line {i}: value={i * 7} ok\n" for i in range(3000))
    message = tool("c1", big)
    counter = Tally()
    size = counter.count(message)
    read = counter.chars
    cut = cut_message(message, size // 10, counter, strategy="tool_results")
    assert cut is not None
    spent = counter.chars - read
    assert counter.count(cut) == TiktokenCounter().count(cut) <= size // 10
    assert counter.chars - read == spent  # the count was learnt from the cut's own encoding
    # the cut reads about what it keeps (head and tail windows, a line at each end), not the
    # whole text, nor the kept part a second time to count it
    assert spent < 1.6 * len(cut.content) < len(big)


def test_fit_counts_are_exact_and_each_pass_reads_little():
    outputs = [f"result {i}: " + "data " * (40 + 13 * i) for i in range(6)]
    msgs: list[Message] = [system("s"), user("task " * 30)]
    for i, out in enumerate(outputs):
        call = ToolCall(f"c{i}", "Bash", json.dumps({"command": f"run {i} " * 5}))
        msgs += [assistant(f"step {i} " * 8, [call]), tool(f"c{i}", out, name="Bash")]
    msgs.append(user("and now?"))
    for target in (60, 150, 400, 900):
        counter = Tally()
        result = Fit().compact(msgs, target=target, counter=counter)
        # every count the run learnt is the one a fresh counter gives
        assert result.after == TiktokenCounter().count_messages(result.messages)
        for message in result.messages:
            assert counter.count(message) == TiktokenCounter().count(message)


# Lines of every kind a cut's edges meet: indented code, blank lines, paths, URLs, CRLF,
# non-ASCII, whitespace-only lines, contractions.
LINE = st.sampled_from(
    [
        "def f(x):",
        "    return x + 1",
        "",
        "   ",
        "/usr/lib/python3/site.py",
        "https://example.com/a/b?c=1",
        "Traceback (most recent call last):",
        "  File 'a.py', line 3, in <module>",
        "it's done; we'll see\r",
        "naïve café — 日本語 😀",
        "\t\t}",
        "12345678901234567890",
        "----------------------------------------",
        "\u2028x\x85y\xa0z",
        " /root",
        "'s",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(LINE, min_size=1, max_size=120),
    head=st.integers(0, 400),
    tail=st.integers(0, 400),
    sized=st.booleans(),
    marker=st.sampled_from(["\n[… 5 cut; recall id sha1:0 …]\n", "[…5 cut…]", "", "/x\n"]),
)
def test_a_cut_counted_from_its_windows_is_what_encoding_it_gives(lines, head, tail, sized, marker):
    text = "\n".join(lines)
    counter = TiktokenCounter()
    known = counter.count_text(text) if sized else None
    a = counter.head_end(text, head, tokens=known)
    b = counter.tail_start(text, tail, tokens=known)
    assert a is not None and b is not None
    if a > b:
        return
    counted = counter.count_cut(text, a, b, marker)
    if counted is not None:
        assert counted == TiktokenCounter().count_text(text[:a] + marker + text[b:])


class OldEdges(TiktokenCounter):
    """A counter written against the protocol's edges (no ``tokens=``): still asked right."""

    def head_end(self, text: str, n: int) -> int | None:  # type: ignore[override]
        return super().head_end(text, n)

    def tail_start(self, text: str, n: int) -> int | None:  # type: ignore[override]
        return super().tail_start(text, n)


def test_a_counter_with_edges_of_its_own_is_asked_as_the_protocol_says():
    text = "".join(f"line {i}: value={i * 7} ok\n" for i in range(500))
    found = cut_counted(text, 200, "sha1:0", OldEdges())
    assert found is not None
    assert found[1] == TiktokenCounter().count_text(found[0]) <= 200


ARGS = st.recursive(
    st.text(alphabet=st.sampled_from(list('ab \n"\\/é日0')), max_size=300),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("kxyz"), inner),
    max_leaves=8,
)


@settings(max_examples=120, deadline=None)
@given(
    args=ARGS | st.text(max_size=300).map(lambda t: "{" + t),  # JSON, or not JSON at all
    need=st.integers(0, 300),
    least=st.sampled_from([0, 4, 24]),
    marker=st.sampled_from(["\n[… {cut:,} cut; recall id {ref} …]\n", "[…{cut:,} cut…]", ""]),
)
def test_a_call_cut_to_its_floor_gives_the_same_call_however_much_more_is_needed(
    args, need, least, marker
):
    from compaction.strategies._fit_args import shrink_call

    arguments = args if isinstance(args, str) and args.startswith("{") else json.dumps(args)
    call = ToolCall("c1", "Write", arguments)
    counter = TiktokenCounter()
    shrunk, _, floored = shrink_call(call, need, "sha1:0", counter, marker, least, 0.3)
    if floored:
        # what lets the last resort stop tightening a call once every value is at its floor
        more, _, still = shrink_call(call, need * 2 + 500, "sha1:0", counter, marker, least, 0.3)
        assert more == shrunk and still


def _strings(obj: object, seen: set[int] | None = None) -> list[str]:
    """Every string reachable from ``obj`` through dicts, lists, tuples and attributes."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, str):
        return [obj]
    found: list[str] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            found += _strings(key, seen) + _strings(value, seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for item in obj:
            found += _strings(item, seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        found += _strings(vars(obj), seen)
    return found


def test_a_shared_counter_keeps_no_text_of_a_conversation_after_its_run() -> None:
    # The default counter is one per process, shared by every conversation: what a cut reads
    # twice (a short text's encoding) may be held within a run, never after it.
    from compaction.ladder import default_pipeline

    counter = TiktokenCounter()
    secret = "sk-live-" + "7f3a9c" * 4
    call = ToolCall("c1", "Bash", json.dumps({"command": f"cat {secret}"}))
    messages = [
        user(f"deploy with key {secret} now"),
        assistant("", [call]),
        tool("c1", f"key {secret} ok\n" * 6),
        user(f"again {secret}"),
    ]
    # A target only cuts can reach: the person's words and the newest step are protected.
    target = int(counter.count_messages(messages) * 0.15)
    result = default_pipeline(counter=counter).compact(messages, target=target, counter=counter)
    assert "fit" in [a.strategy for a in result.applied]  # the cuts ran
    assert not [s for s in _strings(counter) if secret in s]
