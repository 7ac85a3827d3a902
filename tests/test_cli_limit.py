"""``compaction compact --window/--limit``: the window is the hard limit the file must fit.

Run through the real entry point in a subprocess, on a file written here: a task too big for
40% of the window but well within the window must be written verbatim.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .test_cli import call, one_line_error, run

TASK = "Fix the failing parser test in src/parser.py; keep the public API. " * 300  # ~4.5k


def _conversation(path: Path) -> Path:
    messages = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": TASK},
    ]
    for n in range(6):
        messages += [
            {
                "role": "assistant",
                "content": f"step {n}",
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"cmd": "ls"})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"output {n} " * 600},
        ]
    path.write_text(json.dumps(messages))
    return path


def _report(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_window_is_the_limit_and_the_task_is_written_whole(tmp_path: Path) -> None:
    source = _conversation(tmp_path / "run.json")
    out = tmp_path / "out.json"
    result = run("compact", str(source), "--window", "9000", "-o", str(out), "--counter", "approx")
    assert result.returncode == 0, result.stderr
    written = json.loads(out.read_text())
    assert written[1]["content"] == TASK  # 4.5k tokens: over 40% of the window, cut before
    assert "limit: 9,000 tokens" in result.stderr


def test_limit_with_a_target_is_reported_and_kept(capsys) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        source = _conversation(Path(folder) / "run.json")
        args = ["compact", str(source), "--target", "3000", "--dry-run", "--json"]
        plain = _report(call(capsys, *args, "--counter", "approx"))
        wide = _report(call(capsys, *args, "--limit", "9000", "--counter", "approx"))
    assert plain["limit"] == 3000 and plain["tokens_after"] <= 3000
    assert wide["limit"] == 9000 and wide["fits"] and wide["tokens_after"] <= 9000
    assert wide["tokens_after"] > plain["tokens_after"]  # the task was not cut this time


def test_a_limit_below_the_target_is_one_line_exit_2(capsys) -> None:
    line = one_line_error(
        call(capsys, "compact", "-", "--target", "3000", "--limit", "2000", "--dry-run")
    )
    assert "--limit 2,000 is below the target (3,000 tokens)" in line
