"""OpenTelemetry traces and metrics: sync runs and pages, context builds, recalls, LLM calls.

Everything goes through ``opentelemetry-api``, which does nothing until an SDK is configured:
``connector --otel-console ...`` (or ``otel.console``) prints spans and metrics to stderr, and
``otel.otlp`` (the ``otel`` extra) sends them to the collector named by the standard
``OTEL_EXPORTER_OTLP_*`` variables. An application that configures its own SDK gets the same
spans under the tracer and meter named ``connector``.

Attributes carry ids and counts only (tenant, customer and session ids, stream names, record,
token and hit counts, timings): never a query, a prompt, a case or turn text, or a secret. A
failure is recorded as its exception type, never its message.

The instrumented code calls the decorators and the reporter below, so each hot path gains one
line; the instruments live in a :class:`Telemetry` that tests can swap for in-memory providers.
"""

from __future__ import annotations

import atexit
import functools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, Status, StatusCode

from connector.errors import ConfigError

if TYPE_CHECKING:
    from connector.sync.progress import Reporter
    from connector.sync.result import StreamResult

_P = ParamSpec("_P")
_R = TypeVar("_R")

SCOPE = "connector"


class Telemetry:
    """The tracer and instruments, from the given providers or OpenTelemetry's global ones."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self.sync_records = meter.create_counter(
            "connector.sync.records", unit="{record}", description="ERP records read and written, by outcome"
        )
        self.sync_lag = meter.create_gauge(
            "connector.sync.lag", unit="s", description="How far a stream's watermark trails the run's end"
        )
        self.context_duration = meter.create_histogram(
            "connector.context.duration", unit="ms", description="build_context latency"
        )
        self.context_tokens = meter.create_histogram(
            "connector.context.tokens", unit="{token}", description="Tokens of a built context"
        )
        self.recall_duration = meter.create_histogram(
            "connector.recall.duration", unit="ms", description="Past-case recall latency"
        )
        self.llm_duration = meter.create_histogram(
            "connector.llm.duration", unit="ms", description="LLM call latency"
        )


_current = Telemetry()
_lock = threading.Lock()


def current() -> Telemetry:
    return _current


def use(telemetry: Telemetry) -> Telemetry:
    """Route the library's spans and metrics to ``telemetry``; returns the previous one."""
    global _current
    with _lock:
        previous, _current = _current, telemetry
    return previous


# Spans ---------------------------------------------------------------------------------------
@contextmanager
def _span(name: str, attributes: dict[str, Any]) -> Iterator[Span]:
    with current().tracer.start_as_current_span(
        name, attributes=_clean(attributes), record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if v is not None}


def _customer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The customer id of a ``method(self, customer_id, ...)`` call, as a span attribute."""
    customer_id = args[1] if len(args) > 1 else kwargs.get("customer_id")
    return {"connector.customer_id": customer_id if isinstance(customer_id, str) else None}


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def traced_context(build: Callable[_P, _R]) -> Callable[_P, _R]:
    """Span ``connector.build_context`` plus latency and token metrics around ContextBuilder.build."""

    @functools.wraps(build)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        attributes = _customer(args, kwargs) | {
            "connector.session_id": kwargs.get("session_id"),
            "connector.party_kind": kwargs.get("party_kind", "customer"),
        }
        started = time.perf_counter()
        with _span("connector.build_context", attributes) as span:
            result = build(*args, **kwargs)
            elapsed = _ms(started)
            tenant = getattr(result, "tenant", None)
            span.set_attributes(_context_attributes(result))
            current().context_duration.record(elapsed, {"connector.tenant": tenant or ""})
            current().context_tokens.record(
                getattr(result, "token_count", 0), {"connector.tenant": tenant or ""}
            )
            return result

    return wrapper


def _context_attributes(result: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "connector.tenant": result.tenant,
        "connector.context.tokens": result.token_count,
        "connector.context.token_budget": result.token_budget,
        "connector.context.warnings": len(result.warnings),
        "connector.context.over_budget": result.over_budget,
    }
    for section in result.sections:
        attributes[f"connector.context.section.{section.name}.tokens"] = section.tokens
        attributes[f"connector.context.section.{section.name}.items"] = len(section.items)
    for step, ms in result.timings_ms.items():
        attributes[f"connector.context.timing.{step}_ms"] = ms
    return attributes


def traced_recall(kind: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Span ``connector.recall`` and the recall latency metric around a recall method of ``kind``
    (``cases``: EpisodicMemory.recall; ``turns``: ConversationMemory.recall)."""

    def decorate(recall: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(recall)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            attributes = _customer(args, kwargs) | {
                "connector.tenant": kwargs.get("tenant"),
                "connector.recall.kind": kind,
                "connector.recall.k": kwargs.get("k"),
            }
            started = time.perf_counter()
            with _span("connector.recall", attributes) as span:
                hits = recall(*args, **kwargs)
                span.set_attribute("connector.recall.hits", len(hits) if isinstance(hits, list) else 0)
                current().recall_duration.record(_ms(started), {"connector.recall.kind": kind})
                return hits

        return wrapper

    return decorate


def traced_llm(complete: Callable[_P, _R]) -> Callable[_P, _R]:
    """Span ``connector.llm`` (model, token usage; never the prompt) around LLMClient.complete."""

    @functools.wraps(complete)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        model = getattr(args[0], "model", None) if args else None
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "connector.llm.json_mode": bool(kwargs.get("json_mode", False)),
        }
        started = time.perf_counter()
        with _span("connector.llm", attributes) as span:
            completion = complete(*args, **kwargs)
            span.set_attributes(
                _clean(
                    {
                        "gen_ai.response.model": getattr(completion, "model", None),
                        "gen_ai.usage.input_tokens": getattr(completion, "prompt_tokens", None),
                        "gen_ai.usage.output_tokens": getattr(completion, "completion_tokens", None),
                    }
                )
            )
            current().llm_duration.record(_ms(started), {"gen_ai.request.model": model or ""})
            return completion

    return wrapper


# Sync ----------------------------------------------------------------------------------------
class TracingReporter:
    """Wraps the sync runner's reporter: a span per (tenant, stream) run, a child span per page,
    and the record and lag metrics when the run finishes. The inner reporter sees every event."""

    def __init__(self, inner: Reporter) -> None:
        self.inner = inner
        self._runs: dict[tuple[str, str], tuple[Span, int]] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> TracingReporter:
        self.inner.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.inner.__exit__(exc_type, exc, tb)

    def stream_started(self, tenant: str, stream: str, since: datetime | None, until: datetime) -> None:
        span = current().tracer.start_span(
            "connector.sync.run",
            attributes=_clean(
                {
                    "connector.tenant": tenant,
                    "connector.stream": stream,
                    "connector.sync.window_start": since.isoformat() if since else None,
                    "connector.sync.window_end": until.isoformat(),
                }
            ),
        )
        with self._lock:
            self._runs[(tenant, stream)] = (span, time.time_ns())
        self.inner.stream_started(tenant, stream, since, until)

    def page_done(self, tenant: str, stream: str, page: int, records: int, total_records: int) -> None:
        now = time.time_ns()
        with self._lock:
            run = self._runs.get((tenant, stream))
            if run is not None:
                self._runs[(tenant, stream)] = (run[0], now)
        if run is not None:
            page_span = current().tracer.start_span(
                "connector.sync.page",
                context=trace.set_span_in_context(run[0]),
                start_time=run[1],
                attributes={
                    "connector.tenant": tenant,
                    "connector.stream": stream,
                    "connector.sync.page": page,
                    "connector.sync.records_read": records,
                },
            )
            page_span.end(end_time=now)
        self.inner.page_done(tenant, stream, page, records, total_records)

    def stream_finished(self, result: StreamResult) -> None:
        with self._lock:
            run = self._runs.pop((result.tenant, result.stream), None)
        telemetry = current()
        where = {"connector.tenant": result.tenant, "connector.stream": result.stream}
        for outcome in ("inserted", "updated", "unchanged", "deleted", "skipped"):
            count = getattr(result, outcome)
            if count:
                telemetry.sync_records.add(count, where | {"connector.sync.outcome": outcome})
        if result.watermark is not None and result.window_end is not None:
            lag = (result.window_end - result.watermark).total_seconds()
            telemetry.sync_lag.set(max(lag, 0.0), where)
        if run is not None:
            span = run[0]
            span.set_attributes(
                _clean(
                    {
                        "connector.sync.run_id": result.run_id,
                        "connector.sync.mode": result.mode,
                        "connector.sync.status": result.status,
                        "connector.sync.pages": result.pages,
                        "connector.sync.records_read": result.records_read,
                        "connector.sync.records_written": result.inserted + result.updated + result.deleted,
                        "connector.sync.inserted": result.inserted,
                        "connector.sync.updated": result.updated,
                        "connector.sync.unchanged": result.unchanged,
                        "connector.sync.deleted": result.deleted,
                        "connector.sync.skipped": result.skipped,
                        "connector.sync.requests": result.requests,
                        "connector.sync.retries": result.retries,
                    }
                )
            )
            if result.status == "failed":
                span.set_status(Status(StatusCode.ERROR, "sync run failed"))
            span.end()
        self.inner.stream_finished(result)

    def message(self, level: str, text: str, **fields: Any) -> None:
        self.inner.message(level, text, **fields)


# Configuration -------------------------------------------------------------------------------
def configure(
    *, console: bool = False, otlp: bool = False, service_name: str = "erp-memory-connector"
) -> None:
    """Install an OpenTelemetry SDK that prints to stderr (``console``) and/or exports over OTLP.

    Does nothing when neither is asked for (the API stays a no-op, or whatever SDK the host
    application configured). Providers are flushed when the process exits.
    """
    if not (console or otlp):
        return
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import (
            ConsoleMetricExporter,
            MetricExporter,
            PeriodicExportingMetricReader,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError:
        raise ConfigError(
            "OpenTelemetry output needs the SDK: pip install 'erp-memory-connector[otel]'"
        ) from None
    resource = Resource.create({"service.name": service_name})
    tracer_provider = TracerProvider(resource=resource)
    metric_exporters: list[MetricExporter] = []
    if console:
        tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        metric_exporters.append(ConsoleMetricExporter(out=sys.stderr))
    if otlp:
        try:
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ConfigError(
                "otel.otlp needs the OTLP exporter: pip install 'erp-memory-connector[otel]'"
            ) from None
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        metric_exporters.append(OTLPMetricExporter())
    readers = [PeriodicExportingMetricReader(exporter) for exporter in metric_exporters]
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    trace.set_tracer_provider(tracer_provider)  # the MCP SDK's request spans go there too
    metrics.set_meter_provider(meter_provider)
    use(Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider))
    atexit.register(meter_provider.shutdown)
    atexit.register(tracer_provider.shutdown)
