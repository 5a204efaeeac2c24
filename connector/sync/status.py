"""``connector sync status``: per (tenant, stream) the last run, watermark, lag and recent errors.

Lag is measured from the end of the last successful window (how old the stored data may be), not
from the watermark: a quiet ERP has an old watermark and still-fresh data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sync_status(
    engine: Engine, *, now: datetime, expected_lag: timedelta, tenant: str | None = None
) -> list[StreamStatus]:
    """Status of every stream that has state or runs (optionally of one tenant), sorted by name."""
    with engine.connect() as conn:
        states = {(s.tenant, s.stream): s for s in all_states(conn)}
        latest = conn.execute(
            sa.select(run_t).where(
                run_t.c.id.in_(sa.select(sa.func.max(run_t.c.id)).group_by(run_t.c.tenant, run_t.c.stream))
            )
        ).all()
        last_ok = {
            (r.tenant, r.stream): (r.id, r.window_end)
            for r in conn.execute(
                sa.select(run_t.c.tenant, run_t.c.stream, run_t.c.id, run_t.c.window_end).where(
                    run_t.c.id.in_(
                        sa.select(sa.func.max(run_t.c.id))
                        .where(run_t.c.status == "ok")
                        .group_by(run_t.c.tenant, run_t.c.stream)
                    )
                )
            )
        }
        failures = {
            (r.tenant, r.stream): r.n
            for r in conn.execute(
                sa.select(run_t.c.tenant, run_t.c.stream, sa.func.count().label("n"))
                .where(run_t.c.status.in_(("failed", "abandoned")))
                .group_by(run_t.c.tenant, run_t.c.stream)
            )
        }
        failures_after_ok: dict[tuple[str, str], int] = {}
        for key in failures:
            ok_id = last_ok.get(key, (0, None))[0]
            failures_after_ok[key] = conn.execute(
                sa.select(sa.func.count()).where(
                    run_t.c.tenant == key[0],
                    run_t.c.stream == key[1],
                    run_t.c.status.in_(("failed", "abandoned")),
                    run_t.c.id > ok_id,
                )
            ).scalar_one()
    runs = {(r.tenant, r.stream): r for r in latest}
    out: list[StreamStatus] = []
    for key in sorted(set(states) | set(runs)):
        if tenant is not None and key[0] != tenant:
            continue
        state, run = states.get(key), runs.get(key)
        as_of = last_ok.get(key, (None, None))[1]
        lag = (now - as_of).total_seconds() if as_of is not None else None
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
                lagging=lag is None or lag > expected_lag.total_seconds(),
                failures_since_ok=failures_after_ok.get(key, 0),
                last_full_at=state.last_full_at if state else None,
                last_key_scan_at=state.last_key_scan_at if state else None,
                last_run_problems=run.problems if run else None,
            )
        )
    return out
