"""The runs table: one ``sync_run`` row per (tenant, stream) run.

The row is created when the run starts, its counters are updated inside each page's transaction
(so they are true even after a crash), and it is closed with a status and a one-line error. A row
left ``running`` by a killed process is marked ``abandoned`` by the next run that holds the lock.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.db.models import SyncRun

run_t: sa.Table = SyncRun.__table__  # type: ignore[attr-defined]
MAX_PROBLEM_LINES = 100


@dataclass(slots=True)
class RunCounters:
    pages: int = 0
    records_read: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    requests: int = 0
    retries: int = 0

    def as_values(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclass(slots=True)
class RunRecord:
    """What the runner knows about the run in progress."""

    id: int
    tenant: str
    stream: str
    mode: str
    started_at: datetime
    window_start: datetime | None
    window_end: datetime | None
    counters: RunCounters = field(default_factory=RunCounters)
    problems: list[str] = field(default_factory=list)  # one line per skipped or cleaned record

    def problems_text(self) -> str | None:
        """The problems as stored: the first ``MAX_PROBLEM_LINES`` lines and how many more there were."""
        if not self.problems:
            return None
        shown = self.problems[:MAX_PROBLEM_LINES]
        more = len(self.problems) - len(shown)
        return "\n".join(shown + ([f"... and {more} more"] if more else []))


def abandon_stale_runs(conn: Connection, tenant: str, stream: str, now: datetime) -> int:
    """Close rows a killed process left ``running`` (call only while holding the stream lock)."""
    return conn.execute(
        run_t.update()
        .where(run_t.c.tenant == tenant, run_t.c.stream == stream, run_t.c.status == "running")
        .values(status="abandoned", finished_at=now, error="the process ended without closing the run")
    ).rowcount


def start_run(
    conn: Connection,
    tenant: str,
    stream: str,
    *,
    mode: str,
    started_at: datetime,
    window_start: datetime | None,
    window_end: datetime | None,
) -> RunRecord:
    run_id = conn.execute(
        run_t.insert()
        .values(
            tenant=tenant,
            stream=stream,
            mode=mode,
            status="running",
            started_at=started_at,
            window_start=window_start,
            window_end=window_end,
        )
        .returning(run_t.c.id)
    ).scalar_one()
    return RunRecord(run_id, tenant, stream, mode, started_at, window_start, window_end)


def save_counters(conn: Connection, run: RunRecord) -> None:
    conn.execute(
        run_t.update()
        .where(run_t.c.id == run.id)
        .values(problems=run.problems_text(), **run.counters.as_values())
    )


def finish_run(
    conn: Connection,
    run: RunRecord,
    *,
    status: str,
    finished_at: datetime,
    error: str | None = None,
    latest_stamp: datetime | None = None,
    watermark_held: bool | None = None,
) -> None:
    """Close the run; ``latest_stamp`` is the newest ERP stamp it read, ``watermark_held`` whether
    it left the watermark behind records it read (see ``connector.sync.status``)."""
    conn.execute(
        run_t.update()
        .where(run_t.c.id == run.id)
        .values(
            latest_stamp=latest_stamp,
            watermark_held=watermark_held,
            status=status,
            finished_at=finished_at,
            duration_s=(finished_at - run.started_at).total_seconds(),
            error=error,
            problems=run.problems_text(),
            **run.counters.as_values(),
        )
    )
