"""The Sync page's reads: every stream's status (``connector sync status``'s), its last run's
counts, the recent runs for its chart, and one run in full."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.console.svg import RunPoint
from connector.db.reads import read_connection
from connector.settings import Settings
from connector.sync.runlog import run_t
from connector.sync.status import StreamStatus, sync_status

CHART_RUNS = 20  # runs per stream in its chart


@dataclass(frozen=True, slots=True)
class StreamRow:
    status: StreamStatus
    last_run_id: int | None
    records_read: int
    written: int  # inserted + updated + deleted
    retries: int
    problems: int  # lines in the last run's problems
    points: tuple[RunPoint, ...]


def stream_rows(
    engine: Engine, settings: Settings, now: datetime, tenants: frozenset[str] | None
) -> list[StreamRow]:
    """Every (tenant, stream) the principal's tenants have, with its last run and recent runs."""
    sync = settings.sync
    statuses = [
        s
        for s in sync_status(
            engine,
            now=now,
            expected_lag=timedelta(minutes=sync.expected_lag_minutes),
            clock_skew_tolerance=timedelta(seconds=sync.clock_skew_tolerance_s),
            lookback=timedelta(seconds=sync.lookback_seconds),
        )
        if tenants is None or s.tenant in tenants
    ]
    recent = _recent_runs(engine, {(s.tenant, s.stream) for s in statuses})
    rows = []
    for s in statuses:
        runs = recent.get((s.tenant, s.stream), [])
        last = runs[-1] if runs else None
        rows.append(
            StreamRow(
                status=s,
                last_run_id=last.id if last is not None else None,
                records_read=last.records_read if last is not None else 0,
                written=(last.inserted + last.updated + last.deleted) if last is not None else 0,
                retries=last.retries if last is not None else 0,
                problems=len((last.problems or "").splitlines()) if last is not None else 0,
                points=_points(runs),
            )
        )
    return rows


# One stream's latest runs: a range of the (tenant, stream, started_at) index, read backwards.
_TENANT: Any = sa.bindparam("tenant")
_STREAM: Any = sa.bindparam("stream")
_RECENT = (
    sa.select(run_t)
    .where(run_t.c.tenant == _TENANT, run_t.c.stream == _STREAM)
    .order_by(run_t.c.started_at.desc(), run_t.c.id.desc())
    .limit(CHART_RUNS)
)


def _recent_runs(engine: Engine, keys: set[tuple[str, str]]) -> dict[tuple[str, str], list[Any]]:
    """The last :data:`CHART_RUNS` runs of each stream, oldest first: per stream a short index
    range (a window over every run would sort them all, and runs are never few)."""
    out: dict[tuple[str, str], list[Any]] = defaultdict(list)
    with read_connection(engine) as conn:
        for tenant, stream in sorted(keys):
            rows = conn.execute(_RECENT, {"tenant": tenant, "stream": stream}).all()
            out[(tenant, stream)] = list(reversed(rows))
    return out


def _points(runs: list[Any]) -> tuple[RunPoint, ...]:
    """Each run with the lag before it: its start minus the window end of the last successful run
    before it (how old the stored data was when it started)."""
    points = []
    data_end: datetime | None = None
    for r in runs:
        lag = (r.started_at - data_end).total_seconds() if data_end is not None else None
        points.append(RunPoint(r.id, r.started_at, r.status, r.records_read, lag))
        if r.status == "ok" and r.window_end is not None:
            data_end = r.window_end
    return tuple(points)


def run_detail(engine: Engine, run_id: int) -> dict[str, Any] | None:
    with read_connection(engine) as conn:
        row = conn.execute(sa.select(run_t).where(run_t.c.id == run_id)).first()
    return dict(row._mapping) if row is not None else None
