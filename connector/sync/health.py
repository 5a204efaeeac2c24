"""The sync's verdict for ``connector doctor``: the worst stream health of ``sync status``.

A stream whose last run failed is a ``fail``; a lagging stream, or an ``ok`` run whose watermark is
held back, frozen or behind, or whose ERP stamps run ahead of the connector's clock, is a ``warn``
with the first such line, never ``ok``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy.engine import Engine

from connector.settings import Settings
from connector.sync.status import StreamStatus, sync_status

Verdict = Literal["ok", "warn", "fail"]


def sync_verdict(engine: Engine, settings: Settings, now: datetime) -> tuple[Verdict, str]:
    """(verdict, one-line detail) over every stream ``sync status`` lists."""
    sync = settings.sync
    statuses = sync_status(
        engine,
        now=now,
        expected_lag=timedelta(minutes=sync.expected_lag_minutes),
        clock_skew_tolerance=timedelta(seconds=sync.clock_skew_tolerance_s),
        lookback=timedelta(seconds=sync.lookback_seconds),
    )
    if not statuses:
        return "warn", "no sync has run yet (`connector sync`)"
    failed = [s for s in statuses if s.health == "fail"]
    if failed:
        return "fail", f"{len(failed)} stream(s) failed last; {_line(failed[0], failed[0].last_run_error)}"
    warned = [s for s in statuses if s.health == "warn"]
    if warned:
        first = warned[0]
        reason = first.warnings[0] if first.warnings else _lag_reason(first)
        return "warn", f"{len(warned)} of {len(statuses)} stream(s) need a look; {_line(first, reason)}"
    return "ok", f"{len(statuses)} stream(s) in time"


def _line(status: StreamStatus, reason: str | None) -> str:
    return f"{status.tenant}/{status.stream}: {' '.join((reason or 'no reason recorded').split())}"


def _lag_reason(status: StreamStatus) -> str:
    if status.last_run_status != "ok":
        return f"last run {status.last_run_status}"
    if status.lag_s is None:
        return "no successful run yet"
    return f"data {int(status.lag_s // 60)} min old (sync.expected_lag_minutes exceeded)"
