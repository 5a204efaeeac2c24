"""``connector schedule``: one long-running process for the periodic jobs (APScheduler 3).

Jobs: each tenant's sync on ``tenant.sync_interval_minutes``; episodic retention every
``retention.retention_interval_hours``; learned-fact consolidation every
``facts.consolidate_interval_hours``; learned-fact decay daily. Every job has ``max_instances=1``
and ``coalesce=True``, so a slow run is never overlapped by itself and missed runs collapse into
one. The stream locks still apply, so a cron-started ``connector sync`` and the scheduler never
sync the same stream at once. SIGTERM/SIGINT stop the scheduler, let a running sync finish and
commit its current page and log out of the ERP, then return.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler

from connector.errors import ConnectorError
from connector.settings import Settings
from connector.sync.progress import JsonReporter, Reporter
from connector.sync.runner import SyncRunner
from connector.sync.signals import StopFlag, stop_on_signals

log = logging.getLogger("connector.schedule")

JOB_DEFAULTS = {"max_instances": 1, "coalesce": True, "misfire_grace_time": 3600}


class Retention(Protocol):
    def apply_retention(self) -> object: ...


class FactUpkeep(Protocol):
    def consolidate(self) -> object: ...
    def decay(self) -> object: ...


class Deployment(Protocol):
    """What the scheduled jobs run on: ``Memory`` satisfies it."""

    @property
    def settings(self) -> Settings: ...
    @property
    def episodic(self) -> Retention: ...
    @property
    def facts(self) -> FactUpkeep: ...
    @property
    def conversations(self) -> Retention: ...
    @property
    def history(self) -> Retention: ...
    @property
    def audit(self) -> Retention: ...
    def sync_runner(
        self, *, reporter: Reporter | None = None, stop: StopFlag | None = None, pause_gc: bool = False
    ) -> SyncRunner: ...


def sync_job(
    memory: Deployment, tenant: str, stop: StopFlag, reporter: Reporter, pause_gc: bool = False
) -> None:
    """One scheduled sync of a tenant; failures are logged, never raised into the scheduler."""
    if stop.requested:
        return
    try:
        report = memory.sync_runner(reporter=reporter, stop=stop, pause_gc=pause_gc).run(tenant)
    except ConnectorError as exc:
        log.error("sync of %s failed: %s: %s", tenant, type(exc).__name__, exc)
        return
    problem = report.first_problem()
    if problem is None:
        log.info("sync of %s done: %d stream(s) ok", tenant, len(report.results))
    else:
        log.warning(
            "sync of %s: %s/%s %s: %s", tenant, problem.tenant, problem.stream, problem.status, problem.error
        )


def maintenance_job(name: str, action: Callable[[], Any]) -> Callable[[], None]:
    """Wrap a maintenance call so a failure is logged and the scheduler keeps running."""

    def run() -> None:
        try:
            report = action()
        except ConnectorError as exc:
            log.error("maintenance %s failed: %s: %s", name, type(exc).__name__, exc)
            return
        log.info("maintenance %s done: %s", name, report)

    run.__name__ = f"maintenance_{name}"
    return run


def _retention(memory: Deployment) -> tuple[object, object, object, object]:
    """Retention of cases, of indexed conversation turns, of the ERP change history and of the
    audit trail (one job)."""
    return (
        memory.episodic.apply_retention(),
        memory.conversations.apply_retention(),
        memory.history.apply_retention(),
        memory.audit.apply_retention(),
    )


def add_jobs(
    scheduler: BaseScheduler,
    memory: Deployment,
    stop: StopFlag,
    reporter: Reporter,
    *,
    pause_gc: bool = False,
) -> None:
    """Register the sync and maintenance jobs; each first runs one interval after start, sync at once."""
    settings = memory.settings
    start = datetime.now(UTC)  # APScheduler triggers run on the wall clock, not the injectable one
    for tenant in settings.tenants:
        scheduler.add_job(
            sync_job,
            "interval",
            minutes=tenant.sync_interval_minutes,
            args=[memory, tenant.name, stop, reporter, pause_gc],
            id=f"sync:{tenant.name}",
            name=f"sync {tenant.name}",
            next_run_time=start,
            **JOB_DEFAULTS,
        )
    maintenance = (
        ("retention", lambda: _retention(memory), settings.retention.retention_interval_hours),
        ("consolidate", lambda: memory.facts.consolidate(), settings.facts.consolidate_interval_hours),
        ("decay", lambda: memory.facts.decay(), 24.0),
    )
    for name, action, hours in maintenance:
        scheduler.add_job(
            maintenance_job(name, action),
            "interval",
            hours=hours,
            id=f"maintenance:{name}",
            name=f"maintenance {name}",
            next_run_time=start + timedelta(hours=hours),
            **JOB_DEFAULTS,
        )


def build_scheduler(
    memory: Deployment,
    *,
    stop: StopFlag | None = None,
    reporter: Reporter | None = None,
    background: bool = False,
    max_workers: int = 4,
    pause_gc: bool = False,
) -> tuple[BaseScheduler, ThreadPoolExecutor, StopFlag]:
    """A configured (not started) scheduler, its executor and the stop flag its syncs watch.

    ``pause_gc`` lets each sync pause the garbage collector (``SyncRunner``): for a process that
    only schedules, like ``connector schedule``."""
    stop = stop or StopFlag()
    executor = ThreadPoolExecutor(max_workers=max_workers)
    cls = BackgroundScheduler if background else BlockingScheduler
    scheduler = cls(timezone=UTC, executors={"default": executor}, job_defaults=JOB_DEFAULTS)
    add_jobs(scheduler, memory, stop, reporter or JsonReporter(pages=False), pause_gc=pause_gc)
    return scheduler, executor, stop


def run_scheduler(
    memory: Deployment,
    *,
    reporter: Reporter | None = None,
    stop: StopFlag | None = None,
    pause_gc: bool = False,
) -> str | None:
    """Run until SIGTERM/SIGINT (or ``stop`` is requested); return the reason.

    Running jobs finish and commit their current page and log out before this returns.
    """
    scheduler, executor, stop = build_scheduler(memory, reporter=reporter, stop=stop, pause_gc=pause_gc)

    def on_stop(reason: str) -> None:
        log.info("stopping on %s: waiting for running jobs to commit their current page", reason)
        scheduler.shutdown(wait=False)

    stop.on_request = on_stop
    with stop_on_signals(stop):
        log.info("scheduler started with jobs: %s", ", ".join(job.id for job in scheduler.get_jobs()))
        scheduler.start()
    executor.shutdown(wait=True)
    log.info("scheduler stopped")
    return stop.reason
