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


FAILING = """
import logging, sys
logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(message)s")
from compaction import CompactionPipeline, Summary, events, system, user, assistant
{opt_in}
secret = "sk-live-CANARY"
msgs = [system("s")] + [m for k in range(8) for m in (
    user(f"turn {{k}}: my key is {{secret}} " + "detail " * 300), assistant(f"ok {{k}}"))]
msgs.append(user("final"))
def summariser(transcript, instructions):
    raise RuntimeError("upstream 400, you sent: " + transcript)
pipeline = CompactionPipeline().run(Summary(summariser))
pipeline.compact(msgs, target=1500, labels={{"big": "L" * 50_000}})
"""


def warning_lines(opt_in: str) -> list[str]:
    code = FAILING.format(opt_in=opt_in)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = [line for line in out.stderr.splitlines() if line.startswith("WARNING")]
    assert lines, out.stderr
    return lines


def test_default_warning_line_names_the_error_type_without_its_text() -> None:
    lines = warning_lines("")
    failed = [line for line in lines if "summary.failed" in line]
    assert failed and all("error='RuntimeError'" in line for line in failed)
    assert not [line for line in lines if "CANARY" in line or "you sent" in line]
    # every field is bounded: the 50,000-character label included
    assert max(map(len, lines)) < 3 * 1024


def test_error_text_in_log_lines_is_opt_in_and_bounded() -> None:
    lines = warning_lines("events.record_error_text(True)")
    failed = [line for line in lines if "summary.failed" in line]
    assert failed and all("RuntimeError: upstream 400, you sent:" in line for line in failed)
    assert max(map(len, lines)) < 3 * 1024


def test_structlog_gets_the_same_bounded_fields() -> None:
    configure = CONFIGURE.replace("import structlog", "import structlog, sys")
    code = FAILING.format(opt_in=configure)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    failed = [line for line in out.stdout.splitlines() if "summary.failed" in line]
    assert failed and all("error='RuntimeError'" in line for line in failed)
    assert "CANARY" not in out.stdout
    assert max(map(len, out.stdout.splitlines())) < 3 * 1024
