"""OpenTelemetry for compaction: a span per run, a child span per layer, and metrics.

``instrument()`` subscribes to [`compaction.events`][]; nothing here is imported, and no
receiver is connected, until it is called, so an uninstrumented program pays nothing.
``uninstrument()`` disconnects again. Needs ``pip install 'compaction-ladder[otel]'``.

What is emitted (GenAI semantic conventions where they have a name, ``compaction.*`` otherwise):

- span ``compaction`` per pipeline run, a child of whatever span is current (say, the agent's
  step), with ``compaction.tokens.before`` / ``.after`` / ``.saved``, ``compaction.target``,
  ``compaction.messages``, ``compaction.strategies`` (the layers taken, in order),
  ``gen_ai.conversation.compacted`` (whether the conversation changed) and
  ``gen_ai.conversation.id`` when the run's labels carry ``conversation_id``; other scalar
  labels become ``compaction.label.<key>``. A run that raised ends with status ERROR.
- a child span ``compaction.layer <name>`` per layer asked, timed as it ran, with
  ``compaction.outcome`` (``applied`` or ``declined``), the tokens before/after or the decline
  reason; and ``compaction.summarize <name>`` per summariser call with
  ``gen_ai.usage.input_tokens`` / ``gen_ai.usage.output_tokens``.
- histograms ``compaction.duration`` (s; ``compaction.scope`` run / strategy / trigger),
  ``compaction.tokens.before``, ``compaction.tokens.after``, ``compaction.tokens.saved``
  (per run, and per applied layer with ``compaction.strategy``), ``gen_ai.client.token.usage``
  and ``gen_ai.client.operation.duration`` for summariser calls; counters
  ``compaction.summarizer.calls`` and ``compaction.failures``.

It relies on these signals and keyword arguments, and ignores any others it is sent:
``started`` (tokens, target, messages, labels), ``strategy_applied`` (name, before, after,
seconds), ``strategy_declined`` (name, reason, seconds, error), ``duration`` (scope, name,
seconds, ok), ``failed`` (name, error, stage), ``summarized`` (name, input_tokens,
output_tokens, seconds, ok) and, when it comes, ``compacted`` (fits). A run is closed on its
``duration`` event (sent for every run, also one that raised), so the span never depends on
``compacted`` being sent.

What a failure records: an ``exception`` event with ``exception.type`` and the frames of its
traceback (``exception.stacktrace``, without the message line), and status ERROR with the type
name as description. The exception's text (``exception.message``, and the status description)
is recorded only with ``instrument(record_exception_text=True)``: it is written by whoever
raised, and a summariser or proxy that echoes its input puts the conversation into it. Every
string attribute (text, stack, label values, reasons) is cut to about 1 kB.
"""

from __future__ import annotations

import contextvars
import threading
import time
import traceback
from collections.abc import Mapping
from typing import Any

from .. import events
from .._redact import bound, describe_error

__all__ = ["instrument", "instrumented", "uninstrument"]

_SCOPE = "compaction"


class _Run:
    """One pipeline run in progress: its span and what its events said so far."""

    __slots__ = ("after", "before", "fits", "labels", "span", "strategies", "target")

    def __init__(self, span: Any, before: int, target: int, labels: Mapping[str, Any]) -> None:
        self.span = span
        self.before = before
        self.after = before
        self.target = target
        self.labels = labels
        self.strategies: list[str] = []
        self.fits: bool | None = None


# The runs open in this thread or task, innermost last. Events are sent synchronously by the
# code doing the run, so the receiver sees the run's own context: concurrent runs in other
# threads or asyncio tasks never see each other's spans.
_runs: contextvars.ContextVar[tuple[_Run, ...]] = contextvars.ContextVar(
    "compaction_otel_runs", default=()
)


def _label_attributes(labels: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(labels, Mapping):
        return out
    for key, value in labels.items():
        if key == "conversation_id" and isinstance(value, str | int):
            out["gen_ai.conversation.id"] = bound(str(value))
        elif isinstance(value, str):
            out[f"compaction.label.{bound(str(key), 128)}"] = bound(value)
        elif isinstance(value, bool | int | float):
            out[f"compaction.label.{bound(str(key), 128)}"] = value
    return out


def _ns_ago(seconds: Any) -> tuple[int, int]:
    end = time.time_ns()
    try:
        return end - max(int(float(seconds) * 1e9), 0), end
    except (TypeError, ValueError):
        return end, end


class _Instrumentation:
    def __init__(
        self, tracer_provider: Any, meter_provider: Any, record_exception_text: bool = False
    ) -> None:
        from opentelemetry import metrics, trace

        self.record_text = record_exception_text
        self._trace = trace
        from .. import __version__

        self.tracer = trace.get_tracer(_SCOPE, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE, __version__, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "compaction.duration", unit="s", description="Time spent in a run, layer or trigger"
        )
        self.before = meter.create_histogram(
            "compaction.tokens.before", unit="{token}", description="Tokens when a run began"
        )
        self.after = meter.create_histogram(
            "compaction.tokens.after", unit="{token}", description="Tokens when a run ended"
        )
        self.saved = meter.create_histogram(
            "compaction.tokens.saved", unit="{token}", description="Tokens a run or layer saved"
        )
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Summariser tokens"
        )
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Summariser call time"
        )
        self.summarizer_calls = meter.create_counter(
            "compaction.summarizer.calls", unit="{call}", description="Summariser calls"
        )
        self.failures = meter.create_counter(
            "compaction.failures", unit="{failure}", description="Failures reported"
        )
        self.receivers = {
            events.started: self.on_started,
            events.strategy_applied: self.on_applied,
            events.strategy_declined: self.on_declined,
            events.compacted: self.on_compacted,
            events.duration: self.on_duration,
            events.failed: self.on_failed,
            events.summarized: self.on_summarized,
        }

    # -- subscription ----------------------------------------------------------------------

    def connect(self) -> None:
        for signal, receiver in self.receivers.items():
            signal.connect(receiver, weak=False)

    def disconnect(self) -> None:
        for signal, receiver in self.receivers.items():
            signal.disconnect(receiver)

    def _record_error(
        self,
        span: Any,
        error: Any,
        attributes: dict[str, Any] | None = None,
        *,
        status: bool = True,
    ) -> None:
        """The OTel ``exception`` event and ERROR status for ``error``, bounded, with its text
        only when the application asked for it (``Span.record_exception`` would write the
        whole message, and the traceback's last line repeats it)."""
        event = {"exception.type": describe_error(error, text=False), **(attributes or {})}
        if isinstance(error, BaseException):
            if self.record_text:
                event["exception.message"] = bound(str(error))
            if error.__traceback__ is not None:
                event["exception.stacktrace"] = bound(
                    "".join(traceback.format_tb(error.__traceback__))
                )
        span.add_event("exception", event)
        if not status:  # a layer's failure the run survived leaves the run's status alone
            return
        description = describe_error(error, text=self.record_text)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, description))

    # -- receivers (each takes **kwargs: new keyword arguments must never break a run) ------

    def _current(self) -> _Run | None:
        runs = _runs.get()
        return runs[-1] if runs else None

    def _child(self, run: _Run | None, name: str, seconds: Any, attributes: dict[str, Any]) -> Any:
        start, end = _ns_ago(seconds)
        context = self._trace.set_span_in_context(run.span) if run is not None else None
        span = self.tracer.start_span(
            name, context=context, attributes=attributes, start_time=start
        )
        return span, end

    def on_started(self, sender: Any, **kw: Any) -> None:
        labels = kw.get("labels") or {}
        before, target = int(kw.get("tokens") or 0), int(kw.get("target") or 0)
        attributes = {
            "compaction.tokens.before": before,
            "compaction.target": target,
            "compaction.messages": int(kw.get("messages") or 0),
            **_label_attributes(labels),
        }
        span = self.tracer.start_span("compaction", attributes=attributes)
        _runs.set((*_runs.get(), _Run(span, before, target, labels)))

    def on_applied(self, sender: Any, **kw: Any) -> None:
        run = self._current()
        name = str(kw.get("name", type(sender).__name__))
        before, after = int(kw.get("before") or 0), int(kw.get("after") or 0)
        span, end = self._child(
            run,
            f"compaction.layer {name}",
            kw.get("seconds"),
            {
                "compaction.strategy": name,
                "compaction.outcome": "applied",
                "compaction.tokens.before": before,
                "compaction.tokens.after": after,
                "compaction.tokens.saved": before - after,
            },
        )
        span.end(end_time=end)
        self.saved.record(before - after, {"compaction.strategy": name})
        if run is not None:
            run.after = after
            run.strategies.append(name)

    def on_declined(self, sender: Any, **kw: Any) -> None:
        run = self._current()
        name = str(kw.get("name", type(sender).__name__))
        span, end = self._child(
            run,
            f"compaction.layer {name}",
            kw.get("seconds"),
            {
                "compaction.strategy": name,
                "compaction.outcome": "declined",
                "compaction.decline_reason": bound(str(kw.get("reason", "declined"))),
            },
        )
        error = kw.get("error")
        if isinstance(error, BaseException):
            self._record_error(span, error)
        span.end(end_time=end)

    def on_compacted(self, sender: Any, **kw: Any) -> None:
        run = self._current()
        if run is not None and isinstance(kw.get("fits"), bool):
            run.fits = kw["fits"]

    def on_summarized(self, sender: Any, **kw: Any) -> None:
        run = self._current()
        name = str(kw.get("name", type(sender).__name__))
        ok = bool(kw.get("ok", True))
        usage = {
            "gen_ai.usage.input_tokens": int(kw.get("input_tokens") or 0),
            "gen_ai.usage.output_tokens": int(kw.get("output_tokens") or 0),
        }
        span, end = self._child(
            run,
            f"compaction.summarize {name}",
            kw.get("seconds"),
            {"compaction.strategy": name, "gen_ai.operation.name": "chat", **usage},
        )
        error = kw.get("error")
        if not ok:
            self._record_error(span, error)
        span.end(end_time=end)
        attributes = {"compaction.strategy": name, "gen_ai.operation.name": "chat"}
        self.summarizer_calls.add(1, {**attributes, "compaction.ok": ok})
        self.token_usage.record(
            usage["gen_ai.usage.input_tokens"], {**attributes, "gen_ai.token.type": "input"}
        )
        self.token_usage.record(
            usage["gen_ai.usage.output_tokens"], {**attributes, "gen_ai.token.type": "output"}
        )
        seconds = kw.get("seconds")
        if isinstance(seconds, int | float):
            self.operation_duration.record(float(seconds), attributes)

    def on_failed(self, sender: Any, **kw: Any) -> None:
        stage = str(kw.get("stage", "unknown"))
        self.failures.add(
            1, {"compaction.stage": stage, "compaction.strategy": str(kw.get("name"))}
        )
        run = self._current()
        error = kw.get("error")
        if run is not None and isinstance(error, BaseException):
            self._record_error(
                run.span, error, {"compaction.stage": bound(stage, 128)}, status=False
            )

    def on_duration(self, sender: Any, **kw: Any) -> None:
        scope = str(kw.get("scope", "run"))
        ok = bool(kw.get("ok", True))
        seconds = kw.get("seconds")
        attributes: dict[str, Any] = {"compaction.scope": scope, "compaction.ok": ok}
        if scope != "run":
            attributes["compaction.strategy"] = str(kw.get("name"))
        if isinstance(seconds, int | float):
            self.duration.record(float(seconds), attributes)
        if scope != "run":
            return
        runs = _runs.get()
        if not runs:
            return
        run = runs[-1]
        _runs.set(runs[:-1])
        saved = run.before - run.after
        span = run.span
        span.set_attributes(
            {
                "compaction.tokens.after": run.after,
                "compaction.tokens.saved": saved,
                "compaction.strategies": tuple(run.strategies),
                "gen_ai.conversation.compacted": bool(run.strategies),
                "compaction.fits": run.after <= run.target if run.fits is None else run.fits,
            }
        )
        if not ok:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, "compaction failed"))
        span.end()
        # No conversation id on metrics: one series per conversation would be unbounded.
        metric: dict[str, Any] = {"compaction.ok": ok}
        self.before.record(run.before, metric)
        self.after.record(run.after, metric)
        self.saved.record(saved, {**metric, "compaction.strategy": "pipeline"})


_lock = threading.Lock()
_active: _Instrumentation | None = None


def instrument(
    *, tracer_provider: Any = None, meter_provider: Any = None, record_exception_text: bool = False
) -> None:
    """Emit spans and metrics for every compaction from now on.

    ``tracer_provider`` / ``meter_provider`` default to the global ones OpenTelemetry was
    configured with. ``record_exception_text`` adds an exception's text (cut to about 1 kB) to
    its span event and status; off, a failure is recorded by its type and stack frames only,
    since the text may quote the conversation (see the module docstring). Calling it again
    replaces the earlier subscription (so a test or an app can switch providers);
    [`uninstrument`][] stops it.
    """
    global _active
    with _lock:
        if _active is not None:
            _active.disconnect()
        _active = _Instrumentation(tracer_provider, meter_provider, record_exception_text)
        _active.connect()


def uninstrument() -> None:
    """Stop emitting: disconnect every receiver [`instrument`][] connected."""
    global _active
    with _lock:
        if _active is not None:
            _active.disconnect()
            _active = None


def instrumented() -> bool:
    """True while [`instrument`][] is in effect."""
    return _active is not None
