"""The cost model on the shared real logs: checked against the recorded bills, and the
cache-aware trigger against the default one (skipped when the transcripts are absent)."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import pytest

from compaction.formats import load
from compaction.pricing.bill_check import check_bill
from compaction.pricing.cache_policy import CacheAware
from compaction.pricing.prices import price_for
from compaction.replay import replay
from compaction.tokens import TiktokenCounter
from compaction.trigger import Compactor

from .conftest import TRANSCRIPTS, transcript_files

pytestmark = pytest.mark.transcripts

FILES = transcript_files()
BILLED = [p for p in FILES if p.suffix == ".jsonl" or p.name.endswith(".traj.json")]


@cache
def _messages(path: Path):
    return load(path).messages


def _name(path: Path) -> str:
    return str(path.relative_to(TRANSCRIPTS))


@pytest.mark.parametrize("path", BILLED, ids=_name)
def test_replaying_a_log_uncompacted_reproduces_its_recorded_cache_reads(path, record_property):
    check = check_bill(_messages(path))
    assert check is not None, "Claude Code and mini-swe-agent logs record their usage"
    record_property("read_error", check.read_error)
    record_property("write_error", check.write_error)
    record_property("cost_error", check.cost_error)
    print(
        f"{_name(path)}: {check.calls} calls, reads {100 * check.read_error:+.1f}%, "
        f"writes {100 * check.write_error:+.1f}%, bill {100 * check.cost_error:+.1f}%"
    )
    assert all(math.isfinite(e) for e in (check.read_error, check.write_error, check.cost_error))
    if path.suffix == ".jsonl" and check.calls >= 100:
        # A whole Claude Code session: reads, most of the bill, within 5%.
        assert abs(check.read_error) <= 0.05
        cached = check.recorded_read + check.recorded_write
        modelled = check.model_read + check.model_write
        assert abs(modelled - cached) <= 0.05 * cached
    if path.name.endswith(".traj.json"):
        # Gemini's implicit cache is best-effort: the model (always a hit when warm) reads
        # somewhat more than was billed, never wildly so.
        assert abs(check.read_error) <= 0.25


def test_the_shared_claude_code_sessions_are_billed_within_five_percent():
    sessions = [p for p in BILLED if p.suffix == ".jsonl" and "subagents" not in p.parts]
    if not sessions:
        pytest.skip(f"real transcripts not present at {TRANSCRIPTS}")
    checks = [c for p in sessions if (c := check_bill(_messages(p))) is not None]
    recorded = sum(c.recorded_cost for c in checks)
    modelled = sum(c.model_cost for c in checks)
    reads = sum(c.recorded_read for c in checks)
    assert abs(sum(c.model_read for c in checks) - reads) <= 0.05 * reads
    assert abs(modelled - recorded) <= 0.05 * recorded


@pytest.mark.parametrize("path", FILES, ids=_name)
@pytest.mark.parametrize("share", [0.3, 0.6])
def test_priced_replay_holds_on_every_format(path, share):
    """Every format (SWE-agent logs have no time: the cadence stands in), two windows: the
    input is split exactly, the uncompacted side is the transcript itself, and the cache-aware
    trigger never sends a request over the window."""
    messages = _messages(path)
    counter = TiktokenCounter()
    window = max(int(counter.count_messages(messages) * share), 4000)
    price = price_for("claude-sonnet-4-5")
    records = list(replay(messages, Compactor(None, window, counter=counter), price=price))
    compacted = False
    for r in records:
        assert r.cost is not None and r.baseline is not None
        assert r.cost.input_tokens == r.tokens_sent
        assert r.baseline.input_tokens == r.baseline_tokens
        compacted = compacted or r.compacted
        if not compacted:  # until the first compaction, both runs send the same
            assert r.cost == r.baseline
    aware = Compactor(None, window, counter=counter, policy=CacheAware(price))
    over = [r for r in replay(messages, aware, price=price) if r.tokens_sent > window]
    assert not over, [(r.call, r.tokens_sent) for r in over]


def test_the_cache_aware_trigger_costs_less_than_the_default_over_the_shared_set():
    from benchmarks.common.data import load_cases
    from benchmarks.cost.suite import _totals, run

    if not TRANSCRIPTS.is_dir():
        pytest.skip(f"real transcripts not present at {TRANSCRIPTS}")
    cases, _ = load_cases(TRANSCRIPTS)
    totals = {t["policy"]: t for t in _totals(run(cases)["rows"])}
    default, aware = totals["default trigger"], totals["cache-aware trigger"]
    assert aware["files"] == default["files"] > 0
    assert aware["cost"] < default["cost"]
    assert aware["over"] == default["over"] == 0
    assert aware["without_task"] == 0
