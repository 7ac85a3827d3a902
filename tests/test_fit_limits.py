"""Two limits (issue 19.4) and the last resort's cuts (19.5, 21.4), on small conversations.

A run aims at its target; protected content (the system prompt, the task, the newest step,
pinned) is cut only down to the hard limit, the system prompt only when it alone is over it.
The real transcripts are checked in test_fit_limits_transcripts.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import Budget, CompactionPipeline, Message, Strategy, ToolCall, validate
from compaction.memory.transcript import provenance
from compaction.messages import assistant, system, tool, user
from compaction.strategies.fit import Fit
from compaction.tokens import ApproximateCounter, TiktokenCounter, TokenCounter
from compaction.trigger import Compactor, default_pipeline

COUNTER = ApproximateCounter()


def step(n: int, output: str) -> list[Message]:
    call = ToolCall(f"c{n}", "bash", {"command": f"cat src/m{n}.py"})
    return [assistant(f"step {n}", [call]), tool(call.id, output, name="bash")]


def cut(message: Message) -> bool:
    return (provenance(message) or {}).get("kind") == "truncated"


# -- the API -----------------------------------------------------------------------------------


class TakesLimit(Strategy):
    """A real layer that asks for the hard limit and records what it was given."""

    name = "takes_limit"

    def __init__(self) -> None:
        self.limits: list[int] = []

    def rewrite(self, messages, *, target, counter, limit):
        self.limits.append(limit)
        return None


class NoLimit(Strategy):
    """A layer written before there were two limits: it must keep working unchanged."""

    name = "no_limit"

    def rewrite(self, messages, *, target):
        return None


def test_the_limit_defaults_to_the_target_and_reaches_only_the_layers_that_take_it():
    layer = TakesLimit()
    pipeline = CompactionPipeline(counter=COUNTER).use(NoLimit()).use(layer)
    msgs = [system("s"), user("x" * 4000)]
    plain = pipeline.compact(msgs, target=500)
    assert plain.limit == 500 and layer.limits == [500]
    wide = pipeline.compact(msgs, target=500, limit=Budget(2000, 200))
    assert wide.limit == 1800 and wide.target == 500 and layer.limits == [500, 1800]


def test_acompact_passes_the_limit_too():
    layer = TakesLimit()
    pipeline = CompactionPipeline(counter=COUNTER).use(layer)
    result = asyncio.run(pipeline.acompact([system("s"), user("x" * 4000)], target=500, limit=900))
    assert result.limit == 900 and layer.limits == [900]


@pytest.mark.parametrize(
    ("limit", "error", "words"),
    [(499, ValueError, "at least the target"), (0, ValueError, "limit"), ("9", TypeError, "limit")],
)
def test_a_limit_below_the_target_or_not_a_size_is_refused_before_any_work(limit, error, words):
    with pytest.raises(error, match=words):
        default_pipeline(counter=COUNTER).compact([user("x")], target=500, limit=limit)


# -- protected content is cut only down to the limit ----------------------------------------------


def test_fit_cuts_protected_content_only_down_to_the_limit():
    task = user("fix the parser, keep the API. " * 60)  # ~450 tokens: over 30% of the target
    msgs = [system("s"), task, *step(0, "old output " * 400), *step(1, "line\n" * 4000)]
    result = default_pipeline(counter=COUNTER).compact(msgs, target=1000, limit=4000)
    out = result.messages
    assert task in out  # verbatim: the request fits the limit with it whole
    assert result.target < result.after <= result.limit
    newest = out[-1]
    assert cut(newest) and newest.content.startswith("line\n") and newest.content.endswith("line\n")
    validate(out)


def test_fit_without_a_limit_still_fits_the_target():
    task = user("fix the parser, keep the API. " * 60)
    msgs = [system("s"), task, *step(0, "line\n" * 4000)]
    result = default_pipeline(counter=COUNTER).compact(msgs, target=1000)
    assert result.fits and result.limit == 1000


@pytest.mark.parametrize("target", [2058, 2080, 2100, 2138])
def test_a_system_prompt_under_the_limit_is_never_cut(target):
    # The measured case: a 2,018-token system prompt, a task and three tool steps.
    counter = TiktokenCounter()
    prompt = system(" ".join(f"rule{i}" for i in range(1009)))
    assert 1990 <= counter.count(prompt) <= 2050 and counter.count(prompt) < target
    msgs = [prompt, user("fix the failing test in src/app.py")]
    for n in range(3):
        msgs += step(n, f"output of step {n} " * 40)
    result = Fit().compact(msgs, target=target, counter=counter)
    assert result.messages[0] == prompt
    validate(result.messages)


def test_a_system_prompt_alone_over_the_limit_is_cut_to_fit():
    msgs = [system("rule " * 4000), user("hi"), *step(0, "ok")]
    result = Fit().compact(msgs, target=300, limit=600, counter=COUNTER)
    assert cut(result.messages[0]) and result.after <= 600


def test_the_newest_tool_output_keeps_its_head_and_tail_through_the_trigger():
    compactor = Compactor(None, 300, counter=COUNTER)
    msgs = [system("s"), user("fix it"), *step(0, "HEAD " + "line\n" * 50_000 + "TAIL")]
    request = compactor.before_call(msgs)
    newest = request[-1]
    assert (
        cut(newest) and newest.content.startswith("HEAD line") and newest.content.endswith("TAIL")
    )
    assert COUNTER.count_messages(request) <= compactor.window
    validate(request)


@settings(max_examples=60, deadline=None)
@given(
    system_words=st.integers(1, 400),
    task_words=st.integers(1, 600),
    outputs=st.lists(st.integers(0, 3000), min_size=1, max_size=4),
    target=st.integers(200, 3000),
    extra=st.integers(0, 3000),
)
def test_protected_content_is_never_cut_while_the_request_fits_the_limit_with_it_whole(
    system_words, task_words, outputs, target, extra
):
    prompt, task = system("rule " * system_words), user("please do it " * task_words)
    msgs = [prompt, task]
    for n, words in enumerate(outputs):
        msgs += step(n, "out " * words)
    limit = target + extra
    result = default_pipeline(counter=COUNTER).compact(msgs, target=target, limit=limit)
    out = result.messages
    validate(out)
    for original, now in ((prompt, out[0]), (task, out[1])):
        if now != original:
            whole = result.after - COUNTER.count(now) + COUNTER.count(original)
            assert whole > limit, "cut although the request fit the limit with it whole"
    if COUNTER.count(prompt) <= limit // 3 and task_words * 3 <= limit // 3:
        assert result.within_limit


# -- Fit is cheap -------------------------------------------------------------------------------


class Tally(ApproximateCounter):
    """A real counter that also adds up how many characters it was asked to count."""

    def __init__(self) -> None:
        super().__init__()
        self.chars = 0

    def count_text(self, text: str) -> int:
        self.chars += len(text)
        return super().count_text(text)


@pytest.mark.parametrize("where", ["content", "arguments"])
def test_fit_finds_its_cut_without_reading_the_message_again(where):
    big = "x = 1\n" * 200_000  # 1.2 MB
    if where == "content":
        msgs: list[Message] = [system("s"), user("task"), *step(0, big)]
    else:
        call = ToolCall("w", "Write", {"file_path": "a.py", "content": big})
        msgs = [system("s"), user("task"), assistant("", [call]), tool("w", "ok")]
    counter = Tally()
    before = counter.count_messages(msgs)  # what the run itself reads once
    read = counter.chars
    result = Fit().compact(msgs, target=2000, counter=counter)
    assert result.fits and result.before == before
    # The cut costs about what is kept, not the 1.2 MB again (it was ~15 times that).
    assert counter.chars - read < len(big) // 2


def test_tiktoken_cuts_land_on_token_boundaries_from_one_encoding():
    counter = TiktokenCounter()
    text = "héllo wörld, naïve café — " * 3000
    for n in (1, 7, 300, 5000):
        head, tail = counter.head_end(text, n), counter.tail_start(text, n)
        assert head is not None and tail is not None
        assert counter.count_text(text[:head]) <= n and counter.count_text(text[tail:]) <= n + 1


# -- arguments Fit could not cut --------------------------------------------------------------


BIG = "x = 1\n" * 150_000


@pytest.mark.parametrize(
    "arguments",
    [
        json.dumps({"file_path": "a.py", "edits": [{"old_string": "a", "new_string": BIG}]}),
        json.dumps({f"k{i}": "v" * 50_000 for i in range(100)}),
        json.dumps({"file_path": "a.py", "patch": {"hunks": [[BIG[:400_000], BIG[:300_000]]]}}),
        "{" + BIG,
    ],
    ids=["multiedit", "100-keys", "nested-lists", "not-json"],
)
def test_fit_cuts_arguments_wherever_their_bulk_is(arguments):
    call = ToolCall("c1", "MultiEdit", arguments)
    msgs = [system("s"), user("task"), assistant("", [call]), tool("c1", "ok", name="MultiEdit")]
    result = default_pipeline(counter=COUNTER).compact(msgs, target=4000)
    assert result.fits
    out = result.messages[2].tool_calls[0].arguments
    validate(result.messages)
    if arguments.startswith('{"'):
        before, after = json.loads(arguments), json.loads(out)  # still valid JSON
        assert _shape(before) == _shape(after)  # same keys, same list lengths
    else:
        assert out.startswith("{x = 1") and out.endswith("x = 1\n")


def _shape(value: object) -> object:
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


def _counts(messages: Sequence[Message], counter: TokenCounter) -> list[int]:
    return [counter.count(m) for m in messages]


def test_a_cut_note_stays_a_note_and_never_becomes_the_task():
    from compaction.memory.transcript import is_note, parse
    from compaction.strategies.sliding_window import SlidingWindow

    msgs = [system("s"), user("demo " * 10, meta={"synthetic": True}), user("the real task")]
    for n in range(6):
        msgs += step(n, f"Traceback ...\nValueError: {n}\n" + "src/app.py line\n" * 60)
    dropped = SlidingWindow().compact(msgs, target=600, counter=COUNTER).messages
    assert any(is_note(m) for m in dropped)
    out = Fit().compact(dropped, target=120, counter=COUNTER).messages
    t = parse(out)
    assert out[t.groups[t.task].start].content.startswith("the real task")
    assert [m for m in out if is_note(m)]  # the note, cut or not, is still a note


@pytest.mark.parametrize("counter", [ApproximateCounter(), TiktokenCounter()], ids=repr)
@pytest.mark.parametrize("with_task", [True, False])
def test_a_group_no_pass_can_bring_near_its_aim_ends_emptied_and_recorded(counter, with_task):
    # Old tool outputs are all a pass may cut toward the target, and even emptied they leave
    # the request far over it: each ends with its text empty, its cut recorded (the size of
    # the original, the recall id), while the newest output keeps its head, tail and marker.
    outputs = [f"line of output {k}\n" * (8 + 3 * k) for k in range(4)]
    msgs: list[Message] = [system("You are a careful agent. " * 40)]
    if with_task:
        msgs.append(user("Fix the failing build, then report. " * 300))
    for k, text in enumerate(outputs):
        msgs += step(k, text)
    msgs += step(9, "newest output line\n" * 400)
    total = counter.count_messages(msgs)
    result = Fit().compact(msgs, target=total // 4, counter=counter, limit=total // 4)
    by_id = {m.tool_call_id: m for m in result.messages if m.role == "tool"}
    for k, text in enumerate(outputs):
        old = by_id[f"c{k}"]
        assert old.content == "" and cut(old)
        assert provenance(old)["original_chars"] == len(text)
        assert provenance(old)["replaces"]
    newest = by_id["c9"]
    assert cut(newest) and "recall id" in newest.content
    assert newest.content.startswith("newest output line")
    validate(result.messages)
