"""``compaction example``: the bundled example, written where the user is or named, run as a
user runs it (the real command in a subprocess, in a temporary directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compaction.formats import load

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "compaction" / "examples" / "agent_session.json"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COMPACTION_PLAIN="1", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "compaction", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def test_it_writes_the_example_here_and_the_file_compacts(tmp_path: Path) -> None:
    done = _cli("example", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "agent_session.json\n"
    written = tmp_path / "agent_session.json"
    assert written.read_bytes() == BUNDLED.read_bytes()
    assert len(load(written).messages) == len(load(BUNDLED).messages) > 0
    again = _cli("example", cwd=tmp_path)  # the same file again: harmless
    assert again.returncode == 0 and written.read_bytes() == BUNDLED.read_bytes()
    compacted = _cli(
        "compact", "agent_session.json", "--target", "4000", "-o", "c.json", cwd=tmp_path
    )
    assert compacted.returncode == 0, compacted.stderr


def test_path_names_the_installed_copy(tmp_path: Path) -> None:
    done = _cli("example", "--path", cwd=tmp_path)
    assert done.returncode == 0
    assert Path(done.stdout.strip()).resolve() == BUNDLED.resolve()
    assert list(tmp_path.iterdir()) == []


def test_stdout_and_another_name(tmp_path: Path) -> None:
    out = _cli("example", "-o", "-", cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout) == json.loads(BUNDLED.read_text())
    named = _cli("example", "-o", "run.json", cwd=tmp_path)
    assert named.returncode == 0 and (tmp_path / "run.json").read_bytes() == BUNDLED.read_bytes()


@pytest.mark.parametrize("kind", ["other file", "link", "directory"])
def test_it_never_overwrites_what_is_not_the_example(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "agent_session.json"
    mine = tmp_path / "mine.json"
    mine.write_text("[]")
    if kind == "other file":
        target.write_text("my own notes")
    elif kind == "link":
        target.symlink_to(mine)
    else:
        target.mkdir()
    done = _cli("example", cwd=tmp_path)
    assert done.returncode == 2, done
    assert done.stderr.startswith("compaction: error: agent_session.json")
    assert "Traceback" not in done.stderr
    assert mine.read_text() == "[]"
    if kind == "other file":
        assert target.read_text() == "my own notes"
