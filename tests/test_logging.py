"""Logging is quiet until the application configures structlog, then goes through it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
{configure}
from compaction import ApproximateCounter, CompactionPipeline, Message
from compaction.strategy import Strategy

class Drop(Strategy):
    name = "drop"
    def rewrite(self, messages, *, target, counter):
        return messages[1:]

msgs = [Message("user", "a" * 400), Message("user", "b" * 40)]
CompactionPipeline(counter=ApproximateCounter()).use(Drop).compact(msgs, target=20)
print("done")
"""

CONFIGURE = """
import structlog
structlog.configure(processors=[structlog.processors.KeyValueRenderer(key_order=["event"])])
"""


def run(configure: str) -> subprocess.CompletedProcess:
    code = SCRIPT.format(configure=configure)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


def test_unconfigured_structlog_prints_nothing() -> None:
    out = run("")
    assert out.stdout == "done\n"
    assert out.stderr == ""


def test_configured_structlog_gets_every_event() -> None:
    out = run(CONFIGURE)
    assert "event='compaction.started'" in out.stdout
    assert "event='strategy.applied'" in out.stdout
    assert "event='compaction.compacted'" in out.stdout


def test_import_does_not_load_structlog() -> None:
    code = "import sys, compaction.cli, compaction; print('structlog' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
