"""One run per (tenant, stream): file locks on SQLite, advisory locks on PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sync_stub import StubAdapter
from test_sync_runner import customer, make_memory, runner_for

from connector.clock import FrozenClock
from connector.errors import AlreadyRunning
from connector.sync.locks import advisory_key, lock_file_path, stream_lock
from connector.sync.result import SyncReport
from connector.sync.runner import SyncRunner


def test_advisory_key_is_stable_and_distinct() -> None:
    assert advisory_key("acme", "Customer") == advisory_key("acme", "Customer")
    assert advisory_key("acme", "Customer") != advisory_key("acme", "Vendor")
    assert advisory_key("acme", "Customer") == 6659040755838416852  # pinned: other machines must agree


def test_lock_file_sits_next_to_the_sqlite_database(sqlite_engine: Engine) -> None:
    path = lock_file_path(sqlite_engine, "acme", "Sales Order")
    assert path.parent == lock_file_path(sqlite_engine, "x", "y").parent
    assert path.name.endswith(".sync-acme-Sales_Order.lock")


def test_second_holder_exits_with_already_running(engine: Engine) -> None:
    with stream_lock(engine, "acme", "Customer"):
        with (
            pytest.raises(AlreadyRunning, match="acme/Customer is already running"),
            stream_lock(engine, "acme", "Customer", on_locked="exit"),
        ):
            pass
        with stream_lock(engine, "acme", "Vendor"):
            pass  # another stream is independent
    with stream_lock(engine, "acme", "Customer"):
        pass  # released


def test_waiting_holder_gives_up_after_the_wait(engine: Engine) -> None:
    with (
        stream_lock(engine, "acme", "Customer"),
        pytest.raises(AlreadyRunning),
        stream_lock(engine, "acme", "Customer", on_locked="wait", wait_s=0.2),
    ):
        pass


def test_waiting_holder_runs_once_the_lock_is_released(engine: Engine) -> None:
    released = threading.Event()
    acquired = threading.Event()

    def hold() -> None:
        with stream_lock(engine, "acme", "Customer"):
            acquired.set()
            released.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    acquired.wait(5)
    timer = threading.Timer(0.2, released.set)
    timer.start()
    with stream_lock(engine, "acme", "Customer", on_locked="wait", wait_s=10):
        assert released.is_set()
    holder.join()


def test_locked_stream_is_reported_and_other_streams_still_run(engine: Engine) -> None:
    erp = StubAdapter("acme")
    erp.add_stream("Customer", "party")
    erp.add_stream("Vendor", "party")
    erp.put("Customer", customer("C1", datetime(2026, 3, 1, tzinfo=UTC)))
    memory = make_memory(engine, FrozenClock(), on_locked="exit")
    with stream_lock(engine, "acme", "Customer"):
        report = runner_for(memory, erp).run()
    assert [(r.stream, r.status) for r in report.results] == [("Customer", "locked"), ("Vendor", "ok")]


class _Recording(SyncRunner):
    """Logs when each page commit starts and when it succeeds."""

    def __init__(self, *args: Any, events: list[tuple[str, int]], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.events = events
        self.commits = 0

    def _commit_page(self, sr: Any, page: Any, *, final: bool) -> None:
        self.commits += 1
        number = self.commits
        self.events.append(("start", number))
        super()._commit_page(sr, page, final=final)
        self.events.append(("ok", number))


def _terminate_lock_holder(engine: Engine, tenant: str, stream: str) -> int:
    """Terminate the lock's backend and wait (up to 10 s) until it has exited and released the lock."""
    key = advisory_key(tenant, stream) & 0xFFFFFFFFFFFFFFFF
    with engine.connect() as conn:
        ended = conn.execute(
            sa.text(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_locks"
                " WHERE locktype = 'advisory'"
                " AND classid = :hi AND objid = :lo AND objsubid = 1"
            ),
            {"hi": key >> 32, "lo": key & 0xFFFFFFFF},
        ).scalar_one()
    return int(ended)


@pytest.mark.postgres
def test_a_run_whose_lock_backend_is_terminated_stops_before_its_next_page(pg_engine: Engine) -> None:
    """While the first run pages, its lock's backend is terminated and a second run syncs the stream."""
    records = [
        customer(f"C{i:02d}", datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=i)) for i in range(12)
    ]
    first, second = StubAdapter("acme", page_size=2), StubAdapter("acme", page_size=2)
    for erp in (first, second):
        erp.add_stream("Customer", "party")
        erp.put("Customer", *records)
    events: list[tuple[str, int]] = []
    other: list[SyncReport] = []

    def lose_the_lock(stream: str, number: int) -> None:
        if number == 3 and not other:
            assert _terminate_lock_holder(pg_engine, "acme", "Customer") == 1
            events.append(("terminated", 0))
            other.append(runner_for(make_memory(pg_engine, FrozenClock()), second).run())

    first.before_page = lose_the_lock
    memory = make_memory(pg_engine, FrozenClock())
    runner = _Recording(
        memory.engine,
        clock=memory.clock,
        settings=memory.settings,
        cases=None,
        adapter_factory=lambda tenant: first,  # type: ignore[arg-type,return-value]
        events=events,
    )

    [result] = runner.run().results

    assert result.status == "failed" and "lost its lock" in (result.error or "")
    [[taken_over]] = [r.results for r in other]
    assert taken_over.status == "ok" and taken_over.records_read == 12
    lost_at = events.index(("terminated", 0))
    started_after = {n for kind, n in events[lost_at:] if kind == "start"}
    assert not {n for kind, n in events if kind == "ok"} & started_after  # no page begun later committed
