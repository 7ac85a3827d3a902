"""Every script in ``examples/`` runs, offline, as a reader runs it (``python examples/X.py``,
from outside the source tree), and shows compaction happen: a streamed answer, at least one
compaction, and nothing else on stdout."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if p.name != "fake_openai_server.py")
ANSWER = re.compile(r"the parser stops one line early in src/mod_7\.py", re.I)


def test_there_is_an_example_per_framework() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"langchain_agent", "pydantic_ai_agent", "openai_agents_runner",
            "litellm_acompletion"} <= names  # fmt: skip


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_example_runs_and_compacts(example: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True,
        timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-5000:]
    out = done.stdout
    assert ANSWER.search(out), out
    counts = [int(n) for n in re.findall(r"compactions: (\d+)", out)]
    assert counts and all(n >= 1 for n in counts), out
    assert re.search(r"stream", out), out
    # Every line is the example's own report (no library chatter on stdout).
    for line in out.splitlines():
        assert re.match(r"(streamed|model |last request|the |Runner\.|  )", line), line
