"""OpenTelemetry: spans and metrics from real pipeline runs, read from the SDK's in-memory
exporters."""

from __future__ import annotations

import pytest

from compaction import CompactionPipeline, Message, ToolCall, events
from compaction.messages import assistant, system, tool, user
from compaction.strategies.sliding_window import SlidingWindow
from compaction.strategies.summary import Summary
from compaction.strategies.tool_results import ToolResults
from compaction.summarizers import ExtractiveSummarizer
from compaction.tokens import ApproximateCounter
from compaction.trigger import Compactor

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

from compaction.integrations import otel

COUNTER = ApproximateCounter()


def conversation(turns: int = 4, size: int = 600) -> list[Message]:
    msgs = [system("You are a coding agent.")]
    for t in range(turns):
        msgs.append(user(f"task {t}: fix src/t{t}.py"))
        for s in range(2):
            cid = f"t{t}s{s}"
            msgs.append(assistant(f"step {t}.{s}", [ToolCall(cid, "bash", {"cmd": f"cat {t}"})]))
            msgs.append(tool(cid, f"output {t}.{s} " + "o" * size, name="bash"))
    return msgs


@pytest.fixture
def telemetry():
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    otel.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield spans, reader, tracer_provider
    finally:
        otel.uninstrument()


def metrics(reader: InMemoryMetricReader) -> dict[str, list]:
    out: dict[str, list] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def ladder() -> CompactionPipeline:
    return (
        CompactionPipeline(counter=COUNTER)
        .use(ToolResults, keep_steps=1)
        .use(SlidingWindow, keep_steps=1)
        .run(Summary(summarizer=ExtractiveSummarizer()))
    )


def test_a_run_is_a_span_with_a_child_per_layer(telemetry):
    spans, reader, _ = telemetry
    messages = conversation()
    before = COUNTER.count_messages(messages)
    result = ladder().compact(messages, target=200, labels={"conversation_id": "conv-7"})
    assert result.changed
    finished = spans.get_finished_spans()
    (run,) = [s for s in finished if s.name == "compaction"]
    layers = [s for s in finished if s.name.startswith("compaction.layer ")]
    assert {s.parent.span_id for s in layers} == {run.context.span_id}
    applied = [s for s in layers if s.attributes["compaction.outcome"] == "applied"]
    assert [s.attributes["compaction.strategy"] for s in applied] == [
        a.strategy for a in result.applied
    ]
    assert run.attributes["gen_ai.conversation.id"] == "conv-7"
    assert run.attributes["compaction.tokens.before"] == before
    assert run.attributes["compaction.tokens.after"] == result.after
    assert run.attributes["compaction.tokens.saved"] == before - result.after
    assert run.attributes["gen_ai.conversation.compacted"] is True
    assert run.attributes["compaction.target"] == 200
    assert run.status.status_code != StatusCode.ERROR
    for layer in layers:  # each layer's span lies inside the run's
        assert run.start_time <= layer.start_time <= layer.end_time <= run.end_time

    points = metrics(reader)
    (run_before,) = points["compaction.tokens.before"]
    assert run_before.sum == before and run_before.count == 1
    assert points["compaction.tokens.after"][0].sum == result.after
    per_layer = {
        p.attributes["compaction.strategy"]: p.sum for p in points["compaction.tokens.saved"]
    }
    assert per_layer["pipeline"] == before - result.after
    for a in result.applied:
        assert per_layer[a.strategy] == a.before - a.after
    scopes = {p.attributes["compaction.scope"] for p in points["compaction.duration"]}
    assert {"run", "strategy"} <= scopes


def test_summariser_calls_are_metered_with_genai_names(telemetry):
    spans, reader, _ = telemetry
    pipeline = CompactionPipeline(counter=COUNTER).run(Summary(summarizer=ExtractiveSummarizer()))
    result = pipeline.compact(conversation(6), target=400)
    assert any(a.strategy == "summary" for a in result.applied)
    summaries = [s for s in spans.get_finished_spans() if s.name.startswith("compaction.summarize")]
    assert summaries
    assert summaries[0].attributes["gen_ai.usage.input_tokens"] > 0
    assert summaries[0].attributes["gen_ai.usage.output_tokens"] > 0
    points = metrics(reader)
    calls = sum(p.value for p in points["compaction.summarizer.calls"])
    assert calls == len(summaries)
    kinds = {p.attributes["gen_ai.token.type"] for p in points["gen_ai.client.token.usage"]}
    assert kinds == {"input", "output"}


def test_a_failing_layer_marks_its_span_and_the_run_goes_on(telemetry):
    from compaction import Strategy

    class Broken(Strategy):
        name = "broken"

        def rewrite(self, messages, target, **kwargs):
            raise RuntimeError("boom")

    spans, reader, _ = telemetry
    result = (
        CompactionPipeline(counter=COUNTER)
        .use(Broken())
        .use(ToolResults, keep_steps=1)
        .compact(conversation(), target=300)
    )
    finished = spans.get_finished_spans()
    (broken,) = [s for s in finished if s.name == "compaction.layer broken"]
    assert broken.status.status_code == StatusCode.ERROR
    assert broken.attributes["compaction.decline_reason"] == "raised"
    assert any(e.name == "exception" for e in broken.events)
    (run,) = [s for s in finished if s.name == "compaction"]
    assert run.status.status_code != StatusCode.ERROR
    assert run.attributes["compaction.tokens.after"] == result.after
    assert sum(p.value for p in metrics(reader)["compaction.failures"]) >= 1


def test_a_run_that_raises_ends_its_span_in_error(telemetry):
    from compaction import Strategy

    class Fatal(Strategy):
        name = "fatal"

        def rewrite(self, messages, target, **kwargs):
            raise RuntimeError("strict")

    spans, _, _ = telemetry
    with pytest.raises(RuntimeError):
        CompactionPipeline(counter=COUNTER, strict=True).use(Fatal()).compact(
            conversation(), target=300
        )
    (run,) = [s for s in spans.get_finished_spans() if s.name == "compaction"]
    assert run.status.status_code == StatusCode.ERROR


def test_runs_nest_under_the_callers_span_and_the_trigger_labels_ride_along(telemetry):
    spans, _, tracer_provider = telemetry
    compactor = Compactor(ladder(), window=2000, counter=COUNTER, labels={"agent": "a1"})
    tracer = tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("agent step") as step:
        compactor.before_call(conversation(6))
    (run,) = [s for s in spans.get_finished_spans() if s.name == "compaction"]
    assert run.parent.span_id == step.get_span_context().span_id
    assert run.attributes["compaction.label.agent"] == "a1"
    assert run.attributes["compaction.label.window"] == 2000


def test_uninstrument_stops_everything_and_costs_nothing():
    before = {s: len(list(s.receivers_for(None))) for s in _signals()}
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    otel.instrument(tracer_provider=provider, meter_provider=MeterProvider())
    otel.instrument(tracer_provider=provider, meter_provider=MeterProvider())  # replaces
    assert otel.instrumented()
    otel.uninstrument()
    assert not otel.instrumented()
    ladder().compact(conversation(), target=300)
    assert spans.get_finished_spans() == ()
    assert {s: len(list(s.receivers_for(None))) for s in _signals()} == before


def test_extra_keyword_arguments_are_tolerated(telemetry):
    spans, _, _ = telemetry
    events.started.send(None, tokens=10, target=5, messages=2, labels={}, future="x")
    events.strategy_applied.send(None, name="x", before=10, after=4, seconds=0.0, new=1)
    events.compacted.send(None, before=10, after=4, fits=True, changed=True, extra=[1])
    events.duration.send(None, scope="run", name="pipeline", seconds=0.0, ok=True, more=2)
    (run,) = [s for s in spans.get_finished_spans() if s.name == "compaction"]
    assert run.attributes["compaction.tokens.saved"] == 6


def _signals():
    return [
        events.started,
        events.strategy_applied,
        events.strategy_declined,
        events.compacted,
        events.duration,
        events.failed,
        events.summarized,
    ]
