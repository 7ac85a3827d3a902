"""What a failure leaves in traces: exception text only when asked, every string bounded.

A summariser (or a proxy in front of one) that quotes its input in its error message puts the
whole conversation into the exception; before this, that text went verbatim into span events
and status descriptions, once per failure."""

from __future__ import annotations

import pytest

from compaction import CompactionPipeline, Summary
from compaction._redact import LIMIT
from compaction.messages import assistant, system, user

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from compaction.integrations import otel

SECRET = "sk-live-CANARY"


def conversation():
    turns = [
        m
        for k in range(8)
        for m in (user(f"turn {k}: my key is {SECRET} " + "detail " * 300), assistant(f"ok {k}"))
    ]
    return [system("s"), *turns, user("final")]


def echoing_summariser(transcript: str, instructions: str) -> str:
    raise RuntimeError("upstream 400, you sent: " + transcript)


def traced(record_exception_text: bool, labels=None):
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    otel.instrument(tracer_provider=provider, record_exception_text=record_exception_text)
    try:
        CompactionPipeline().run(Summary(echoing_summariser)).compact(
            conversation(), target=1500, labels=labels
        )
    finally:
        otel.uninstrument()
    return spans.get_finished_spans()


def strings(spans) -> list[str]:
    out = [s.status.description or "" for s in spans]
    for span in spans:
        out += [str(k) for k in (span.attributes or {})]
        out += [str(v) for v in (span.attributes or {}).values()]
        for event in span.events:
            out += [str(v) for v in (event.attributes or {}).values()]
    return out


def test_exception_text_stays_out_of_spans_by_default():
    spans = traced(record_exception_text=False)
    failed = [s for s in spans if s.status.status_code == StatusCode.ERROR]
    assert failed, "the failing summariser calls are marked"
    exceptions = [e for s in failed for e in s.events if e.name == "exception"]
    assert exceptions and all(e.attributes["exception.type"] == "RuntimeError" for e in exceptions)
    assert all("exception.message" not in e.attributes for e in exceptions)
    values = strings(spans)
    assert not [v for v in values if SECRET in v]
    assert max(map(len, values)) <= LIMIT


def test_exception_text_is_recorded_bounded_when_asked():
    spans = traced(record_exception_text=True)
    messages = [
        e.attributes["exception.message"]
        for s in spans
        for e in s.events
        if e.name == "exception" and "exception.message" in e.attributes
    ]
    assert messages and all(m.startswith("upstream 400, you sent:") for m in messages)
    assert max(map(len, strings(spans))) <= LIMIT


def test_label_values_and_keys_are_bounded():
    huge = "v" * 200_000
    spans = traced(record_exception_text=False, labels={"note": huge, "k" * 5000: "x"})
    (run,) = [s for s in spans if s.name == "compaction"]
    assert run.attributes["compaction.label.note"].startswith("vvvv")
    assert max(map(len, strings(spans))) <= LIMIT
