"""Sync: tenants x streams with their last run, lag and a chart of recent runs; one run in full."""

from __future__ import annotations

from starlette.responses import Response

from connector.console.principals import tenant_visible
from connector.console.queries.sync import run_detail, stream_rows
from connector.console.render import when
from connector.console.svg import runs_chart
from connector.console.web import PageError, View, not_found

RUN_FIELDS = (
    "mode", "status", "started_at", "finished_at", "duration_s", "window_start", "window_end", "pages",
    "records_read", "inserted", "updated", "unchanged", "deleted", "skipped", "requests", "retries",
    "latest_stamp", "watermark_held",
)  # fmt: skip


def streams(view: View) -> Response:
    memory = view.memory
    now = memory.clock.now()
    rows = stream_rows(memory.engine, memory.settings, now, view.principal.tenants)
    charts = [
        runs_chart(f"{r.status.tenant} / {r.status.stream}: records read and lag, last runs", r.points)
        for r in rows
    ]
    view.audit("sync")
    return view.render("sync.html", nav="sync", rows=rows, charts=charts, now=now)


def run(view: View) -> Response:
    raw = view.value("id")
    if raw is None or not raw.isdigit():
        raise PageError("give a run id: /sync/run?id=123")
    found = run_detail(view.memory.engine, int(raw))
    if found is None or not tenant_visible(view.principal, found["tenant"]):
        raise not_found(f"no sync run {raw}")
    fields = []
    for name in RUN_FIELDS:
        value = found[name]
        shown = when(value) if hasattr(value, "year") else ("—" if value is None else str(value))
        fields.append((name, shown))
    view.audit("sync_run", found["tenant"])
    problems = (found["problems"] or "").splitlines()
    return view.render("run.html", nav="sync", run=found, fields=fields, problems=problems)
