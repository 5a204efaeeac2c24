"""Spans and metrics reach the collector however a process stops: ``connector mcp --http`` on
SIGTERM (exit 143) or SIGINT (exit 130), a sync stopped by SIGTERM, a command that ends. A real
process exports over OTLP to a receiver in this test; metrics are only exported at shutdown (the
periodic export is a minute away), so a metric received proves the exit-time flush ran."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from mcp_servers import TOKEN, http_client, http_server, run, server_env, synced
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from ports import free_port
from sqlalchemy.engine import Engine
from sync_rigs import Rig, rig_factory, rigs_on, sync_env

from connector import telemetry
from connector.settings import TelemetrySettings

__all__ = ["rig_factory"]


@dataclass
class Received:
    spans: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request: Any, context: Any) -> Any:
        names = [s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        with self.received.lock:
            self.received.spans.extend(names)
        return trace_service_pb2.ExportTraceServiceResponse()


class _Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request: Any, context: Any) -> Any:
        names = [m.name for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]
        with self.received.lock:
            self.received.metrics.extend(names)
        return metrics_service_pb2.ExportMetricsServiceResponse()


@pytest.fixture
def collector() -> Iterator[tuple[Received, dict[str, str]]]:
    """An OTLP/gRPC receiver on loopback and the environment that points a process at it."""
    received = Received()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Traces(received), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_Metrics(received), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    env = {
        "CONNECTOR_OTEL__OTLP": "true",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
    }
    yield received, env
    server.stop(grace=None)


@pytest.fixture
def sqlite_rigs(sqlite_engine: Engine) -> Iterator[Callable[..., Rig]]:
    yield from rigs_on(sqlite_engine)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_the_http_server_flushes_spans_and_metrics_when_stopped_by_a_signal(
    sqlite_rigs: Callable[..., Rig],
    tmp_path: Path,
    collector: tuple[Received, dict[str, str]],
    signum: int,
    code: int,
) -> None:
    received, otlp = collector
    rig = synced(sqlite_rigs)
    customer = sorted(rig.fake.keys("Customer"))[0]
    process, url = http_server(tmp_path, server_env(tmp_path, rig, CONNECTOR_MCP_TOKEN=TOKEN, **otlp))
    try:

        async def session() -> None:
            async with http_client(url, TOKEN) as client:
                got = await client.call_tool("get_context", {"customer_id": customer, "query": "balance"})
                assert not got.is_error
                turn = {"session_id": "x-1", "customer_id": customer, "role": "user", "content": "hi"}
                assert not (await client.call_tool("record_turn", turn)).is_error

        run(session)
    finally:
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    assert {"connector.build_context", "create_memory"} <= set(received.spans), received.spans
    assert {"connector.context.duration", "connector.memory.operation.duration"} <= set(received.metrics), err


def test_a_sync_stopped_by_sigterm_flushes_its_spans_and_metrics(
    rig_factory: Callable[..., Rig],
    tmp_path: Path,
    collector: tuple[Received, dict[str, str]],
) -> None:
    received, otlp = collector
    rig = rig_factory(streams=["Customer"], customers=150)
    db_url = rig.engine.url.render_as_string(hide_password=False)
    process = subprocess.Popen(
        [sys.executable, "-m", "connector.cli", "sync"],
        env=sync_env(tmp_path, rig, db_url) | otlp,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    rig.hooked.on_list = lambda entity, n: os.kill(process.pid, signal.SIGTERM) if n == 3 else None
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err
    assert "connector.sync.run" in received.spans, err
    assert "connector.sync.records" in received.metrics, err


def test_a_dead_collector_does_not_fail_a_command(sqlite_rigs: Callable[..., Rig], tmp_path: Path) -> None:
    rig = synced(sqlite_rigs)
    customer = sorted(rig.fake.keys("Customer"))[0]
    dead = {
        "CONNECTOR_OTEL__OTLP": "true",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",  # nobody listens there
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
    }
    command = [sys.executable, "-m", "connector.cli", "context", customer, "balance"]
    env = server_env(tmp_path, rig, **dead)
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert customer in done.stdout


def test_every_export_is_bounded_by_the_export_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dead collector costs at most ``otel.export_timeout_s`` (default 2 s) per export at exit,
    not the exporters' 10 s each plus retries (18 s for one CLI command before)."""
    assert TelemetrySettings().export_timeout_s == 2.0
    built: dict[str, float | None] = {}

    class Spans(SpanExporter):
        def __init__(self, timeout: float | None = None) -> None:
            built["spans"] = timeout

        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class Metrics(MetricExporter):
        def __init__(self, timeout: float | None = None) -> None:
            super().__init__()
            built["metrics"] = timeout

        def export(self, data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            return None

    monkeypatch.setattr("opentelemetry.exporter.otlp.proto.grpc.trace_exporter.OTLPSpanExporter", Spans)
    monkeypatch.setattr("opentelemetry.exporter.otlp.proto.grpc.metric_exporter.OTLPMetricExporter", Metrics)
    monkeypatch.setattr("opentelemetry.trace.set_tracer_provider", lambda provider: None)
    monkeypatch.setattr("opentelemetry.metrics.set_meter_provider", lambda provider: None)
    previous = telemetry.current()
    try:
        telemetry.configure(otlp=True, export_timeout_s=TelemetrySettings().export_timeout_s)
        assert built == {"spans": 2.0, "metrics": 2.0}
    finally:
        telemetry.shutdown()
        telemetry.use(previous)
