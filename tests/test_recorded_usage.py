"""What a log recorded about its calls: cache writes at two TTLs, and records that cannot be true.

Claude Code records per call how many tokens it wrote for 5 minutes and for 1 hour; the bill
check prices each at its own price and the meter follows both. A count that is not a count,
or a time that is not a time (or runs backwards), is refused naming the file, the message and
the field, through the real reader and the real command line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from compaction.formats import load
from compaction.pricing.bill_check import check_bill
from compaction.pricing.cost import CacheMeter
from compaction.pricing.prices import default_prices
from compaction.pricing.recorded import RecordedUsageError
from tests.test_cli import call, one_line_error

SONNET = default_prices()["claude-sonnet-4-5"]


def _log(path: Path, usages: list[dict[str, Any]], stamps: list[str] | None = None) -> Path:
    """A Claude Code log of ``len(usages)`` tool steps with these usages (and times)."""
    records: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u0", "timestamp": "2026-02-11T20:00:00Z",
         "message": {"role": "user", "content": "Fix the failing test in parser.py please."}}
    ]  # fmt: skip
    for i, usage in enumerate(usages):
        stamp = stamps[i] if stamps else f"2026-02-11T20:{i + 1:02d}:00Z"
        content = [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"i": i}}]
        message = {"id": f"msg_{i}", "role": "assistant", "model": "claude-sonnet-4-5",
                   "usage": usage, "content": content}  # fmt: skip
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok " * 300}
        records += [
            {"type": "assistant", "uuid": f"a{i}", "timestamp": stamp, "message": message},
            {"type": "user", "uuid": f"t{i}", "timestamp": stamp,
             "message": {"role": "user", "content": [result]}},
        ]  # fmt: skip
    records.append(
        {"type": "assistant", "uuid": "end", "timestamp": "2026-02-11T23:00:00Z",
         "message": {"id": "msg_end", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "Done."}]}}
    )  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _usage(i: int, short: int, long: int) -> dict[str, Any]:
    return {
        "input_tokens": 3,
        "cache_read_input_tokens": 1000 * i,
        "cache_creation_input_tokens": short + long,
        "cache_creation": {"ephemeral_5m_input_tokens": short, "ephemeral_1h_input_tokens": long},
        "output_tokens": 50,
    }


def test_a_log_mixing_5_minute_and_1_hour_writes_is_billed_at_both(tmp_path: Path) -> None:
    splits = [(2000, 1000), (0, 3000), (3000, 0)] * 4
    log = _log(tmp_path / "mixed.jsonl", [_usage(i, s, lg) for i, (s, lg) in enumerate(splits)])
    bill = check_bill(load(log).messages, SONNET)
    assert bill is not None and bill.calls == len(splits)
    writes = sum(s * SONNET.cache_write[300] + lg * SONNET.cache_write[3600] for s, lg in splits)
    expected = (
        bill.recorded_read * SONNET.cache_read
        + writes
        + bill.recorded_uncached * SONNET.input
        + bill.calls * 50 * SONNET.output
    ) / 1e6
    assert math.isclose(bill.recorded_cost, expected, rel_tol=1e-12)


def test_the_meter_prices_each_ttl_and_keeps_the_head_for_the_longer_one() -> None:
    meter = CacheMeter(SONNET, ttl=300)
    first = meter.call(0, 10_000, 0, 0, fixed=4_000, writes={300: 6_000, 3600: 4_000})
    assert first.cache_write == 10_000
    paid = 6_000 * SONNET.cache_write[300] + 4_000 * SONNET.cache_write[3600]
    assert math.isclose(first.cost, paid / 1e6, rel_tol=1e-12)
    # Twenty minutes later the 5-minute entry is gone, the 1-hour head is still read.
    later = meter.call(1_200, 11_000, 10_000, 0, fixed=4_000, writes={300: 7_000})
    assert (later.cache_read, later.cache_write) == (4_000, 7_000)
    # With one TTL only, the head expires with the rest.
    single = CacheMeter(SONNET, ttl=300)
    single.call(0, 10_000, 0, 0, fixed=4_000)
    assert single.call(1_200, 11_000, 10_000, 0, fixed=4_000).cache_read == 0


_ODD_COUNTS = {
    "NaN": float("nan"),
    "negative": -5,
    "a boolean": True,
    "a float": 12.5,
    "10^40": 10**40,
    "text": "12",
}


@pytest.mark.parametrize("kind", list(_ODD_COUNTS))
@pytest.mark.parametrize("key", ["output_tokens", "cache_read_input_tokens", "input_tokens"])
def test_an_odd_count_is_refused_naming_file_message_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, key: str
) -> None:
    usages = [_usage(i, 1000, 0) for i in range(4)]
    usages[2][key] = _ODD_COUNTS[kind]
    log = _log(tmp_path / "odd.jsonl", usages)
    with pytest.raises(RecordedUsageError, match=f"message 'msg_2': field 'usage.{key}'"):
        check_bill(load(log).messages, SONNET)
    line = one_line_error(
        call(capsys, "replay", str(log), "--window", "8000", "--price", "claude-sonnet-4-5")
    )
    # Line 6: the user's line, then two lines (the call, its result) per step before it.
    assert f"{log}:6: message 'msg_2': field 'usage.{key}' is " in line
    assert "not a token count" in line and len(line) < 300


@pytest.mark.parametrize(
    ("stamp", "why"),
    [
        ("yesterday", "not a time"),
        ("2026-02-30T20:03:00Z", "not a time"),
        ("9999-01-01T00:00:00Z", "not a time between 2000 and 2100"),
        ("1970-01-01T00:00:00Z", "not a time between 2000 and 2100"),
        ("2026-02-11T19:00:00Z", "before the previous call's"),
    ],
)
def test_an_impossible_or_backwards_time_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stamp: str, why: str
) -> None:
    stamps = [f"2026-02-11T20:{i + 1:02d}:00Z" for i in range(4)]
    stamps[2] = stamp
    log = _log(tmp_path / "times.jsonl", [_usage(i, 1000, 0) for i in range(4)], stamps)
    with pytest.raises(RecordedUsageError, match=why):
        check_bill(load(log).messages, SONNET)
    line = one_line_error(
        call(capsys, "replay", str(log), "--window", "8000", "--price", "claude-sonnet-4-5")
    )
    assert line.startswith(f"compaction: error: {log}:6: message 'msg_2': ") and why in line


@pytest.mark.parametrize("odd", [1.5, float("nan"), True, "12", 10**40, -3])
def test_a_live_usage_with_an_odd_count_is_not_read_as_absent(odd: object) -> None:
    from compaction.pricing.usage import usage_tokens

    for usage in (
        {"input_tokens": 50, "cache_read_input_tokens": odd},
        {"input_tokens": 50, "cache_creation_input_tokens": odd},
        {"prompt_tokens": odd},
    ):
        with pytest.raises((TypeError, ValueError), match="usage"):
            usage_tokens(usage)
