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
from compaction.memory.transcript import is_note, message_ref, parse, provenance
from compaction.strategies.summary import Summary
from compaction.summarizers import ExtractiveSummarizer
from compaction.tokens import ApproximateCounter

from .conftest import transcript_files
from .ladder_support import irreducible_tokens

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
def test_free_ladder_then_summary_then_the_last_resort_reaches_a_quarter(path):
    # Issue 4's clause, closed by issue 12's decision 2: with the last resort (Fit) after the
    # summary, every transcript reaches a quarter of its size whenever its system prompt
    # takes at most half of that.
    tool_results = pytest.importorskip("compaction.strategies.tool_results")
    sliding_window = pytest.importorskip("compaction.strategies.sliding_window")
    fit = pytest.importorskip("compaction.strategies.fit")
    messages = _load(path)
    counter = ApproximateCounter()
    before = counter.count_messages(messages)
    target = before // 4
    pipeline = (
        CompactionPipeline()
        .use(tool_results.ToolResults, keep_steps=1)
        .use(sliding_window.SlidingWindow, keep_steps=2)
        .use(Summary(ExtractiveSummarizer(), keep_steps=1))
        .run(fit.Fit())
    )
    result = pipeline.compact(messages, target=target, counter=counter)
    validate(result.messages)
    assert _task_kept(messages, result.messages, target, counter)
    system = counter.count_messages(messages[: parse(messages).system_end])
    if system <= target // 2 and irreducible_tokens(result.messages, counter) <= target // 4:
        assert result.fits, (result.after, target)
    else:
        # Only the envelopes, tool-call ids and names (which no cut can shorten) are left
        # over: claude-code/short.jsonl, 5 messages and two tool calls, at a quarter.
        assert result.after < before


def _task_kept(original, out, target, counter) -> bool:
    """The original task is in ``out``: verbatim when it is at most 30% of the target, else
    its head and tail around a marked cut that names it for recall."""
    t = parse(original)
    if t.task is None:
        return True
    task = original[t.groups[t.task].start]
    if task in out:
        return True
    if counter.count(task) <= 0.3 * target:
        return False
    ref = message_ref(task)
    for m in out:
        record = provenance(m) or {}
        if record.get("kind") == "truncated" and ref in record.get("replaces", ()):
            head, _, rest = m.content.partition("\n[…")
            tail = rest.split("…]\n", 1)[-1]
            return task.content.startswith(head) and task.content.endswith(tail) and "cut" in rest
    return False


def test_without_the_last_resort_the_ladder_stops_at_what_the_rules_protect():
    # The strict floor: the same ladder without Fit never cuts a protected message.
    tool_results = pytest.importorskip("compaction.strategies.tool_results")
    sliding_window = pytest.importorskip("compaction.strategies.sliding_window")
    from compaction.messages import assistant, system, user

    messages = [system("be brief"), user("the task " + "t" * 4000), assistant("ok")]
    counter = ApproximateCounter()
    pipeline = (
        CompactionPipeline()
        .use(tool_results.ToolResults)
        .use(sliding_window.SlidingWindow)
        .run(Summary(ExtractiveSummarizer()))
    )
    result = pipeline.compact(messages, target=200, counter=counter)
    assert not result.fits and result.messages == tuple(messages)


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
