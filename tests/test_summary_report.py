"""What a summariser call cost is reported exactly to whoever reads it.

Summary counts the transcript it showed the summariser only for a reader: an event receiver
(``events.summarized``) or a debug log line that goes somewhere (structlog configured). Both
get the exact count; a run nobody watches does not encode the transcript a second time.
"""

from __future__ import annotations

import subprocess
import sys

from compaction import events
from compaction.messages import assistant, user
from compaction.pipeline import CompactionPipeline
from compaction.strategies.summary import Summary
from compaction.summarizers import ExtractiveSummarizer
from compaction.summarizers.base import INSTRUCTIONS
from compaction.tokens import TiktokenCounter


class Seen:
    """The extractive summariser, remembering each transcript it was shown."""

    def __init__(self) -> None:
        self.inner = ExtractiveSummarizer()
        self.transcripts: list[str] = []

    def __call__(self, transcript: str, instructions: str) -> str:
        self.transcripts.append(transcript)
        return self.inner(transcript, instructions)


def _conversation() -> list:
    msgs = [user("Fix the parser in src/parse.py")]
    for k in range(6):
        msgs += [assistant(f"step {k}: reading src/mod_{k}.py " + "detail " * 200), user("ok")]
    return msgs


def test_a_receiver_gets_the_exact_tokens_of_the_transcript_and_the_answer():
    seen, reports = Seen(), []
    counter = TiktokenCounter()
    with events.summarized.connected_to(lambda sender, **kw: reports.append(kw)):
        CompactionPipeline(counter=counter).run(Summary(seen)).compact(_conversation(), target=400)
    assert reports and len(reports) == len(seen.transcripts)
    fresh = TiktokenCounter()
    for kw, transcript in zip(reports, seen.transcripts, strict=True):
        want = fresh.count_text(INSTRUCTIONS) + fresh.count_text(transcript)
        assert kw["input_tokens"] == want
        assert kw["output_tokens"] > 0


SCRIPT = """
import structlog
structlog.configure(processors=[structlog.processors.KeyValueRenderer(key_order=["event"])])
from compaction import CompactionPipeline, Summary, TiktokenCounter, user, assistant
msgs = [user("Fix the parser in src/parse.py")]
for k in range(6):
    msgs += [assistant(f"step {k}: reading src/mod_{k}.py " + "detail " * 200), user("ok")]
CompactionPipeline(counter=TiktokenCounter()).run(Summary()).compact(msgs, target=400)
"""


def test_the_debug_line_carries_the_tokens_with_no_receiver():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if "summary.summarized" in line]
    assert lines, out.stdout
    for line in lines:
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        assert int(fields["input_tokens"]) > TiktokenCounter().count_text(INSTRUCTIONS)
        assert int(fields["output_tokens"]) > 0
