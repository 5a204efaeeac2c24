"""OpenTelemetry traces and metrics: memory reads and writes, context builds, sync runs, LLM calls.

Everything goes through ``opentelemetry-api``, which does nothing until an SDK is configured:
``connector --otel-console ...`` (or ``otel.console``) prints spans and metrics to stderr, and
``otel.otlp`` (the ``otel`` extra) sends them to the collector named by the standard
``OTEL_EXPORTER_OTLP_*`` variables. An application that configures its own SDK gets the same
spans under the tracer and meter named ``connector``.

Memory operations follow the OpenTelemetry GenAI memory conventions: a span named for its
``gen_ai.operation.name`` (``search_memory``, ``create_memory``, ``update_memory``,
``delete_memory``) with ``gen_ai.memory.store.id``, ``gen_ai.memory.record.id`` and
``gen_ai.memory.record.count``; the conventions have no scope, so ``connector.memory.scope``
(``customer`` or ``session``) and the tenant, customer and session ids are the project's own.
Durations are in seconds, as the conventions have them.

Attributes carry ids and counts only (tenant, customer and session ids, stream names, record,
token and hit counts, timings): never a query, a prompt, a case or turn text, or a secret. A
failure is recorded as its exception type, never its message.

The instrumented code calls the decorators below (the sync's reporter lives with the sync, in
:mod:`connector.sync.tracing`), so each hot path gains one line; the instruments live in a
:class:`Telemetry` that tests can swap for in-memory providers. :func:`shutdown` flushes what a
configured SDK holds; the CLI calls it on every way out (end of run, SIGINT, SIGTERM).
"""

from __future__ import annotations

import atexit
import functools
import inspect
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from connector.errors import ConfigError

_P = ParamSpec("_P")
_R = TypeVar("_R")

SCOPE = "connector"

# gen_ai.operation.name values of the GenAI memory conventions
SEARCH_MEMORY = "search_memory"
CREATE_MEMORY = "create_memory"
UPDATE_MEMORY = "update_memory"
DELETE_MEMORY = "delete_memory"


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
            "connector.context.duration", unit="s", description="build_context latency"
        )
        self.context_tokens = meter.create_histogram(
            "connector.context.tokens", unit="{token}", description="Tokens of a built context"
        )
        self.memory_duration = meter.create_histogram(
            "connector.memory.operation.duration",
            unit="s",
            description="Latency of a memory operation (search_memory, create_memory, ...), by store",
        )
        self.llm_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="LLM call latency"
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
def _span(name: str, attributes: dict[str, Any], kind: SpanKind = SpanKind.INTERNAL) -> Iterator[Span]:
    with current().tracer.start_as_current_span(
        name,
        kind=kind,
        attributes=clean_attributes(attributes),
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def clean_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes that have a value (OpenTelemetry refuses None)."""
    return {k: v for k, v in attributes.items() if v is not None}


def _customer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The customer id of a ``method(self, customer_id, ...)`` call, as a span attribute."""
    customer_id = args[1] if len(args) > 1 else kwargs.get("customer_id")
    return {"connector.customer_id": customer_id if isinstance(customer_id, str) else None}


def _seconds(started: float) -> float:
    return time.perf_counter() - started


def traced_context(build: Callable[_P, _R]) -> Callable[_P, _R]:
    """Span ``connector.build_context`` plus latency and token metrics around ContextBuilder.build;
    the recalls inside it are its ``search_memory`` children."""

    @functools.wraps(build)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        attributes = _customer(args, kwargs) | {
            "connector.session_id": kwargs.get("session_id"),
            "connector.party_kind": kwargs.get("party_kind", "customer"),
        }
        started = time.perf_counter()
        with _span("connector.build_context", attributes) as span:
            result = build(*args, **kwargs)
            elapsed = _seconds(started)
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
        attributes[f"connector.context.duration.{step}"] = ms / 1000  # seconds, like every duration here
    return attributes


RECALL_STORES = {"cases": "episodic_cases", "turns": "conversation_turns"}


def traced_recall(kind: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A ``search_memory`` span and the operation's latency around a recall method of ``kind``
    (``cases``: EpisodicMemory.recall; ``turns``: ConversationMemory.recall)."""
    store = RECALL_STORES[kind]

    def decorate(recall: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(recall)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            attributes = _memory_attributes(SEARCH_MEMORY, store, "customer") | _customer(args, kwargs)
            attributes |= {
                "connector.tenant": kwargs.get("tenant"),
                "connector.recall.kind": kind,
                "connector.recall.k": kwargs.get("k"),
            }
            started = time.perf_counter()
            with _span(SEARCH_MEMORY, attributes) as span:
                try:
                    hits = recall(*args, **kwargs)
                finally:
                    _record_memory_duration(SEARCH_MEMORY, store, started)
                count = len(hits) if isinstance(hits, list) else 0
                span.set_attribute("gen_ai.memory.record.count", count)
                span.set_attribute("connector.recall.hits", count)
                return hits

        return wrapper

    return decorate


def traced_memory(
    operation: str, store: str | None, scope: str
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A GenAI memory span (``operation`` on ``store``, ``scope`` customer or session) and the
    operation's latency around a ``Memory`` method. The ids come from the call's ``tenant``,
    ``customer_id`` and ``session_id`` arguments, the record id and count from its result."""

    def decorate(call: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(call)

        @functools.wraps(call)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                named = signature.bind(*args, **kwargs).arguments
            except TypeError:
                named = {}
            attributes = _memory_attributes(operation, store, scope) | {
                "connector.tenant": _text(named.get("tenant")),
                "connector.customer_id": _text(named.get("customer_id")),
                "gen_ai.conversation.id": _text(named.get("session_id")),
            }
            started = time.perf_counter()
            with _span(operation, attributes) as span:
                try:
                    result = call(*args, **kwargs)
                finally:
                    _record_memory_duration(operation, store, started)
                span.set_attributes(_written(result))
                return result

        return wrapper

    return decorate


def _memory_attributes(operation: str, store: str | None, scope: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": operation,
        "gen_ai.memory.store.id": store,
        "connector.memory.scope": scope,
    }


def _record_memory_duration(operation: str, store: str | None, started: float) -> None:
    current().memory_duration.record(
        _seconds(started), {"gen_ai.operation.name": operation, "gen_ai.memory.store.id": store or "all"}
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _written(result: object) -> dict[str, Any]:
    """The record id (an entry, a turn, a fact; never a value) and count of a write's result."""
    if isinstance(result, dict):  # forget: items removed per store
        return {"gen_ai.memory.record.count": sum(v for v in result.values() if isinstance(v, int))}
    record_id: object = getattr(result, "entry_id", None)
    if record_id is None and hasattr(result, "seq") and hasattr(result, "role"):  # a Turn
        record_id = f"{getattr(result, 'session_id', '')}#{result.seq}"
    fact_id = getattr(result, "id", None)
    if record_id is None and isinstance(fact_id, int):  # a LearnedFact
        record_id = str(fact_id)
    return clean_attributes({"gen_ai.memory.record.id": _text(record_id), "gen_ai.memory.record.count": 1})


def traced_llm(complete: Callable[_P, _R]) -> Callable[_P, _R]:
    """A GenAI inference span ``chat {model}`` (model, token usage; never the prompt) and the
    ``gen_ai.client.operation.duration`` metric around LLMClient.complete."""

    @functools.wraps(complete)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        model = getattr(args[0], "model", None) if args else None
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",  # the OpenAI-compatible API is the one spoken
            "gen_ai.request.model": model,
            "connector.llm.json_mode": bool(kwargs.get("json_mode", False)),
        }
        started = time.perf_counter()
        name = f"chat {model}" if model else "chat"
        with _span(name, attributes, SpanKind.CLIENT) as span:
            try:
                completion = complete(*args, **kwargs)
            finally:
                current().llm_duration.record(
                    _seconds(started), {"gen_ai.operation.name": "chat", "gen_ai.request.model": model or ""}
                )
            span.set_attributes(
                clean_attributes(
                    {
                        "gen_ai.response.model": getattr(completion, "model", None),
                        "gen_ai.usage.input_tokens": getattr(completion, "prompt_tokens", None),
                        "gen_ai.usage.output_tokens": getattr(completion, "completion_tokens", None),
                    }
                )
            )
            return completion

    return wrapper


# Configuration -------------------------------------------------------------------------------
_installed: list[Callable[[], None]] = []  # the shutdown of the SDK configure() installed


def configure(
    *,
    console: bool = False,
    otlp: bool = False,
    service_name: str = "erp-memory-connector",
    export_timeout_s: float = 2.0,
) -> None:
    """Install an OpenTelemetry SDK that prints to stderr (``console``) and/or exports over OTLP.

    Does nothing when neither is asked for (the API stays a no-op, or whatever SDK the host
    application configured). Every export gives up after ``export_timeout_s`` (retries included),
    so a dead collector delays the exit by seconds, not minutes. :func:`shutdown` flushes and stops
    the providers; it also runs when the interpreter exits normally.
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
    timeout_ms = max(1, int(export_timeout_s * 1000))
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
        tracer_provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(timeout=export_timeout_s), export_timeout_millis=timeout_ms)
        )
        metric_exporters.append(OTLPMetricExporter(timeout=export_timeout_s))
    readers = [PeriodicExportingMetricReader(e, export_timeout_millis=timeout_ms) for e in metric_exporters]
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    trace.set_tracer_provider(tracer_provider)  # the MCP SDK's request spans go there too
    metrics.set_meter_provider(meter_provider)
    use(Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider))

    def stop() -> None:
        tracer_provider.shutdown()  # ends with the spans' export: before the metrics of the same calls
        meter_provider.shutdown(timeout_millis=timeout_ms * 2)

    with _lock:
        first = not _installed
        _installed.append(stop)
    if first:
        atexit.register(shutdown)


def shutdown() -> None:
    """Flush and stop the SDK that :func:`configure` installed (once; later calls do nothing).

    The CLI calls it however a command ends, a signal included; a process killed by a signal it
    does not handle would skip the interpreter's exit hooks and lose what was not exported yet.
    """
    with _lock:
        stops = list(_installed)
        _installed.clear()
    for stop in stops:
        stop()
