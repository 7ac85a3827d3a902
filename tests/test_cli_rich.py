"""On a terminal the tables are drawn by rich; a long file name must stay whole there (folded
onto the next line), never cut to ``agent-a28…`` where two names share a prefix.

The real entry point runs in a real pseudo-terminal, 80 columns wide.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import CLI, EXAMPLE, _env

pytest.importorskip("rich")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")


def _on_a_terminal(args: list[str], cwd: Path) -> str:
    primary, secondary = pty.openpty()
    env = {**_env(), "COLUMNS": "80", "LINES": "50", "TERM": "xterm"}
    env.pop("COMPACTION_PLAIN", None)
    env.pop("NO_COLOR", None)
    done = subprocess.run(
        [*CLI, *args], stdin=secondary, stdout=secondary, stderr=secondary,
        cwd=cwd, env=env, timeout=120,
    )  # fmt: skip
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    assert done.returncode in (0, 1), b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


def test_long_file_names_with_a_common_prefix_stay_apart(tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "a-fairly-long-session-directory-name" / "subagents"
    logs.mkdir(parents=True)
    names = ["agent-a28f0c1d9e7b6a5f4e3d2c1b0a.json", "agent-aco9f8e7d6c5b4a3f2e1d0c9b8a.json"]
    for name in names:
        shutil.copy(EXAMPLE, logs / name)
    shown = _on_a_terminal(["count", "logs", "--top", "1"], tmp_path)
    # The rows of the tables (the progress bar above them is transient and may abbreviate).
    rows = "\n".join(line for line in shown.splitlines() if line.startswith("│"))
    assert rows and "…" not in rows, shown
    joined = "".join(rows.split())  # a folded cell continues on the next line
    for name in names:
        assert name[:12] in joined, shown
