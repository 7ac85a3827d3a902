"""The benchmark harness still runs end to end (so it cannot rot between benchmark runs).

One quick run of ``python -m benchmarks.run`` in a subprocess, from the repository root, on
tiny synthetic conversations written as real transcript files. Nothing about speed is
asserted: the benchmarks measure that, the test suite never does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.report import SECTIONS
from benchmarks.synthetic import conversation
from compaction.adapters.openai import to_openai

ROOT = Path(__file__).resolve().parents[1]


def test_quick_run_writes_every_section(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    # Three small OpenAI-format transcripts: enough for every section, the concatenation too.
    for seed, size in ((1, 40), (2, 60), (3, 80)):
        messages = to_openai(conversation(size, seed=seed))
        (folder / f"chat-{seed}.json").write_text(json.dumps(messages), encoding="utf-8")
    out = tmp_path / "RESULTS.md"
    env = {**os.environ, "PYTHONPATH": ""}  # the package must be found from the root alone
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--quick",
            "--json",
            "--transcripts",
            str(folder),
            "--sizes",
            "50,200",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "[bench]" in done.stderr  # progress goes to stderr, not into the JSON

    results = json.loads(done.stdout)
    assert results["transcripts"]["files"] == 3
    cold = results["cold"]
    assert len(cold["cases"]) == 3 and cold["concat"]["messages"] == 40 + 59 + 79
    for row in cold["cases"]:
        assert row["floor_s"] > 0 and row["ladder_s"] > 0 and row["valid"]
    assert [r["messages"] for r in results["scaling"]["rows"]] == [50, 200]
    assert results["scaling"]["steps"][0]["messages_x"] == 4
    assert results["warm"]["groups"] and results["economics"]["rows"]
    peers = results["peers"]
    assert "skipped" in peers or {"sliding_window", "trim_messages"} <= set(peers["cases"][0])
    assert {g["goal"] for g in results["goals"]}  # every goal judged
    assert all(g["met"] in (True, False, None) for g in results["goals"])

    table = out.read_text(encoding="utf-8")
    for heading in SECTIONS:
        assert heading in table
    assert "ratios" in table and "counting floor" in table
