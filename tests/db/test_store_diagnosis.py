"""A full disk is named as such, and each backend gets its own hint: the sync's error (stderr and
the runs table) and ``record_turn`` say "the disk is full" (``record_turn`` at once, without
retrying); a PostgreSQL database nobody upgraded names ``connector db upgrade``; a PostgreSQL
failure never carries the SQLite hint about the file's directory. SQLite fills for real
(``max_page_count``); PostgreSQL's driver raises its ``DiskFull`` (53100)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from conftest import scratch_pg_database
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sync_stub import StubAdapter

from connector.clock import FrozenClock
from connector.db.engine import create_db_engine
from connector.erp.records import PartyRecord
from connector.errors import StoreError
from connector.failures import store_error
from connector.memory import Memory
from connector.settings import Settings, TenantSettings

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def customers(prefix: str, count: int) -> list[PartyRecord]:
    return [
        PartyRecord(
            tenant="acme",
            kind="customer",
            external_id=f"{prefix}{i:05d}",
            name="N" * 200,
            credit_limit=Decimal("1.00"),
            source_modified_at=NOW - timedelta(hours=1),
        )
        for i in range(count)
    ]


@pytest.fixture
def full_disk(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Call the fixture's value to make every later write fail as on a full disk."""
    handles: list[Any] = []

    def fill() -> None:
        if engine.dialect.name == "sqlite":
            with engine.connect() as conn:
                pages = conn.exec_driver_sql("PRAGMA page_count").scalar()

            def cap(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")

            event.listen(engine, "connect", cap)
            handles.append(("connect", cap))
            engine.dispose()
        else:

            def refuse(cursor: Any, statement: str, parameters: Any, context: Any) -> None:
                if statement.lstrip().upper().startswith(("INSERT", "COPY")) and "sync_run" not in statement:
                    raise psycopg.errors.DiskFull("could not extend file: No space left on device")

            def no_copy(*args: Any, **kwargs: Any) -> Any:
                raise psycopg.errors.DiskFull("could not extend file: No space left on device")

            event.listen(engine, "do_execute", refuse)
            handles.append(("do_execute", refuse))
            monkeypatch.setattr(psycopg.Cursor, "copy", no_copy)  # the sync's bulk path

    yield fill
    for name, fn in handles:
        event.remove(engine, name, fn)
    engine.dispose()


def test_the_sync_names_a_full_disk(engine: Engine, full_disk: Any) -> None:
    clock = FrozenClock(NOW)
    erp = StubAdapter("acme", page_size=500)
    erp.add_stream("Customer", "party")
    erp.put("Customer", *customers("A", 20))
    settings = Settings(
        tenants=[TenantSettings(name="acme", kind="acumatica", base_url="http://127.0.0.1:9")]
    )
    memory = Memory(settings, clock=clock, engine=engine, llm=None)
    memory.sync_runner(adapter_factory=lambda t: erp).run()  # type: ignore[arg-type,return-value]

    full_disk()
    erp.put("Customer", *customers("B", 2000))
    clock.advance(timedelta(minutes=15))
    [result] = memory.sync_runner(adapter_factory=lambda t: erp).run().results  # type: ignore[arg-type,return-value]

    assert result.status == "failed"
    assert result.error is not None and "the disk is full" in result.error


def test_record_turn_names_a_full_disk_at_once(engine: Engine, full_disk: Any) -> None:
    memory = Memory(Settings(), clock=FrozenClock(NOW), engine=engine, llm=None)
    memory.record_turn("s1", "C1", "user", "hello")
    if engine.dialect.name == "sqlite":  # fill the file: turns that need new pages fail
        full_disk()
        with pytest.raises(StoreError) as failed:
            for i in range(500):
                memory.record_turn("s1", "C1", "user", "x" * 4000 + str(i))
    else:
        full_disk()
        with pytest.raises(StoreError) as failed:
            memory.record_turn("s2", "C1", "user", "hello")
    message = str(failed.value)
    assert "the disk is full" in message and "free space" in message
    assert "attempts" not in message  # not retried as if it were a conflict
    assert "\n" not in message


def test_a_postgresql_failure_gets_the_postgresql_hint() -> None:
    url = "postgresql+psycopg://connector:secret@127.0.0.1:1/nowhere"
    engine = create_db_engine(url)
    try:
        with pytest.raises(sa.exc.OperationalError) as raised, engine.connect():
            pass
    finally:
        engine.dispose()
    message = str(store_error(raised.value, url))
    assert "PostgreSQL server is running" in message
    assert "directory" not in message and "secret" not in message


def test_a_sqlite_failure_keeps_the_file_hint(tmp_path: Any) -> None:
    exc = sa.exc.OperationalError("INSERT", {}, Exception("unable to open database file"))
    message = str(store_error(exc, f"sqlite:///{tmp_path}/x.db"))
    assert "directory is writable" in message


@pytest.mark.postgres
def test_a_postgresql_database_nobody_upgraded_names_the_command_that_fixes_it() -> None:
    with scratch_pg_database("connector_unmigrated") as url:
        tenant = TenantSettings(name="acme", kind="acumatica", base_url="http://127.0.0.1:9")
        erp = StubAdapter("acme", page_size=10)
        erp.add_stream("Customer", "party")
        erp.put("Customer", *customers("C", 3))
        memory = Memory(
            Settings(tenants=[tenant]), clock=FrozenClock(NOW), engine=create_db_engine(url), llm=None
        )
        [result] = memory.sync_runner(adapter_factory=lambda t: erp).run().results
        assert result.status == "failed"
        assert result.error is not None and "run `connector db upgrade`" in result.error
        with pytest.raises(StoreError) as failed:
            memory.build_context("C00001", "balance")
        assert "run `connector db upgrade`" in str(failed.value) and "\n" not in str(failed.value)
        memory.engine.dispose()


@pytest.mark.parametrize(("free", "named"), [(0, True), (50 << 20, False)], ids=["full", "space-left"])
def test_sqlite_disk_io_error_on_a_full_disk_is_named(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, free: int, named: bool
) -> None:
    """A disk filled to the last byte fails SQLite's write-ahead log with "disk I/O error", not
    SQLITE_FULL: with (almost) nothing free on the file's disk that is a full disk too."""
    import shutil
    import sqlite3
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(4 << 20, (4 << 20) - free, free))
    exc = sa.exc.OperationalError("INSERT", {}, sqlite3.OperationalError("disk I/O error"))
    message = str(store_error(exc, f"sqlite:///{tmp_path}/connector.sqlite3"))
    assert ("the disk is full" in message) is named
    assert ("free space on the disk" in message) is named


def test_a_connection_that_timed_out_is_named_as_a_server_not_answering() -> None:
    exc = sa.exc.OperationalError(
        "SELECT 1", {}, psycopg.errors.ConnectionTimeout("connection timeout expired")
    )
    message = str(store_error(exc, "postgresql+psycopg://connector@127.0.0.1:5432/connector"))
    assert "failed: the server is not answering" in message and "ConnectionTimeout" in message
