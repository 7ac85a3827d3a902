"""``compaction check`` and the benchmarks measure the same runs the same way: the cost suite's
default-trigger replay and the check of the same log, window and price give the same figures
(the check is the library code the suites stand on)."""

from __future__ import annotations

import pytest

from compaction.check import check_log
from compaction.pricing.prices import price_for

from .conftest import TRANSCRIPTS


@pytest.mark.transcripts
def test_the_check_costs_a_log_as_the_cost_suite_does() -> None:
    from benchmarks.common.data import load_cases
    from benchmarks.cost.suite import _ours

    if not TRANSCRIPTS.is_dir():
        pytest.skip("the shared transcripts are not present")
    cases, _ = load_cases(TRANSCRIPTS / "mini-swe-agent", limit=4)
    price = price_for("claude-sonnet-4-5")
    compared = 0
    for case in cases:
        if case.tokens < 2_000:  # the check's share windows are at least 1,000 tokens
            continue
        suite = _ours(case, price, price.ttl[0], policy=False)
        path = TRANSCRIPTS / "mini-swe-agent" / case.name
        checked = check_log(path, window=0.5, price=price, messages=case.messages)
        assert checked.calls == suite["calls"]
        assert checked.compactions == suite["compactions"]
        assert checked.over_window == suite["over"]
        assert checked.task_lost == suite["without_task"]
        assert checked.cost == pytest.approx(suite["cost"], rel=1e-9)
        assert checked.uncompacted == pytest.approx(suite["baseline"], rel=1e-9)
        compared += 1
    assert compared >= 2
