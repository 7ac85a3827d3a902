"""On every real transcript, at several targets, a summary's header and body count alike."""

from __future__ import annotations

import re

import pytest

from compaction import CompactionPipeline, SlidingWindow, ToolResults, validate
from compaction.memory.transcript import is_note, provenance
from compaction.strategies.summary import Summary
from compaction.tokens import ApproximateCounter

from .conftest import transcript_files

pytestmark = pytest.mark.transcripts

FILES = transcript_files()
IDS = [str(p.relative_to(p.parents[1])) for p in FILES]
HEADER = re.compile(r"^\[Summary of (\d+) earlier (message|messages)\]\n")
BODY = re.compile(r"^- Messages summarised: (\d+)$", re.MULTILINE)


@pytest.mark.skipif(not FILES, reason="real transcripts not present")
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_summary_header_and_body_agree_at_several_targets(path):
    formats = pytest.importorskip("compaction.formats")
    messages = formats.load(path).messages
    counter = ApproximateCounter()
    total = counter.count_messages(messages)
    checked = 0
    ladders = [
        # alone: summaries of raw turns; under the free layers: of placeholders and notes too
        lambda: CompactionPipeline().run(Summary(keep_steps=1)),
        lambda: (
            CompactionPipeline()
            .use(ToolResults, keep_steps=1)
            .use(SlidingWindow, keep_steps=2)
            .run(Summary(keep_steps=1))
        ),
    ]
    for divisor, ladder in [(d, ladder) for d in (2, 4, 8) for ladder in ladders]:
        out = ladder().compact(messages, target=max(1, total // divisor), counter=counter)
        validate(out.messages)
        for m in out.messages:
            record = provenance(m)
            if not (is_note(m) and record["strategy"] == "summary"):
                continue  # a reader's own earlier compaction (Claude Code) is not ours
            header, body = HEADER.match(m.content), BODY.search(m.content)
            assert header and body, m.content[:200]
            n = int(header.group(1))
            assert header.group(2) == ("message" if n == 1 else "messages")
            assert n == int(body.group(1)) == record["stands_for"]
            checked += 1
    if total > 4 * 2000:
        assert checked  # a transcript this size always gets summarised at an eighth
