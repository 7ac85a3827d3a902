"""``compaction check`` and ``compaction tune`` through the real command, and the library
calls behind them, on conversations made here and on the shared real logs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import tomllib

from compaction import Message, ToolCall
from compaction.check import assert_check, check_log, check_logs
from compaction.check.gate import Thresholds
from compaction.config import Config, config_from_dict
from compaction.formats import dump
from compaction.pricing.prices import price_for

from .conftest import ROOT, TRANSCRIPTS
from .test_cli import run, run_all

LOGS = ROOT.parent / "shared" / "data" / "logs"
PRICE = "claude-sonnet-4-5"
#: A ladder that clears every tool output but the newest and drops old turns without a note:
#: cheap, and it loses what the run found out.
LOSSY = """\
[ladder]
use = [{ strategy = "tool_results", keep_steps = 1, min_tokens = 0 },
       { strategy = "sliding_window", keep_steps = 1, note = false }]
run = "fit"
"""


def _chat(turns: int = 30) -> list[Message]:
    """A person who gives a rule with identifiers every few turns, and an agent that reads
    big files in between."""
    out = [
        Message("system", "You are a careful coding agent."),
        Message("user", "Fix ticket INV-7 in src/billing/invoice.py; the cap is $500."),
    ]
    for i in range(turns):
        if i % 2 == 1:
            out.append(
                Message(
                    "user",
                    f"Also, for the record: job {i} must use port {8000 + i} and report to "
                    f"ops-{i}@corp.example by 2026-12-{i % 28 + 1:02d}; the ticket is JOB-{i} "
                    f"and the budget for it is ${100 * i}. Keep the notes in docs/job_{i}.md.",
                )
            )
        call = ToolCall(f"c{i}", "read_file", json.dumps({"path": f"src/mod_{i}.py"}))
        out.append(Message("assistant", f"Reading module {i}.", tool_calls=(call,)))
        out.append(
            Message("tool", f"# mod_{i}\n" + "x = compute(value)\n" * 120, tool_call_id=f"c{i}")
        )
    out.append(Message("assistant", "Done."))
    return out


def _file(tmp_path: Path, messages: list[Message], name: str = "run.json") -> Path:
    path = tmp_path / name
    dump(messages, "openai", path)
    return path


def test_a_run_is_measured_where_it_compacted(tmp_path: Path) -> None:
    path = _file(tmp_path, _chat())
    checked = check_log(path, window=0.2, price=price_for(PRICE))
    assert checked.calls == 31 and checked.compactions >= 1
    assert (checked.over_window, checked.invalid, checked.task_lost) == (0, 0, 0)
    # The person's later rules were compacted away at some call: their identifiers were asked.
    assert checked.identifiers_total.asked > 0
    assert checked.cost is not None and checked.uncompacted is not None
    assert checked.cost < checked.uncompacted
    lossy = check_log(path, config_from_dict(tomllib.loads(LOSSY)), window=0.2)
    assert lossy.identifiers_total.asked > 0
    assert lossy.identifiers_total.share < checked.identifiers_total.share


def test_the_command_gates_on_floors_and_writes_junit(tmp_path: Path) -> None:
    path = _file(tmp_path, _chat())
    strict = tmp_path / "strict.toml"
    strict.write_text("[check]\nmin_identifiers = 1.0\nmax_cost_vs_uncompacted = 0.0001\n")
    lossy = tmp_path / "lossy.toml"
    lossy.write_text(LOSSY + "\n[check]\nmin_identifiers = 0.9\n")
    easy_floors = tmp_path / "easy.toml"
    easy_floors.write_text("[check]\nmin_identifiers = 0.5\n")
    junit = tmp_path / "check.xml"
    easy, hard, lost = run_all(
        [
            "check",
            str(path),
            "--window",
            "20%",
            "--price",
            PRICE,
            "--json",
            "--config",
            str(easy_floors),
        ],
        [
            "check",
            str(path),
            "--window",
            "20%",
            "--price",
            PRICE,
            "--config",
            str(strict),
            "--junit-xml",
            str(junit),
        ],
        ["check", str(path), "--window", "20%", "--config", str(lossy)],
        cwd=tmp_path,
    )
    assert easy.returncode == 0, easy.stderr
    report = json.loads(easy.stdout)
    assert report["passed"] and report["totals"]["calls"] == 31
    assert hard.returncode == 1 and "at most 0.0001x" in hard.stderr
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "1"
    assert [c.get("name") for c in suite.iter("testcase")] == [str(path), "all logs"]
    assert lost.returncode == 1 and "identifiers kept" in lost.stderr


def test_nothing_read_is_not_a_pass(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    junk = tmp_path / "logs"
    junk.mkdir()
    (junk / "notes.json").write_text('{"hello": 1}')
    one, folder, bad = run_all(
        ["check", str(empty)],
        ["check", str(junk)],
        ["check", str(empty), "--window", "0%"],
        cwd=tmp_path,
    )
    assert one.returncode == 2 and "Traceback" not in one.stderr
    assert folder.returncode == 1 and "notes.json" in folder.stderr
    assert bad.returncode == 2 and "--window" in bad.stderr


def test_the_library_gate_is_the_command_gate(tmp_path: Path) -> None:
    path = _file(tmp_path, _chat())
    report = check_logs([path], window=0.2, thresholds=Thresholds(min_identifiers=0.0))
    assert report.passed
    with pytest.raises(AssertionError, match="identifiers kept"):
        assert_check(
            [path],
            Config(ladder=tomllib.loads(LOSSY)["ladder"]),
            window=0.2,
            thresholds=Thresholds(min_identifiers=1.0),
        )


def _shared_logs() -> list[str]:
    return [str(p) for p in (TRANSCRIPTS, LOGS) if p.is_dir()]


@pytest.mark.transcripts
@pytest.mark.slow
def test_the_project_checks_itself_on_every_shared_log(tmp_path: Path) -> None:
    """The floors committed in pyproject.toml hold for the default ladder on every shared log,
    and a ladder that loses what the runs found out fails them."""
    folders = _shared_logs()
    if not folders:
        pytest.skip("the shared logs are not present")
    lossy = tmp_path / "lossy.toml"
    lossy.write_text(LOSSY)
    default, lost = run_all(
        ["check", *folders, "--price", PRICE, "--json"],
        ["check", *folders, "--price", PRICE, "--config", str(lossy), "--json"],
    )
    report = json.loads(default.stdout)
    assert default.returncode == 0, report["failures"]
    assert report["totals"]["logs"] >= 55 and not report["unread"]
    assert lost.returncode == 1
    assert any("probe facts" in f for f in json.loads(lost.stdout)["failures"])
    # The figures are the library's for the same run.
    first = report["logs"][0]
    again = check_log(first["path"], window=0.5, price=price_for(PRICE)).to_dict()
    assert {k: again[k] for k in first} == first


@pytest.mark.transcripts
@pytest.mark.slow
def test_tune_writes_a_config_that_check_reads(tmp_path: Path) -> None:
    if not TRANSCRIPTS.is_dir():
        pytest.skip("the shared transcripts are not present")
    logs = sorted(str(p) for p in (TRANSCRIPTS / "swe-agent").glob("*marshmallow*"))[:4]
    out = tmp_path / "tuned.toml"
    args = ["tune", *logs, "--price", PRICE, "--trials", "3", "--shuffle", "7", "--json"]
    first, second = run_all([*args, "-o", str(out)], args, cwd=tmp_path)
    assert first.returncode in (0, 1), first.stderr
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a == b  # the same for the same --shuffle number
    assert sorted(a["tuning"] + a["held_out"]) == logs
    assert len(a["trials"]) == 3
    if a["best"] is not None:
        assert out.read_text().endswith(a["best"])
        checked = run(
            "check", *a["held_out"], "--config", str(out), "--price", PRICE, "--json", cwd=tmp_path
        )
        cost = json.loads(checked.stdout)["totals"]["cost"]
        assert cost == pytest.approx(a["best_held_out"]["cost"], rel=1e-6)


def test_strategies_explains_a_config(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[trigger]\ncompact_at = 0.8\ncompact_to = 0.3\n" + LOSSY)
    shown = run("strategies", "--config", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "80% of the window, down to 30%" in shown.stdout
    assert "1. tool_results" in shown.stdout and "3. fit" in shown.stdout
