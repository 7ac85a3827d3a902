"""Summary on every real transcript in ../shared/data/transcripts (skipped when absent).

Two promises: the free ladder plus the Summary terminal shrinks each transcript to a quarter
of its size (as far as the rules allow: the system block, the task anchor and the newest step
are never given up), and a summary keeps every file path of the messages it replaced.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from compaction import CompactionPipeline, validate
from compaction.strategies.summary import Summary
from compaction.summarizers import ExtractiveSummarizer
from compaction.tokens import ApproximateCounter
from compaction.transcript import is_note, message_ref, parse, provenance

from .conftest import transcript_files

pytestmark = pytest.mark.transcripts

FILES = transcript_files()
IDS = [str(p.relative_to(p.parents[1])) for p in FILES]

# Independent of the summariser's own tokenizer, and simpler: a run of word characters, dots,
# dashes and slashes, holding at least one slash, ending in a file extension.
FILE_PATH = re.compile(r"(?:[\w.-]*/)+[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7}")

#: What the notes and summaries standing in for dropped messages may cost, in tokens.
SLACK = 300


def _load(path):
    formats = pytest.importorskip("compaction.formats")
    return formats.load(path).messages


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _texts(message) -> list[str]:
    """The text a message holds: its content and its tool calls' argument values."""
    out = [message.content]
    for call in message.tool_calls:
        try:
            out += _strings(json.loads(call.arguments))
        except ValueError:
            out.append(call.arguments)
    return out


def _floor(messages, counter) -> int:
    """Tokens nothing may give up: the system block, the task anchor, the newest step."""
    t = parse(messages)
    tokens = counter.count_messages(messages[: t.system_end])
    if t.task is not None and t.task != t.anchor:
        tokens += counter.count_messages(t.slice([t.groups[t.task]]))
    if t.anchor is not None:
        tokens += counter.count_messages(t.slice([t.groups[t.anchor]]))
        steps = [g for g in t.current if g.kind != "note"]
        if steps:
            tokens += counter.count_messages(t.slice(steps[-1:]))
    return tokens


@pytest.mark.skipif(not FILES, reason="real transcripts not present")
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_free_ladder_then_summary_reaches_a_quarter(path):
    tool_results = pytest.importorskip("compaction.strategies.tool_results")
    sliding_window = pytest.importorskip("compaction.strategies.sliding_window")
    messages = _load(path)
    counter = ApproximateCounter()
    before = counter.count_messages(messages)
    target = before // 4
    pipeline = (
        CompactionPipeline()
        .use(tool_results.ToolResults, keep_steps=1)
        .use(sliding_window.SlidingWindow, keep_steps=2)
        .run(Summary(ExtractiveSummarizer(), keep_steps=1))
    )
    result = pipeline.compact(messages, target=target, counter=counter)
    validate(result.messages)
    floor = _floor(messages, counter)
    if floor + SLACK <= target:
        assert result.fits, (result.after, target)
    else:
        # A quarter is below what the rules allow to give up: everything else went.
        assert result.after <= floor + SLACK, (result.after, floor, target)


@pytest.mark.skipif(not FILES, reason="real transcripts not present")
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_summary_keeps_every_file_path_of_what_it_replaced(path):
    messages = _load(path)
    originals: dict[str, Any] = {message_ref(m): m for m in messages}
    counter = ApproximateCounter()
    target = counter.count_messages(messages) // 4
    result = Summary(ExtractiveSummarizer(), keep_steps=1).compact(
        messages, target=target, counter=counter
    )
    validate(result.messages)
    written = [m for m in result.messages if is_note(m) and provenance(m)["strategy"] == "summary"]
    if result.changed:
        assert written
    for summary in written:
        replaced = [originals[r] for r in provenance(summary)["replaces"] if r in originals]
        assert replaced
        for message in replaced:
            for text in _texts(message):
                for found in FILE_PATH.findall(text):
                    assert found in summary.content, (found, message_ref(message))
