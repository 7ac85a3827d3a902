"""Replay: what an agent would have sent, call by call, with a compactor in front of it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from compaction.memory.transcript import mark, parse
from compaction.messages import Message, ToolCall, assistant, system, tool, user
from compaction.pipeline import CompactionPipeline
from compaction.replay import ReplayRecord, ReplayTotals, replay
from compaction.strategy import Strategy
from compaction.tokens import ApproximateCounter, TiktokenCounter, TokenCounter
from compaction.trigger import Compactor
from compaction.validate import validate

from .conftest import TRANSCRIPTS, transcript_files


class DropOldest(Strategy):
    """Drops the oldest groups (system block and newest group kept) until under target."""

    name = "drop_oldest"

    def rewrite(
        self, messages: tuple[Message, ...], *, target: int, counter: TokenCounter
    ) -> Sequence[Message] | None:
        t = parse(messages)
        groups = list(t.groups)
        note = mark(user("[older messages removed]"), strategy=self.name, kind="note")
        total = counter.count_messages(messages) + counter.count(note)
        dropped = 0
        while len(groups) > 1 and total > target:
            g = groups.pop(0)
            total -= counter.count_messages(messages[g.start : g.end])
            dropped += 1
        if not dropped:
            return None
        rest = (m for g in groups for m in messages[g.start : g.end])
        return (*messages[: t.system_end], note, *rest)


def agent_transcript(steps: int, size: int = 80) -> list[Message]:
    messages: list[Message] = [system("you are an agent"), user("fix the bug")]
    for i in range(steps):
        call = ToolCall(f"c{i}", "run", {"cmd": f"step {i}"})
        messages.append(assistant(f"trying {i}", [call]))
        messages.append(tool(call.id, f"{i} " + "out " * size, name="run"))
    messages.append(assistant("done"))
    return messages


def new_compactor(window: int = 1500, **kwargs) -> Compactor:
    counter = ApproximateCounter()
    pipeline = CompactionPipeline(counter=counter).use(DropOldest())
    return Compactor(pipeline, window, counter=counter, **kwargs)


def test_replay_is_what_an_agent_loop_would_have_sent():
    transcript = agent_transcript(30)
    records = list(replay(transcript, new_compactor(), keep_requests=True))
    # the same compactor settings, driven by a plain agent loop over its growing list
    agent = new_compactor()
    expected: list[tuple[Message, ...]] = []
    for i, m in enumerate(transcript):
        if m.role == "assistant":
            expected.append(tuple(agent.before_call(list(transcript[:i]))))
    assert [r.request for r in records] == expected
    assert [r.index for r in records] == [
        i for i, m in enumerate(transcript) if m.role == "assistant"
    ]
    assert [r.call for r in records] == list(range(len(records)))


def test_records_measure_size_savings_and_cache_reuse():
    comp = new_compactor()
    counter = comp.counter
    transcript = agent_transcript(30)
    records = list(replay(transcript, comp, keep_requests=True))
    assert any(r.compacted for r in records)
    previous: tuple[Message, ...] | None = None
    for r in records:
        assert r.request is not None
        validate(r.request)
        assert r.messages == len(r.request)
        assert r.tokens_sent == counter.count_messages(r.request)
        assert r.tokens_sent <= comp.window
        # the prefix shared with the previous request, counted the slow way
        shared = 0
        if previous is not None:
            for a, b in zip(r.request, previous, strict=False):
                if a != b:
                    break
                shared += counter.count(a)
        assert r.prefix_tokens == shared
        assert r.prefix_share == pytest.approx(shared / r.tokens_sent)
        if r.compacted:
            assert r.strategies == ("drop_oldest",)
            assert r.tokens_saved > 0
            assert r.estimate >= comp.threshold
            assert r.prefix_share < 1
        else:
            assert r.strategies == () and r.tokens_saved == 0
            if previous is not None:
                assert r.request[: len(previous)] == previous  # cacheable
        previous = r.request
    totals = ReplayTotals.of(records)
    assert totals.calls == len(records)
    assert totals.compactions == sum(r.compacted for r in records)
    assert totals.strategies == {"drop_oldest": totals.compactions}
    assert totals.max_tokens_sent == max(r.tokens_sent for r in records)
    assert 0 < totals.cache_share < 1


def test_tool_schemas_are_part_of_every_request_and_its_cached_prefix():
    tools = [{"type": "function", "function": {"name": "run", "description": "run " * 40}}]
    comp = new_compactor(tools=tools)
    schema = comp.counter.count_tools(tools)
    records = list(replay(agent_transcript(10), comp, keep_requests=True))
    for r in records:
        assert r.request is not None
        assert r.tokens_sent == comp.counter.count_messages(r.request) + schema
    assert records[0].prefix_tokens == 0
    assert all(r.prefix_tokens >= schema for r in records[1:])


def test_consecutive_assistant_messages_are_one_call():
    transcript = [
        user("hi"),
        assistant("thinking"),
        assistant("", [ToolCall("a", "ls")]),
        tool("a", "files"),
        assistant("done"),
    ]
    records = list(replay(transcript, new_compactor()))
    assert [r.index for r in records] == [1, 4]


def test_replay_counts_each_message_once():
    """Linear: every message is encoded once, whatever the number of calls."""
    counter = ApproximateCounter()
    comp = Compactor(CompactionPipeline(counter=counter).use(DropOldest()), 2000, counter=counter)
    transcript = agent_transcript(200, size=20)
    records = list(replay(transcript, comp))
    made = sum(len(r.strategies) for r in records)  # a DropOldest run writes one note
    assert comp.stats.calls == len(records) == 201
    assert counter.encoded <= len(transcript) + made


def test_replay_rejects_what_is_not_a_message():
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        list(replay([user("a"), {"role": "assistant"}], new_compactor()))


def test_an_empty_transcript_has_no_calls():
    assert list(replay([], new_compactor())) == []
    assert ReplayTotals.of([]).calls == 0


def test_record_fields():
    (first,) = list(replay([user("q"), assistant("a")], new_compactor()))
    assert isinstance(first, ReplayRecord)
    assert (first.call, first.index, first.messages, first.compacted) == (0, 1, 1, False)
    assert first.request is None


# -- every real transcript ---------------------------------------------------------------------

FILES = transcript_files()


def _largest_request(messages: Sequence[Message], counter: TokenCounter) -> int:
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=0)
    return counter.count_messages(messages[:last])


@pytest.fixture(scope="module")
def tiktoken_counter() -> TiktokenCounter:
    return TiktokenCounter()


@pytest.mark.transcripts
@pytest.mark.parametrize(
    "path", FILES, ids=[str(p.relative_to(TRANSCRIPTS)) for p in FILES] or None
)
def test_replay_real_transcript_within_half_its_size(path, tiktoken_counter):
    formats = pytest.importorskip("compaction.formats")
    tool_results = pytest.importorskip("compaction.strategies.tool_results")
    sliding_window = pytest.importorskip("compaction.strategies.sliding_window")
    truncate = pytest.importorskip("compaction.strategies.truncate")
    counter = tiktoken_counter
    messages = formats.load(path).messages
    # The transcript's size as an agent sends it: everything before its last model answer.
    # (A log whose bulk is the final answer would otherwise never fill half a window.)
    size = _largest_request(messages, counter)
    if size < 200:
        pytest.skip(f"{path.name}: its largest request is {size} tokens, too small to compact")
    window = size // 2
    pipeline = (
        CompactionPipeline(counter=counter)
        .use(tool_results.ToolResults)
        .use(sliding_window.SlidingWindow)
        # the last resort, for a system prompt or task bigger than the window on its own
        .use(
            truncate.Truncate(
                max_tokens=max(window // 10, 64),
                roles=("system", "user", "assistant", "tool"),
                include_anchor=True,
            )
        )
    )
    comp = Compactor(pipeline, window, counter=counter)
    records = list(replay(messages, comp, keep_requests=True))
    assert records, "a transcript with a model answer has at least one call"
    for r in records:
        assert r.request is not None
        assert r.tokens_sent <= window, f"call {r.call} sent {r.tokens_sent} > {window}"
        validate(r.request)
    assert any(r.compacted for r in records)
    assert comp.stats.failures == 0
