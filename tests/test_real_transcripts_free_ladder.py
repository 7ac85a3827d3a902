"""The free ladder on real agent sessions (issue 3, "Done when").

On the long Claude Code sessions, ``ToolResults`` then ``SlidingWindow`` must bring each one (and
their concatenation) under 40% of its size while keeping at least 95% of the allowed budget: the
ladder throws away no more than it needs to. And on every real transcript present, SlidingWindow's
output is a conversation a provider accepts, with the system block and the task anchor kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compaction import CompactionPipeline, Message, TiktokenCounter, validate
from compaction.memory.transcript import parse
from compaction.strategies.sliding_window import SlidingWindow

pytestmark = pytest.mark.transcripts

TRANSCRIPTS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "transcripts"
CLAUDE_CODE = TRANSCRIPTS / "claude-code"
#: "Long" sessions: the big logs at the top of the Claude Code folder (megabytes each).
LONG = sorted(p for p in CLAUDE_CODE.glob("*.jsonl") if p.stat().st_size > 1_000_000)
ALL = sorted(
    {
        p
        for pattern in ("**/*.jsonl", "**/*.traj.json", "**/*.traj")
        for p in TRANSCRIPTS.glob(pattern)
    }
)

SIZE_FRACTION = 0.4  # compact to 40% of the original size
KEEP_AT_LEAST = 0.95  # of the target: do not throw away more than needed


def _load(path: Path) -> tuple[Message, ...]:
    formats = pytest.importorskip("compaction.formats")
    return tuple(formats.load(path).messages)


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter()


@pytest.fixture(scope="module")
def long_sessions() -> dict[str, tuple[Message, ...]]:
    if not LONG:
        pytest.skip(f"no long Claude Code sessions at {CLAUDE_CODE}")
    sessions = {p.name: _load(p) for p in LONG}
    sessions["concatenation"] = tuple(m for msgs in sessions.values() for m in msgs)
    return sessions


def _free_ladder(counter: TiktokenCounter, dedupe: bool) -> CompactionPipeline:
    tool_results = pytest.importorskip("compaction.strategies.tool_results")
    pipeline = CompactionPipeline(counter=counter)
    if dedupe:  # the default ladder's free layers start with it
        pipeline.use("dedupe")
    return pipeline.use(tool_results.ToolResults).use(SlidingWindow)


@pytest.mark.parametrize("dedupe", [False, True], ids=["free", "dedupe+free"])
@pytest.mark.parametrize("name", [p.name for p in LONG] + ["concatenation"])
def test_free_ladder_reaches_40_percent_keeping_95_percent_of_budget(
    name, dedupe, long_sessions, counter
):
    messages = long_sessions[name]
    validate(messages)
    before = counter.count_messages(messages)
    target = int(before * SIZE_FRACTION)

    result = _free_ladder(counter, dedupe).compact(messages, target=target)

    out = result.messages
    validate(out)
    assert result.after == counter.count_messages(out)
    assert result.after <= target, f"{name}: {result.after} tokens left, target {target}"
    assert result.after >= KEEP_AT_LEAST * target, (
        f"{name}: {result.after} of {target} tokens kept "
        f"({result.after / target:.1%}): more thrown away than needed"
    )
    t = parse(messages)
    assert out[: t.system_end] == messages[: t.system_end]
    if t.anchor is not None:
        assert messages[t.groups[t.anchor].start] in out


@pytest.fixture(scope="module")
def every_transcript() -> dict[Path, tuple[Message, ...]]:
    if not ALL:
        pytest.skip(f"real transcripts not present at {TRANSCRIPTS}")
    return {path: _load(path) for path in ALL}


@pytest.mark.parametrize("fraction", [0.4, 0.1])
def test_sliding_window_output_is_valid_on_every_real_transcript(
    fraction, counter, every_transcript
):
    checked = 0
    for path, messages in every_transcript.items():
        before = counter.count_messages(messages)
        target = max(1, int(before * fraction))
        result = (
            CompactionPipeline(counter=counter).use(SlidingWindow).compact(messages, target=target)
        )
        out = result.messages
        validate(out)
        t = parse(messages)
        assert out[: t.system_end] == messages[: t.system_end], path.name
        if t.anchor is not None:
            anchor = messages[t.groups[t.anchor].start]
            kept = parse(out)
            assert kept.anchor is not None and out[kept.groups[kept.anchor].start] == anchor
        if not result.fits:
            # still over: then everything that may go went, and asking again changes nothing
            again = (
                CompactionPipeline(counter=counter).use(SlidingWindow).compact(out, target=target)
            )
            assert not again.changed, f"{path.name}: over target with something left to drop"
        checked += 1
    assert checked == len(ALL)
