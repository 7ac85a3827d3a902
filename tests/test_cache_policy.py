"""The cache-aware trigger: early when the cache is cold, never over the window, in batches."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import events
from compaction.formats import load
from compaction.pricing.cache_policy import CacheAware
from compaction.pricing.prices import price_for
from compaction.replay import replay
from compaction.tokens import TiktokenCounter
from compaction.trigger import Compactor

from .cost_logs import claude_code_log

SONNET = price_for("claude-sonnet-4-5")
COUNTER = TiktokenCounter()


def _run(messages, window, policy=None, **kw):
    compactor = Compactor(None, window, counter=COUNTER, policy=policy, **kw)
    return list(replay(messages, compactor, price=SONNET, ttl=300))


def _first_compaction(records):
    return next((r for r in records if r.compacted), None)


def test_a_cold_cache_is_compacted_early_and_a_warm_one_is_not(tmp_path):
    # 12 quick steps, a long pause (the cache expires), 12 quick steps.
    gaps = [5] * 12 + [900] + [5] * 12
    messages = load(claude_code_log(tmp_path / "s.jsonl", gaps)).messages
    cold_call = 12
    sizes = _run(messages, 10**7)
    window = int(sizes[cold_call].tokens_sent / 0.6)  # 60% full at the cold call
    default = _run(messages, window)
    aware = _run(messages, window, CacheAware(SONNET, ttl=300))
    assert _first_compaction(default).call > cold_call  # waits for 70%
    assert _first_compaction(aware).call == cold_call  # the cache is gone anyway
    # While warm, the same 60% does not trigger it: only the pause did.
    warm = [5] * 25
    warm_msgs = load(claude_code_log(tmp_path / "w.jsonl", warm)).messages
    first = _first_compaction(_run(warm_msgs, window, CacheAware(SONNET, ttl=300)))
    assert first is None or first.estimate >= 0.7 * window


def test_a_later_warm_mark_waits_longer(tmp_path):
    messages = load(claude_code_log(tmp_path / "s.jsonl", [5] * 30)).messages
    total = _run(messages, 10**7)[-1].tokens_sent
    window = total // 2
    default = _first_compaction(_run(messages, window))
    late = _first_compaction(_run(messages, window, CacheAware(SONNET, late=0.9)))
    assert default is not None and late is not None
    assert late.call > default.call
    assert late.estimate >= 0.9 * window > default.estimate


def test_each_rewrite_frees_a_batch_and_carries_its_estimated_net(tmp_path):
    messages = load(claude_code_log(tmp_path / "s.jsonl", [5] * 40)).messages
    window = _run(messages, 10**7)[-1].tokens_sent // 3
    seen = []

    def on_compacted(sender, **kw):
        seen.append(kw["labels"])

    events.compacted.connect(on_compacted)
    try:
        records = _run(messages, window, CacheAware(SONNET, min_free=0.4))
    finally:
        events.compacted.disconnect(on_compacted)
    taken = [r for r in records if r.compacted]
    assert taken
    for r in taken:
        if r.estimate <= window:  # a forced compaction (over the window) takes what it gets
            assert r.tokens_saved >= 0.4 * window
    assert seen and all(isinstance(s.get("estimated_net_usd"), float) for s in seen)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    gaps=st.lists(st.sampled_from([1, 30, 200, 400, 4000]), min_size=5, max_size=30),
    share=st.floats(0.2, 0.9),
    size=st.integers(50, 900),
    ttl=st.sampled_from([300, 3600]),
)
def test_no_request_is_ever_over_the_window(tmp_path, gaps, share, size, ttl):
    messages = load(claude_code_log(tmp_path / "h.jsonl", gaps, output_size=size)).messages
    total = COUNTER.count_messages(messages)
    window = max(int(total * share), 3 * COUNTER.count_messages(messages[:3]) + 2000)
    records = _run(messages, window, CacheAware(SONNET, ttl=ttl))
    assert all(r.tokens_sent <= window for r in records)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="early <= late"):
        CacheAware(SONNET, early=0.8, late=0.6)
    with pytest.raises(ValueError, match="floor < early"):
        CacheAware(SONNET, floor=0.6)
    with pytest.raises(TypeError, match="Price"):
        CacheAware("claude-sonnet-4-5")  # type: ignore[arg-type]


def test_the_opentelemetry_span_carries_the_estimated_net(tmp_path):
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from compaction.integrations import otel

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    otel.instrument(tracer_provider=provider)
    try:
        messages = load(claude_code_log(tmp_path / "s.jsonl", [5] * 20)).messages
        window = COUNTER.count_messages(messages) // 2
        compactor = Compactor(None, window, counter=COUNTER, policy=CacheAware(SONNET))
        compactor.before_call(messages)  # the whole run at once: far over the window
    finally:
        otel.uninstrument()
    runs = [s for s in spans.get_finished_spans() if s.name == "compaction"]
    assert runs
    assert all(isinstance(s.attributes["compaction.label.estimated_net_usd"], float) for s in runs)
