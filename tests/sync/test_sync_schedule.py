"""``connector schedule``: the jobs, their intervals, no overlap, and graceful shutdown."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sync_stub import StubAdapter
from test_sync_runner import StopAfterPage, customer

from connector.adapters import factory as adapters_factory
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import FactSettings, RetentionSettings, Settings, TenantSettings
from connector.sync.progress import NullReporter
from connector.sync.scheduler import build_scheduler, maintenance_job, run_scheduler, sync_job
from connector.sync.signals import StopFlag

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def two_tenant_memory(engine: Engine) -> Memory:
    settings = Settings(
        tenants=[
            TenantSettings(
                name="acme", kind="acumatica", base_url="http://127.0.0.1:9", sync_interval_minutes=5
            ),
            TenantSettings(
                name="globex", kind="sap", base_url="http://127.0.0.1:9", sync_interval_minutes=30
            ),
        ],
        retention=RetentionSettings(retention_interval_hours=12),
        facts=FactSettings(consolidate_interval_hours=6),
    )
    return Memory(settings, clock=FrozenClock(), engine=engine, llm=None)


def test_jobs_run_on_their_intervals_and_never_overlap(sqlite_engine: Engine) -> None:
    scheduler, _executor, _stop = build_scheduler(two_tenant_memory(sqlite_engine), background=True)
    jobs = {job.id: job for job in scheduler.get_jobs()}

    assert set(jobs) == {
        "sync:acme",
        "sync:globex",
        "maintenance:retention",
        "maintenance:consolidate",
        "maintenance:decay",
    }
    intervals = {job_id: job.trigger.interval for job_id, job in jobs.items()}
    assert intervals["sync:acme"] == timedelta(minutes=5)
    assert intervals["sync:globex"] == timedelta(minutes=30)
    assert intervals["maintenance:retention"] == timedelta(hours=12)
    assert intervals["maintenance:consolidate"] == timedelta(hours=6)
    assert intervals["maintenance:decay"] == timedelta(days=1)
    assert all(job.max_instances == 1 and job.coalesce for job in jobs.values())


def test_maintenance_failure_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> None:
        from connector.errors import StoreError

        raise StoreError("chroma is unreachable")

    caplog.set_level("INFO", logger="connector.schedule")
    maintenance_job("decay", broken)()
    maintenance_job("consolidate", lambda: {"sessions": 0})()
    text = caplog.text
    assert "maintenance decay failed: StoreError: chroma is unreachable" in text
    assert "maintenance consolidate done" in text


def test_sync_job_logs_a_failed_tenant_and_returns(
    sqlite_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    memory = two_tenant_memory(sqlite_engine)
    caplog.set_level("INFO", logger="connector.schedule")
    sync_job(memory, "nope", StopFlag(), NullReporter())  # unknown tenant: ConfigError, logged
    assert "sync of nope failed: ConfigError" in caplog.text


def test_stop_lets_the_running_sync_commit_its_page_and_log_out(
    tmp_path: Path, sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(
        tenants=[TenantSettings(name="acme", kind="acumatica", base_url="http://127.0.0.1:9")]
    )
    memory = Memory(
        settings, clock=FrozenClock(datetime(2026, 3, 10, tzinfo=UTC)), engine=sqlite_engine, llm=None
    )
    erp = StubAdapter("acme", page_size=2)
    erp.add_stream("Customer", "party")
    erp.put("Customer", *[customer(f"C{i}", T0 + timedelta(minutes=i)) for i in range(10)])
    stop = StopFlag()
    monkeypatch.setattr(adapters_factory, "adapter_factory", lambda sync, clock: lambda tenant: erp)

    done = threading.Thread(
        target=run_scheduler, args=(memory,), kwargs={"stop": stop, "reporter": StopAfterPage(stop, 1)}
    )
    done.start()
    done.join(20)

    assert not done.is_alive()
    assert stop.reason == "SIGTERM"
    assert erp.logins == erp.logouts == 1
    with sqlite_engine.connect() as conn:
        import sqlalchemy as sa

        from connector.semantic.upsert import party_t
        from connector.sync.runlog import run_t

        assert conn.execute(sa.select(sa.func.count()).select_from(party_t)).scalar_one() == 4
        assert conn.execute(sa.select(run_t.c.status)).scalar_one() == "interrupted"
