"""``connector sync status``: per (tenant, stream) the last run, watermark, lag and recent errors.

Lag is measured from the end of the last successful window (how old the stored data may be), not
from the watermark: a quiet ERP has an old watermark and still-fresh data. A run can still end
``ok`` with a watermark that does not move (records kept changing while it read, so it held the
watermark back), or having read ERP stamps ahead of the connector's clock: ``warnings`` says so,
and ``health`` is then ``warn``, never ``ok`` (``connector doctor`` shows the same verdict).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connector.sync.runlog import run_t
from connector.sync.state import all_states


@dataclass(frozen=True, slots=True)
class StreamStatus:
    tenant: str
    stream: str
    watermark: datetime | None
    last_run_status: str | None
    last_run_started_at: datetime | None
    last_run_finished_at: datetime | None
    last_run_error: str | None
    data_as_of: datetime | None  # window end of the last successful run
    lag_s: float | None
    lagging: bool
    failures_since_ok: int
    last_full_at: datetime | None
    last_key_scan_at: datetime | None
    last_run_problems: str | None = None  # records the last run skipped or cleaned, one per line
    latest_stamp: datetime | None = None  # the newest ERP stamp the last successful run read
    watermark_held_runs: int = 0  # latest successful runs in a row that held the watermark back
    warnings: tuple[str, ...] = ()  # a frozen or lagging watermark, clock skew: one line each
    health: str = "ok"  # ok, warn (lagging, interrupted, a warning above) or fail (last run failed)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_RECENT_RUNS = 20  # runs per stream looked at for a watermark held run after run
_FROZEN_AFTER = timedelta(days=1)  # beyond the lookback and SAP's whole days


_TENANT: Any = sa.bindparam("tenant")
_STREAM: Any = sa.bindparam("stream")
_LATEST = (
    sa.select(run_t)
    .where(run_t.c.tenant == _TENANT, run_t.c.stream == _STREAM)
    .order_by(run_t.c.id.desc())
    .limit(1)
)
_RECENT_OK = (
    sa.select(run_t.c.id, run_t.c.watermark_held, run_t.c.latest_stamp, run_t.c.window_end)
    .where(run_t.c.tenant == _TENANT, run_t.c.stream == _STREAM, run_t.c.status == "ok")
    .order_by(run_t.c.id.desc())
    .limit(_RECENT_RUNS)
)
_FAILURES_AFTER = sa.select(sa.func.count()).where(
    run_t.c.tenant == _TENANT,
    run_t.c.stream == _STREAM,
    run_t.c.status.in_(("failed", "abandoned")),
    run_t.c.id > sa.bindparam("after"),
)


def _run_keys(conn: Connection, tenant: str | None) -> list[tuple[str, str]]:
    """Every (tenant, stream) with runs: the distinct prefixes of the (tenant, stream, id) index."""
    query = sa.select(run_t.c.tenant, run_t.c.stream).distinct()
    if tenant is not None:
        query = query.where(run_t.c.tenant == tenant)
    return [(r.tenant, r.stream) for r in conn.execute(query)]


def sync_status(
    engine: Engine,
    *,
    now: datetime,
    expected_lag: timedelta,
    tenant: str | None = None,
    clock_skew_tolerance: timedelta = timedelta(seconds=300),
    lookback: timedelta = timedelta(seconds=300),
) -> list[StreamStatus]:
    """Status of every stream that has state or runs (optionally of one tenant), sorted by name."""
    with engine.connect() as conn:
        states = {(s.tenant, s.stream): s for s in all_states(conn)}
        keys = _run_keys(conn, tenant)
        # Per stream a few short ranges of the (tenant, stream, id) and (tenant, stream, status, id)
        # indexes, read backwards: a grouped or windowed read over every run scans them all.
        runs: dict[tuple[str, str], Any] = {}
        recent: dict[tuple[str, str], list[Any]] = {}
        failures_after_ok: dict[tuple[str, str], int] = {}
        for key in keys:
            bind = {"tenant": key[0], "stream": key[1]}
            runs[key] = conn.execute(_LATEST, bind).first()
            recent[key] = list(conn.execute(_RECENT_OK, bind))
            after = recent[key][0].id if recent[key] else 0
            failures_after_ok[key] = conn.execute(_FAILURES_AFTER, {**bind, "after": after}).scalar_one()
    last_ok = {key: (oks[0].id, oks[0].window_end) for key, oks in recent.items() if oks}
    out: list[StreamStatus] = []
    for key in sorted(set(states) | set(runs)):
        if tenant is not None and key[0] != tenant:
            continue
        state, run = states.get(key), runs.get(key)
        as_of = last_ok.get(key, (None, None))[1]
        lag = (now - as_of).total_seconds() if as_of is not None else None
        oks = recent.get(key, [])
        held = next((i for i, r in enumerate(oks) if not r.watermark_held), len(oks))
        latest_stamp = oks[0].latest_stamp if oks else None
        warnings = _warnings(
            held,
            latest_stamp,
            oks[0].window_end if oks else None,
            state.watermark if state else None,
            clock_skew_tolerance,
            lookback,
        )
        lagging = lag is None or lag > expected_lag.total_seconds()
        status = run.status if run else None
        health = (
            "fail"
            if status in ("failed", "abandoned")
            else "warn"
            if warnings or lagging or status != "ok"
            else "ok"
        )
        out.append(
            StreamStatus(
                tenant=key[0],
                stream=key[1],
                watermark=state.watermark if state else None,
                last_run_status=run.status if run else None,
                last_run_started_at=run.started_at if run else None,
                last_run_finished_at=run.finished_at if run else None,
                last_run_error=run.error if run else None,
                data_as_of=as_of,
                lag_s=lag,
                lagging=lagging,
                failures_since_ok=failures_after_ok.get(key, 0),
                last_full_at=state.last_full_at if state else None,
                last_key_scan_at=state.last_key_scan_at if state else None,
                last_run_problems=run.problems if run else None,
                latest_stamp=latest_stamp,
                watermark_held_runs=held,
                warnings=warnings,
                health=health,
            )
        )
    return out


def _warnings(
    held: int,
    latest_stamp: datetime | None,
    window_end: datetime | None,
    watermark: datetime | None,
    tolerance: timedelta,
    lookback: timedelta,
) -> tuple[str, ...]:
    """One line per reason to distrust an ``ok``: a held, frozen or lagging watermark, clock skew."""
    out: list[str] = []
    if held:
        out.append(
            f"watermark held back by the last {held} successful run(s): records kept changing while "
            "the window was read, so each run reads it again"
        )
    if latest_stamp is not None and window_end is not None:
        if latest_stamp - window_end > tolerance:
            out.append(
                f"clock skew: the ERP stamped records {_span(latest_stamp - window_end)} ahead of the "
                f"connector's clock (tolerance {int(tolerance.total_seconds())} s); they are stored, "
                "the watermark stops at each run's start"
            )
        reached = min(latest_stamp, window_end)
        if not held and (watermark is None or reached - watermark > lookback + _FROZEN_AFTER):
            shown = watermark.isoformat(timespec="minutes") if watermark else "none"
            out.append(
                f"watermark lagging: {shown} while the last run read records up to "
                f"{reached.isoformat(timespec='minutes')}"
            )
    return tuple(out)


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 86_400:
        return f"{seconds / 86_400:.1f} day(s)"
    if seconds >= 3_600:
        return f"{seconds / 3_600:.1f} hour(s)"
    return f"{seconds} s"
