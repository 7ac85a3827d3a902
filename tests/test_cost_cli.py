"""``compaction replay --price``: cost and cache columns, side by side with no compaction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .cost_logs import claude_code_log

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "compaction.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from compaction.cli import main as entry

    capsys.readouterr()
    code = entry(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return claude_code_log(tmp_path / "session.jsonl", [10] * 12 + [700] + [10] * 12)


def test_priced_replay_prints_cache_columns_and_both_totals(log):
    result = cli("replay", str(log), "--window", "8000", "--price", "claude-sonnet-4-5")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for column in ("cache read", "cache write", "uncached", "output", "cost $", "uncompacted $"):
        assert column in out
    assert "compacted: $" in out and "with no compaction: $" in out
    assert "priced as claude-sonnet-4-5" in out
    assert "prices of 2026-" in out or "prices from genai-prices " in out  # where they came from
    assert "compaction at call" in out and "net $" in out
    assert "Traceback" not in result.stderr


def test_json_carries_the_cost_per_call(capsys, log):
    code, out, _ = main(
        capsys, "replay", str(log), "--window", "8000", "--price", "gpt-5", "--json"
    )
    assert code == 0
    report = json.loads(out)
    calls = report["calls"]
    keys = {"cache_read", "cache_write", "uncached", "output", "usd", "summary_usd"}
    assert all(set(c["cost"]) == keys for c in calls)
    assert all(c["cost"]["cache_write"] == 0 for c in calls)  # OpenAI charges no write
    total = report["totals"]
    assert round(sum(c["cost"]["usd"] for c in calls), 4) == round(total["cost"]["usd"], 4)
    assert round(sum(c["uncompacted"]["usd"] for c in calls), 4) == round(
        total["uncompacted"]["usd"], 4
    )
    assert report["price"]["model"] == "gpt-5"
    assert [c["at"] for c in calls][13] - calls[12]["at"] == 10
    assert report["compactions"] and all("net_usd" in e for e in report["compactions"])


def test_many_files_end_with_a_totals_row(capsys, log, tmp_path):
    other = claude_code_log(tmp_path / "other.jsonl", [10] * 8)
    code, out, _ = main(capsys, "replay", str(log), str(other), "--window", "8000")
    assert code == 0
    assert "total (2 files)" in out
    code, out, _ = main(
        capsys, "replay", str(log), str(other), "--window", "8000", "--price", "claude-opus-4-6"
    )
    assert code == 0
    footer = next(line for line in out.splitlines() if line.startswith("total (2 files)"))
    rows = [line for line in out.splitlines() if str(tmp_path) in line]
    costs = [float(line.split()[-2]) for line in rows]
    assert float(footer.split()[-2]) == pytest.approx(sum(costs), abs=2e-4)


def test_bad_pricing_options_are_one_clear_line(capsys, log, tmp_path):
    bad = tmp_path / "prices.toml"
    bad.write_text("[models.x]\ninput = 1\n", encoding="utf-8")
    cases = [
        (["--price", "no-such-model"], "no price for model 'no-such-model'"),
        (["--price", "x", "--prices", str(bad)], f"{bad}:1: model 'x': field 'cache'"),
        (["--prices", str(bad)], "--prices FILE needs --price MODEL"),
        (["--policy", "cache-aware"], "--policy cache-aware needs --price"),
        (["--price", "claude-sonnet-4-5", "--ttl", "60"], "no cache-write price for a 60s TTL"),
        (["--price", "gpt-5", "--cadence", "-3"], "--cadence must be"),
        (["--price", "gpt-5", "--overhead", str(10**40)], "--overhead must be a number of tokens"),
    ]
    for extra, message in cases:
        code, _, err = main(capsys, "replay", str(log), "--window", "8000", *extra)
        assert code == 2, (extra, err)
        assert message in err, (extra, err)
        assert len(err.strip().splitlines()) == 1, err


def test_the_cache_aware_policy_runs_from_the_command_line(capsys, tmp_path):
    log = claude_code_log(tmp_path / "s.jsonl", [10] * 25, output_size=100)
    args = ["replay", str(log), "--window", "6000", "--price", "claude-sonnet-4-5", "--json"]
    code, out, _ = main(capsys, *args)
    default = json.loads(out)
    code2, out2, _ = main(capsys, *args, "--policy", "cache-aware")
    aware = json.loads(out2)
    assert code == code2 == 0
    assert aware["price"]["policy"] == "cache-aware"
    assert all(c["tokens_sent"] <= 6000 for c in aware["calls"])
    # It compacts in bigger batches than the default trigger, so the requests differ.
    assert [c["tokens_sent"] for c in aware["calls"]] != [
        c["tokens_sent"] for c in default["calls"]
    ]
