"""Fault tests: the sync job against the fake Acumatica served over real loopback HTTP.

Each test drives the real adapter through ``connector.adapters.factory.open_adapter`` against
:class:`connector.testing.acumatica.FakeAcumatica` on a loopback port, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sync_rigs import NO_CASES, NOW, Rig, pg_rig_factory, rig_factory, sync_env

from connector.clock import FrozenClock
from connector.db.engine import create_db_engine
from connector.semantic.upsert import address_t, attribute_t, case_t, contact_t, document_t, party_t
from connector.sync.result import SyncReport
from connector.sync.runlog import run_t
from connector.sync.state import state_t

__all__ = ["pg_rig_factory", "rig_factory"]  # the fixtures, from tests/sync_rigs.py


def table_rows(engine: Engine, table: sa.Table) -> list[tuple[Any, ...]]:
    """Every row without surrogate ids and sync bookkeeping times, sorted."""
    skip = {"id", "synced_at", "episodic_hash"}
    columns = [c for c in table.c if c.name not in skip]
    with engine.connect() as conn:
        rows = [tuple(_plain(v) for v in row) for row in conn.execute(sa.select(*columns))]
    return sorted(rows, key=repr)


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return value.normalize()
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return value


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    tables = (party_t, contact_t, address_t, attribute_t, document_t, case_t)
    return {t.name: table_rows(engine, t) for t in tables}


def count(engine: Engine, table: sa.Table, *where: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar_one())


def watermark(engine: Engine, stream: str) -> datetime | None:
    with engine.connect() as conn:
        return conn.execute(  # type: ignore[no-any-return]
            sa.select(state_t.c.watermark).where(state_t.c.stream == stream)
        ).scalar_one_or_none()


def customer_ids(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return set(
            conn.execute(sa.select(party_t.c.external_id).where(party_t.c.kind == "customer")).scalars()
        )


# Exactly once ---------------------------------------------------------------------------------


def test_full_then_noop_incremental_reads_each_stream_once(rig_factory: Callable[..., Rig]) -> None:
    rig = rig_factory()
    assert rig.run().ok
    assert customer_ids(rig.engine) == set(rig.fake.keys("Customer"))
    assert count(rig.engine, document_t) == 120 + 40 + 20

    rig.fake.reset_log()
    rig.clock.advance(timedelta(minutes=15))
    report = rig.run()

    assert report.ok
    assert all(r.inserted == r.updated == 0 for r in report.results)
    assert {e: len(rig.fake.list_requests(e)) for e in NO_CASES} == dict.fromkeys(NO_CASES, 1)
    assert rig.fake.active_sessions == 0


def test_boundary_timestamp_and_a_bulk_update_of_3000_are_read_exactly_once(
    rig_factory: Callable[..., Rig],
) -> None:
    rig = rig_factory(page_size=500, streams=["Invoice"], customers=20, invoices=3100, sales_orders=5)
    assert rig.run(lookback_seconds=0).ok
    boundary = watermark(rig.engine, "Invoice")
    assert boundary is not None
    keys = rig.fake.keys("Invoice")
    before = {k: rig.fake.record("Invoice", k)["LastModifiedDateTime"] for k in keys}
    stamped = rig.fake.stamp("Invoice", 3000, boundary)  # a mass update: 3,000 records, one timestamp
    rig.clock.advance(timedelta(minutes=10))

    report = rig.run(lookback_seconds=0)  # the window starts exactly at the shared timestamp

    [result] = report.results
    assert result.status == "ok"
    assert result.inserted == 0
    assert result.updated == sum(1 for k in stamped if before[k] != boundary)
    assert count(rig.engine, document_t) == rig.fake.count("Invoice") == 3100
    at_boundary = count(rig.engine, document_t, document_t.c.source_modified_at == boundary)
    assert at_boundary == len(set(stamped) | {k for k in keys if before[k] == boundary})
    again = rig.run(lookback_seconds=0).results[0]
    assert again.inserted == again.updated == 0 and again.unchanged == at_boundary


def test_records_changed_while_the_sync_pages_are_all_stored(rig_factory: Callable[..., Rig]) -> None:
    rig = rig_factory(streams=["Customer"], customers=90)
    first_key = rig.fake.keys("Customer")[0]

    def change_first(entity: str, n: int) -> None:
        if entity == "Customer" and n == 2:  # page 1 is read; the record leaves the pinned window
            rig.fake.modify(
                "Customer",
                first_key,
                {"CustomerName": "Renamed mid-run"},
                modified_at=NOW + timedelta(seconds=5),
            )

    rig.hooked.on_list = change_first
    assert rig.run().ok
    rig.hooked.on_list = None
    assert customer_ids(rig.engine) == set(rig.fake.keys("Customer"))  # nothing shifted out of reach

    rig.clock.advance(timedelta(minutes=5))
    assert rig.run().ok
    with rig.engine.connect() as conn:
        names = {
            r.external_id: r.name for r in conn.execute(sa.select(party_t.c.external_id, party_t.c.name))
        }
    assert names[first_key] == "Renamed mid-run"
    assert count(rig.engine, party_t) == 90


# Failures and recovery ------------------------------------------------------------------------


def test_malformed_page_fails_naming_stream_and_page_then_the_next_run_completes(
    rig_factory: Callable[..., Rig],
) -> None:
    rig = rig_factory(streams=["Customer"])
    assert rig.run().ok
    before = watermark(rig.engine, "Customer")
    rig.clock.advance(timedelta(minutes=1))
    for key in rig.fake.keys("Customer"):
        rig.fake.modify("Customer", key, {"CustomerName": f"{key} v2"})
    rig.clock.advance(timedelta(minutes=1))
    rig.fake.malformed_json(times=9, target="Customer", after=2)  # outlasts the adapter's 8 retries

    report = rig.run()

    [result] = report.results
    assert result.status == "failed"
    assert result.error is not None and "acme/Customer: page 3 failed" in result.error
    assert watermark(rig.engine, "Customer") == before
    with rig.engine.connect() as conn:
        renamed = conn.execute(sa.select(sa.func.count()).where(party_t.c.name.like("% v2"))).scalar_one()
        run = conn.execute(sa.select(run_t).order_by(run_t.c.id.desc()).limit(1)).one()
    assert renamed == 50  # pages 1 and 2 were committed
    assert (run.status, run.pages) == ("failed", 2)
    assert rig.fake.active_sessions == 0

    assert rig.run().ok
    assert count(rig.engine, party_t, party_t.c.name.like("% v2")) == 60
    assert watermark(rig.engine, "Customer") == NOW + timedelta(minutes=1)


def test_a_429_storm_and_a_session_expiry_mid_run_complete(rig_factory: Callable[..., Rig]) -> None:
    rig = rig_factory()
    rig.fake.rate_limit(times=5, retry_after=2, target="Customer", after=1)
    rig.fake.expire_sessions(target="Invoice", after=2)

    report = rig.run()

    assert report.ok, report.first_problem()
    by_stream = {r.stream: r for r in report.results}
    assert by_stream["Customer"].retries >= 5
    assert customer_ids(rig.engine) == set(rig.fake.keys("Customer"))
    assert count(rig.engine, document_t) == 180
    assert rig.fake.active_sessions == 0


class Proxy:
    """A TCP proxy to PostgreSQL that can be cut (the database "goes away") and restored."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.up = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.up = False
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        self.sockets.clear()

    def restore(self) -> None:
        self.up = True

    def close(self) -> None:
        self.cut()
        self.listener.close()


@pytest.mark.postgres
def test_database_going_away_fails_the_run_cleanly_and_the_next_run_recovers(
    pg_rig_factory: Callable[..., Rig], pg_engine: Engine
) -> None:
    rig = pg_rig_factory(streams=["Customer", "Invoice"])
    url = pg_engine.url
    proxy = Proxy((url.host or "127.0.0.1", url.port or 5432))
    rig.engine = create_db_engine(
        url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    )
    try:
        rig.hooked.on_list = lambda entity, n: proxy.cut() if (entity, n) == ("Customer", 2) else None
        report = rig.run()

        assert not report.ok
        customer = report.results[0]
        assert customer.status == "failed" and customer.error is not None
        assert "database error" in customer.error or "OperationalError" in customer.error
        assert rig.fake.active_sessions == 0  # logged out although the store failed

        rig.hooked.on_list = None
        proxy.restore()
        assert rig.run().ok
        assert customer_ids(pg_engine) == set(rig.fake.keys("Customer"))
        assert count(pg_engine, document_t) == 120
        with pg_engine.connect() as conn:
            statuses = [r.status for r in conn.execute(sa.select(run_t.c.status).order_by(run_t.c.id))]
        assert statuses[-2:] == ["ok", "ok"]
        assert "running" not in statuses
    finally:
        rig.engine.dispose()
        proxy.close()


@pytest.mark.postgres
@pytest.mark.parametrize("on_locked", ["exit", "wait"])
def test_two_concurrent_syncs_of_one_stream_on_postgres(
    pg_rig_factory: Callable[..., Rig], pg_engine: Engine, on_locked: str
) -> None:
    rig = pg_rig_factory(streams=["Customer"], customers=80)
    second: list[SyncReport] = []

    def run_second() -> None:
        second.append(rig.run(on_locked=on_locked, lock_wait_s=30))

    thread = threading.Thread(target=run_second)

    def start_second_mid_run(entity: str, n: int) -> None:
        if n != 2 or thread.is_alive() or second:
            return
        thread.start()
        if on_locked == "exit":
            thread.join(30)  # it must give up at once while we hold page 2
        else:
            wait_for_waiting_lock(pg_engine)

    rig.hooked.on_list = start_second_mid_run
    first = rig.run(on_locked=on_locked)
    thread.join(30)

    assert first.ok
    [other] = second[0].results
    assert other.status == ("locked" if on_locked == "exit" else "ok")
    assert customer_ids(pg_engine) == set(rig.fake.keys("Customer"))
    assert count(pg_engine, party_t) == 80


def wait_for_waiting_lock(engine: Engine) -> None:
    """Block until some session waits on an advisory lock (a real condition, not a fixed sleep)."""
    import time

    deadline = time.monotonic() + 20
    with engine.connect() as conn:
        while time.monotonic() < deadline:
            waiting = conn.execute(
                sa.text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
            ).scalar_one()
            conn.rollback()
            if waiting:
                return
            time.sleep(0.02)
    raise AssertionError("the second sync never waited for the lock")


# SIGKILL ---------------------------------------------------------------------------------------

KILLER = """
import os, signal, sys
from connector.sync import runner

kill_at = int(sys.argv[1])
calls = 0
original = runner.save_counters


def save_then_die(conn, run):
    global calls
    calls += 1
    original(conn, run)
    if calls == kill_at:  # inside the page's transaction, before its commit
        os.kill(os.getpid(), signal.SIGKILL)


runner.save_counters = save_then_die
from connector.cli import main

sys.exit(main(["sync"]))
"""


def sync_subprocess(
    tmp_path: Path, rig: Rig, db_url: str, *args: str, script: str | None = None
) -> subprocess.CompletedProcess[str]:
    command = (
        [sys.executable, "-c", script, *args] if script else [sys.executable, "-m", "connector.cli", *args]
    )
    env = sync_env(tmp_path, rig, db_url)
    return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def connector_process(tmp_path: Path, rig: Rig, *args: str) -> subprocess.Popen[str]:
    """``connector ARGS`` started (not awaited) against the rig's served fake and store."""
    db_url = rig.engine.url.render_as_string(hide_password=False)
    return subprocess.Popen(
        [sys.executable, "-m", "connector.cli", *args],
        env=sync_env(tmp_path, rig, db_url),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigterm_commits_the_page_in_hand_logs_out_and_exits_143(
    rig_factory: Callable[..., Rig], tmp_path: Path
) -> None:
    rig = rig_factory(streams=["Customer"], customers=150)
    process = connector_process(tmp_path, rig, "sync")
    rig.hooked.on_list = lambda entity, n: os.kill(process.pid, signal.SIGTERM) if n == 3 else None
    _, err = process.communicate(timeout=120)

    assert process.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines()[-1] == "connector: stopped by SIGTERM; committed pages are kept"
    assert rig.fake.active_sessions == 0  # logged out
    stored = count(rig.engine, party_t)
    assert 0 < stored < 150 and stored % 25 == 0  # whole pages only
    with rig.engine.connect() as conn:
        run = conn.execute(sa.select(run_t)).one()
    assert (run.status, run.pages * 25) == ("interrupted", stored)
    assert watermark(rig.engine, "Customer") is None  # the window was not finished

    rig.hooked.on_list = None
    assert rig.run().ok
    assert customer_ids(rig.engine) == set(rig.fake.keys("Customer"))


def test_sigkill_mid_page_then_rerun_equals_a_clean_full_sync(
    rig_factory: Callable[..., Rig], tmp_path: Path
) -> None:
    rig = rig_factory()
    db_url = rig.engine.url.render_as_string(hide_password=False)

    # Customer: 3 pages + key scan; Vendor: 1 page + key scan; the 8th write is Invoice page 2 of 5.
    killed = sync_subprocess(tmp_path, rig, db_url, "8", script=KILLER)
    assert killed.returncode == -9, killed.stderr
    partial = count(rig.engine, party_t) + count(rig.engine, document_t)
    assert 0 < partial < 250  # it died part-way
    for key in rig.fake.keys("Customer")[:5]:  # the ERP moves on meanwhile
        rig.fake.modify(
            "Customer",
            key,
            {"CustomerName": f"{key} after the crash"},
            modified_at=NOW + timedelta(seconds=1),
        )

    rerun = sync_subprocess(tmp_path, rig, db_url, "sync")
    assert rerun.returncode == 0, rerun.stderr
    recovered = snapshot(rig.engine)
    watermarks = {s: watermark(rig.engine, s) for s in NO_CASES}
    with rig.engine.connect() as conn:
        statuses = list(conn.execute(sa.select(run_t.c.status)).scalars())
    assert "abandoned" in statuses and "running" not in statuses

    clean_engine = fresh_store(rig.engine, tmp_path)
    rig.engine = clean_engine
    rig.clock = FrozenClock(datetime.now(UTC))
    assert rig.run().ok
    assert snapshot(clean_engine) == recovered
    assert {s: watermark(clean_engine, s) for s in NO_CASES} == watermarks


def fresh_store(engine: Engine, tmp_path: Path) -> Engine:
    """An empty store of the same kind: a new SQLite file, or the PostgreSQL one truncated."""
    if engine.dialect.name == "sqlite":
        from connector.db.migrate import upgrade_to_head

        clean = create_db_engine(f"sqlite:///{tmp_path / 'clean.sqlite3'}")
        upgrade_to_head(clean)
        return clean
    from conftest import truncate_all

    truncate_all(engine)
    return engine
