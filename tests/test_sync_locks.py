"""One run per (tenant, stream): file locks on SQLite, advisory locks on PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from sqlalchemy.engine import Engine
from test_sync_runner import customer, make_memory, runner_for

from connector.clock import FrozenClock
from connector.errors import AlreadyRunning
from connector.sync.locks import advisory_key, lock_file_path, stream_lock
from connector.sync.stub import StubAdapter


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
