"""The sync's spans and metrics: a span per (tenant, stream) run, a child span per page, and the
record and lag metrics when a run finishes.

It lives with the sync (the reporter protocol is the sync's) and reaches OpenTelemetry through
:mod:`connector.telemetry`, which knows nothing of the sync: the import arrow runs one way.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from types import TracebackType
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from connector.sync.progress import Reporter
from connector.sync.result import StreamResult
from connector.telemetry import clean_attributes, current


class TracingReporter:
    """Wraps the sync runner's reporter; the inner reporter sees every event."""

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
            attributes=clean_attributes(
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
                clean_attributes(
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
