"""``compact`` writes OpenAI or Anthropic messages and says so in the name it accepts: a result
is never written under a name that claims another format (a trajectory, JSONL holding one JSON
object), and the message count it reports is the count of the file as written.

Real subprocesses of the real entry point, on the bundled example and on one real transcript
of each format (skipped when the transcripts are absent), at several targets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli import EXAMPLE, one_line_error, run

#: One real transcript per format, by file name below the transcripts folder.
REAL = {
    "mini-swe-agent": "mini-swe-agent/django__django-10914.traj.json",
    "swe-agent": None,  # the first *.traj found
    "claude-code": "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
}


def _real(transcripts_dir: Path, fmt: str) -> Path:
    name = REAL[fmt]
    if name is None:
        return sorted((transcripts_dir / "swe-agent").rglob("*.traj"))[0]
    path = transcripts_dir / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def _count(path: Path) -> dict:
    counted = run("count", str(path), "--json")
    assert counted.returncode == 0, counted.stderr
    return json.loads(counted.stdout)


@pytest.mark.transcripts
@pytest.mark.parametrize("fmt", sorted(REAL))
@pytest.mark.parametrize("name", ["out.traj.json", "out.traj"])
def test_a_trajectory_name_is_refused_for_every_format(
    transcripts_dir: Path, tmp_path: Path, fmt: str, name: str
) -> None:
    out = tmp_path / name
    result = run("compact", str(_real(transcripts_dir, fmt)), "--target", "5000", "-o", str(out))
    line = one_line_error(result)
    assert "trajectory" in line and f"{tmp_path / 'out.json'}" in line, line
    assert not out.exists()


@pytest.mark.transcripts
def test_a_claude_code_log_is_not_written_as_jsonl(transcripts_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    source = _real(transcripts_dir, "claude-code")
    line = one_line_error(run("compact", str(source), "--target", "5000", "-o", str(out)))
    assert "JSONL" in line and "Anthropic" in line, line
    assert not out.exists()


def test_openai_jsonl_is_written_back_as_jsonl_and_only_under_a_jsonl_name(tmp_path: Path) -> None:
    source = tmp_path / "chat.jsonl"
    messages = json.loads(EXAMPLE.read_text())
    source.write_text("".join(json.dumps(m) + "\n" for m in messages))
    refused = run("compact", str(source), "--target", "4000", "-o", str(tmp_path / "x.json"))
    assert "one JSON document" in one_line_error(refused)
    out = tmp_path / "x.jsonl"
    done = run("compact", str(source), "--target", "4000", "-o", str(out))
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert len(lines) > 1 and all(json.loads(line)["role"] for line in lines)


@pytest.mark.transcripts
@pytest.mark.parametrize("fmt", sorted(REAL))
@pytest.mark.parametrize("target", [3_000, 100_000])
@pytest.mark.parametrize("to", [None, "anthropic"])
def test_the_reported_message_count_is_the_written_files(
    transcripts_dir: Path, tmp_path: Path, fmt: str, target: int, to: str | None
) -> None:
    out = tmp_path / "out.json"
    shape = ["--to", to] if to else []
    source = _real(transcripts_dir, fmt)
    result = run("compact", str(source), "--target", str(target), *shape, "-o", str(out), "--json")
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    counted = _count(out)
    assert report["messages_after"] == counted["messages"], (fmt, target, to)
    assert report["tokens_after"] == counted["total"]


@pytest.mark.transcripts
def test_a_directory_of_trajectories_gets_plain_json_names(
    transcripts_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = run(
        "compact", str(transcripts_dir / "mini-swe-agent"), "--target", "8000", "-o", f"{out}/",
        "--json", "-j", "2",
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    written = sorted(p.name for p in out.iterdir())
    assert written and not [n for n in written if ".traj" in n], written
    for f in json.loads(result.stdout)["files"]:
        assert _count(Path(f["output"]))["format"] == "openai"
