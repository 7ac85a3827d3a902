"""Prices as data, the prompt-cache cost model, priced replay, and what compactions earned."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.formats import load
from compaction.pricing.cost import CacheMeter, CostTotals
from compaction.pricing.earnings import earnings
from compaction.pricing.prices import PriceError, default_prices, load_prices, price_for
from compaction.replay import ReplayTotals, replay
from compaction.tokens import TiktokenCounter
from compaction.trigger import Compactor

from .cost_logs import claude_code_log

SONNET = price_for("claude-sonnet-4-5")
GPT = price_for("gpt-5")

# -- the price table ------------------------------------------------------------------------


def test_shipped_table_is_dated_and_sourced_for_both_providers():
    table = default_prices()
    providers = {p.provider for p in table.values()}
    assert {"anthropic", "openai"} <= providers
    for p in table.values():
        assert p.source.startswith("https://"), p.model
        assert len(p.date) == 10 and p.date[4] == "-", p.model
        assert p.cache_read < p.input, p.model
        if p.cache == "breakpoint":
            # Anthropic: a 5-minute and a 1-hour write, both above the input price.
            assert set(p.cache_write) == {300, 3600}
            assert all(w > p.input for w in p.cache_write.values())
        else:
            assert p.write_price() == 0.0
    assert price_for("gpt-5").min_prefix == 1024 and price_for("gpt-5").step == 128


def test_a_dated_snapshot_or_a_routed_name_finds_its_row():
    assert price_for("claude-haiku-4-5-20251001").model == "claude-haiku-4-5"
    assert price_for("openai/gpt-5-mini").model == "gpt-5-mini"
    assert price_for("gpt-5-mini").model == "gpt-5-mini"  # not the shorter gpt-5
    with pytest.raises(PriceError, match="no price for model 'llama-9'.*--prices"):
        price_for("llama-9")


GOOD_ROW = """
[models.m]
provider = "anthropic"
input = 3.0
output = 15.0
cache_read = 0.3
cache_write = { "300" = 3.75 }
cache = "breakpoint"
ttl = [300]
min_prefix = 1024
"""


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("input = 3.0", "input = -1"), ":4: model 'm': field 'input' must be a finite number"),
        (("input = 3.0", "input = 1e308"), "field 'input' must be a finite number from 0 to"),
        (("input = 3.0", "input = nan"), "field 'input' must be a finite number"),
        (('{ "300" = 3.75 }', '{ "300" = 1e308 }'), "field 'cache_write.300' must be a finite"),
        (('{ "300" = 3.75 }', '{ " 300" = 3.75 }'), "field 'cache_write': ' 300' is not seconds"),
        (('{ "300" = 3.75 }', '{ "-300" = 3.75 }'), "field 'cache_write': '-300' is not seconds"),
        (('{ "300" = 3.75 }', '{ "300" = 3.75, "600" = 4 }'), "a price for a 600s TTL"),
        (("ttl = [300]", "ttl = [300, 300]"), "field 'ttl' lists a TTL twice"),
        (("ttl = [300]", "ttl = [1000000000]"), "field 'ttl' must be a whole number from 1"),
        (("ttl = [300]", "ttl = [true]"), "field 'ttl' must be a whole number"),
        (
            ("min_prefix = 1024", "min_prefix = 1024\ncache_reads = 1"),
            "unknown field 'cache_reads'",
        ),
        (('cache = "breakpoint"', 'cahce = "breakpoint"'), ":8: model 'm': unknown field 'cahce'"),
        (("[models.m]", "version = 2\n[models.m]"), "field 'version' must be 1, got 2"),
        (("[models.m]", 'version = "1"\n[models.m]'), "field 'version' must be 1, got '1'"),
        (("[models.m]", "modles = 1\n[models.m]"), "unknown top-level key 'modles'"),
        (("min_prefix = 1024", 'min_prefix = 1024\nsource = "\\u001b[31mred"'), "printable text"),
        (("[models.m]", '[models."m\\u001b[2J"]'), "must be 1 to 200 printable characters"),
        (("input = 3.0", 'input = "3"'), "model 'm': field 'input' must be a number"),
        (("input = 3.0\n", ""), "model 'm': field 'input' must be a number"),
        (('cache = "breakpoint"', 'cache = "magic"'), "model 'm': field 'cache' must be one of"),
        (("ttl = [300]", "ttl = [300, 3600]"), "model 'm': field 'cache_write' has no price"),
        (("ttl = [300]", "ttl = []"), "model 'm': field 'ttl' must be a non-empty list"),
        (("min_prefix = 1024", "min_prefix = 0"), "model 'm': field 'min_prefix' must be"),
        (('{ "300" = 3.75 }', '{ "soon" = 3.75 }'), "field 'cache_write': 'soon' is not seconds"),
        (("[models.m]", "[models.m\n"), "not valid TOML"),
        (("[models.m]", "[other]"), "unknown top-level key 'other'"),
        (("[models.m]", "version = 1\n[providers.p]"), "expected [models.NAME] tables"),
    ],
)
def test_a_bad_table_is_refused_naming_file_model_and_field(tmp_path, edit, message):
    path = tmp_path / "prices.toml"
    path.write_text(GOOD_ROW.replace(*edit), encoding="utf-8")
    with pytest.raises(PriceError) as info:
        load_prices(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)
    assert str(info.value).isprintable()  # nothing from the file reaches a terminal raw


def test_a_table_of_ones_own_is_used(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text(GOOD_ROW, encoding="utf-8")
    assert load_prices(path)["m"].write_price(300) == 3.75
    with pytest.raises(PriceError, match=r"cannot read"):
        load_prices(tmp_path / "missing.toml")


# -- the cache model ------------------------------------------------------------------------


def test_a_warm_cache_is_read_and_a_cold_one_written_again():
    meter = CacheMeter(SONNET, ttl=300)
    first = meter.call(0, 10_000, 0, 100)
    assert (first.cache_read, first.cache_write, first.uncached) == (0, 10_000, 0)
    warm = meter.call(60, 12_000, 10_000, 100)
    assert (warm.cache_read, warm.cache_write) == (10_000, 2_000)
    cold = meter.call(60 + 301, 13_000, 12_000, 100)  # the gap exceeds the TTL
    assert (cold.cache_read, cold.cache_write) == (0, 13_000)
    expected = (13_000 * 3.75 + 100 * 15.0) / 1e6
    assert math.isclose(cold.cost, expected)


def test_reads_keep_the_entry_alive_past_its_first_ttl():
    meter = CacheMeter(SONNET, ttl=300)
    meter.call(0, 5_000, 0, 0)
    for k in range(1, 6):  # every 200 s for 1000 s: each read refreshes the entry
        c = meter.call(200 * k, 5_000 + k, 5_000 + k - 1, 0)
        assert c.cache_read == 5_000 + k - 1


def test_the_fixed_head_survives_a_compaction():
    meter = CacheMeter(SONNET, ttl=300)
    meter.call(0, 20_000, 0, 0, fixed=4_000)
    after = meter.call(10, 9_000, 4_000, 0, fixed=4_000)  # only the head is shared
    assert (after.cache_read, after.cache_write) == (4_000, 5_000)


def test_openai_caches_by_itself_in_steps_and_charges_no_write():
    meter = CacheMeter(GPT)
    meter.call(0, 3_000, 0, 0)
    c = meter.call(5, 3_500, 3_000, 0)
    assert c.cache_write == 0
    assert c.cache_read == 1024 + (3_000 - 1024) // 128 * 128
    assert c.uncached == 3_500 - c.cache_read
    small = CacheMeter(GPT)
    small.call(0, 900, 0, 0)
    assert small.call(1, 1_000, 900, 0).cache_read == 0  # under the 1024-token minimum


calls = st.lists(
    st.tuples(
        st.floats(0, 4000, allow_nan=False),
        st.integers(0, 200_000),
        st.floats(0, 1),
        st.integers(0, 5000),
        st.integers(0, 30_000),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(calls=calls, model=st.sampled_from(sorted(default_prices())), ttl_pick=st.integers(0, 1))
def test_the_input_is_always_split_exactly_and_priced_by_the_table(calls, model, ttl_pick):
    price = price_for(model)
    meter = CacheMeter(price, price.ttl[min(ttl_pick, len(price.ttl) - 1)])
    at = 0.0
    for gap, tokens, share, output, fixed in calls:
        at += gap
        prefix = int(tokens * share)
        c = meter.call(at, tokens, prefix, output, fixed=fixed)
        assert c.cache_read + c.cache_write + c.uncached == tokens
        assert min(c.cache_read, c.cache_write, c.uncached) >= 0
        assert c.cache_read <= max(prefix, min(fixed, tokens))
        if price.cache == "automatic":
            assert c.cache_write == 0
        expected = (
            c.cache_read * price.cache_read
            + c.cache_write * meter.write_price
            + c.uncached * price.input
            + output * price.output
        ) / 1e6
        assert math.isclose(c.cost, expected, rel_tol=1e-9, abs_tol=1e-12)


# -- priced replay ------------------------------------------------------------------------


def test_replay_prices_each_call_with_the_logs_own_times(tmp_path):
    log = claude_code_log(tmp_path / "s.jsonl", [10, 10, 400, 10, 10])
    messages = load(log).messages
    compactor = Compactor(None, 10**7, counter=TiktokenCounter())
    records = list(replay(messages, compactor, price=SONNET, ttl=300))
    assert [r.timed for r in records][:5] == [True] * 5
    gaps = [b.at - a.at for a, b in itertools.pairwise(records)]
    assert gaps[:4] == [10, 400, 10, 10]
    # Nothing compacted with a huge window: the run is its own baseline, call for call.
    assert all(r.cost == r.baseline for r in records)
    assert records[2].cost is not None and records[2].cost.cache_read == 0  # 400 s > TTL
    assert records[3].cost is not None and records[3].cost.cache_read > 0
    totals = ReplayTotals.of(records)
    assert totals.cost == totals.baseline == CostTotals.of(r.cost for r in records)
    # The recorded output where the log has it (50 a call), else a local count of the answer.
    last = TiktokenCounter().count(messages[-1])
    assert [r.output_tokens for r in records] == [50] * 5 + [last]
    assert totals.cost is not None and totals.cost.output == 5 * 50 + last


def test_without_times_the_cadence_is_used(tmp_path):
    log = claude_code_log(tmp_path / "s.jsonl", [10, 10, 10], usage=False)
    plain = [m.replace(meta={}) for m in load(log).messages]
    compactor = Compactor(None, 10**7, counter=TiktokenCounter())
    records = list(replay(plain, compactor, price=SONNET, cadence=400))
    assert [r.at for r in records] == [0, 400, 800, 1200]
    assert not any(r.timed for r in records)
    assert all(r.cost and r.cost.cache_read == 0 for r in records)  # always past the TTL
    with pytest.raises(ValueError, match="cadence"):
        list(replay(plain, compactor, price=SONNET, cadence=-1))


def test_what_each_compaction_earned_adds_up_to_the_difference(tmp_path):
    log = claude_code_log(tmp_path / "s.jsonl", [20] * 30, output_size=600)
    messages = load(log).messages
    counter = TiktokenCounter()
    window = counter.count_messages(messages) // 3
    records = list(replay(messages, Compactor(None, window, counter=counter), price=SONNET))
    found = earnings(records, SONNET)
    assert len(found) == sum(r.compacted for r in records) >= 2
    assert sum(e.calls for e in found) == len(records) - records.index(
        next(r for r in records if r.compacted)
    )
    total = ReplayTotals.of(records)
    assert total.cost is not None and total.baseline is not None
    assert math.isclose(
        sum(e.net for e in found), total.baseline.cost - total.cost.cost, rel_tol=1e-9
    )
    assert all(e.rewrite >= 0 for e in found)


def test_a_path_that_is_not_a_table_is_a_clear_error(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(PriceError, match="not UTF-8"):
        load_prices(bad)
    with pytest.raises(PriceError, match="too big"):
        big = tmp_path / "big.toml"
        big.write_text("#" * (2 << 20))
        load_prices(big)
    assert isinstance(Path(bad), Path)


def test_a_model_summary_is_charged_to_the_compaction_that_asked_for_it(tmp_path):
    from compaction import events
    from compaction.pipeline import CompactionPipeline
    from compaction.strategies.summary import Summary

    def brief(transcript: str, instructions: str) -> str:  # stands for a model call
        return "Ran the tests; parser.py still fails."

    counter = TiktokenCounter()
    pipeline = CompactionPipeline(counter=counter).run(Summary(summarizer=brief))
    messages = load(claude_code_log(tmp_path / "s.jsonl", [20] * 20, output_size=300)).messages
    window = counter.count_messages(messages) // 3
    calls: list[tuple[int, int]] = []

    def on_summarized(sender, **kw):
        calls.append((kw["input_tokens"], kw["output_tokens"]))

    events.summarized.connect(on_summarized)
    try:
        compactor = Compactor(pipeline, window, counter=counter)
        records = list(replay(messages, compactor, price=SONNET))
    finally:
        events.summarized.disconnect(on_summarized)
    found = earnings(records, SONNET)
    assert calls and found
    expected = sum(i * SONNET.input + o * SONNET.output for i, o in calls) / 1e6
    assert math.isclose(sum(e.summary for e in found), expected, rel_tol=1e-9)
    # The headline total is what the run paid: the summariser's calls included, so the nets
    # of the compactions add up to the difference it shows.
    total = ReplayTotals.of(records)
    assert total.cost is not None and total.baseline is not None
    assert math.isclose(total.cost.summary, expected, rel_tol=1e-9)
    assert math.isclose(
        sum(e.net for e in found), total.baseline.cost - total.cost.cost, rel_tol=1e-9
    )
