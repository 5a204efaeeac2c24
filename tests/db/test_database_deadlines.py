"""Every database call has a deadline from the settings: SQLite waits ``database.busy_timeout_s``
for another writer's lock, PostgreSQL cancels a statement after ``database.statement_timeout_s``
and declares a silent server dead after ``database.dead_server_s`` (keepalives, TCP user timeout).
A frozen server (a proxy that stops forwarding, as a stopped server process: the kernel still
acknowledges, so no TCP timeout fires) costs a read ``database.read_timeout_s``, anything else the
statement timeout plus the dead-server time, and the pool recovers once it answers."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from context_fixtures import NOW, seed_erp, stub_context
from frozen_proxy import FrozenProxy, frozen_proxy
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from connector.cli import EXIT_STORE, main
from connector.clock import FrozenClock
from connector.db.deadline import within
from connector.db.engine import create_db_engine
from connector.doctor import CheckResult, run_checks
from connector.errors import StoreError
from connector.memory import Memory
from connector.settings import DatabaseSettings, Settings, TenantSettings


def test_sqlite_waits_for_a_writer_only_as_long_as_the_setting_says(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'deadline.sqlite3'}"
    engine = create_db_engine(url, database=DatabaseSettings(busy_timeout_s=0.2))
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == 200
            conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
            conn.commit()
        holder = engine.raw_connection()
        try:
            holder.cursor().execute("BEGIN IMMEDIATE")
            with pytest.raises(OperationalError, match="database is locked"), engine.begin() as conn:
                conn.exec_driver_sql("INSERT INTO t VALUES (1)")
        finally:
            holder.rollback()
            holder.close()
    finally:
        engine.dispose()


def test_postgres_cancels_a_statement_past_its_deadline(pg_database_url: str) -> None:
    conf = DatabaseSettings(statement_timeout_s=0.3, connect_timeout_s=3, dead_server_s=5)
    engine = create_db_engine(pg_database_url, database=conf)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SHOW statement_timeout")).scalar_one() == "300ms"
            client = conn.connection.dbapi_connection.info.get_parameters()  # type: ignore[union-attr]
            assert (client["tcp_user_timeout"], client["keepalives"], client["connect_timeout"]) == (
                "5000",
                "1",
                "3",
            )
            with pytest.raises(OperationalError, match="statement timeout"):
                conn.execute(sa.text("SELECT pg_sleep(5)"))
    finally:
        engine.dispose()


def _through(proxy: FrozenProxy, url: str) -> str:
    parsed = sa.engine.make_url(url)
    return parsed.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)


@pytest.fixture
def proxy(pg_database_url: str) -> Iterator[FrozenProxy]:
    parsed = sa.engine.make_url(pg_database_url)
    with frozen_proxy((parsed.host or "127.0.0.1", parsed.port or 5432)) as running:
        yield running


def finishes(seconds: float, call: Callable[[], object]) -> tuple[BaseException | None, float]:
    """Run ``call`` (in the caller's context) and return what it raised (None) and how long it
    took; fail the test (instead of hanging it) when it has not returned after ``seconds``."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    start = time.monotonic()
    worker = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"the call was still blocked after {seconds} s"
    return outcome[0], time.monotonic() - start


def _select_one(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT 1")).scalar_one()


def test_a_frozen_server_costs_a_read_its_deadline_and_the_pool_recovers(
    proxy: FrozenProxy, pg_database_url: str
) -> None:
    engine = create_db_engine(_through(proxy, pg_database_url), database=DatabaseSettings(read_timeout_s=1))
    try:
        with within(1.0):
            _select_one(engine)  # a pooled connection, as an agent's process has
        proxy.freeze()
        with within(1.0):
            error, took = finishes(5, lambda: _select_one(engine))
        assert isinstance(error, OperationalError) and took < 2.0
        assert "no answer within 1 s (database.read_timeout_s)" in str(error.orig)
        with within(1.0):  # a new connection waits no longer than the deadline either (psycopg: 2 s)
            error, took = finishes(5, lambda: _select_one(engine))
        assert isinstance(error, OperationalError) and took < 3.0
        proxy.thaw()
        with within(1.0):
            _select_one(engine)
    finally:
        engine.dispose()


def test_outside_a_read_a_frozen_server_costs_the_statement_timeout_plus_the_dead_server_time(
    proxy: FrozenProxy, pg_database_url: str
) -> None:
    conf = DatabaseSettings(statement_timeout_s=0.5, dead_server_s=1, connect_timeout_s=2)
    engine = create_db_engine(_through(proxy, pg_database_url), database=conf)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
            proxy.freeze()
            error, took = finishes(6, lambda: conn.execute(sa.text("SELECT 2")))
        assert isinstance(error, OperationalError) and took < 2.5
        assert "no answer within 1.5 s (database.statement_timeout_s + dead_server_s)" in str(error.orig)
        error, took = finishes(8, lambda: _select_one(engine))  # a new connection: connect_timeout_s
        assert isinstance(error, OperationalError) and took < 3.0
        proxy.thaw()
        _select_one(engine)
    finally:
        engine.dispose()


def test_the_agent_gets_one_line_naming_a_hung_database_within_its_deadline(
    proxy: FrozenProxy, pg_database_url: str, pg_engine: Engine, settings: Settings
) -> None:
    conf = settings.model_copy(update={"database": DatabaseSettings(read_timeout_s=1)})
    engine = create_db_engine(_through(proxy, pg_database_url), database=conf.database)
    memory = Memory(conf, clock=FrozenClock(NOW), llm=None, engine=engine)
    try:
        seed_erp(memory)
        memory.__dict__["context"] = stub_context(memory)  # no embedding model: recall is stubbed
        assert "Bartender Supplies" in memory.build_context("ABARTENDE", "balance?").text
        proxy.freeze()
        error, took = finishes(5, lambda: memory.build_context("ABARTENDE", "balance?"))
        assert isinstance(error, StoreError) and took < 2.0
        message = str(error)
        assert "\n" not in message and "the server is not answering" in message
        assert "no answer within 1 s (database.read_timeout_s)" in message
        proxy.thaw()
        assert "Bartender Supplies" in memory.build_context("ABARTENDE", "balance?").text
    finally:
        engine.dispose()


def test_doctor_reports_a_hung_database_as_failed_within_its_deadline(
    proxy: FrozenProxy, pg_database_url: str, pg_engine: Engine, settings: Settings
) -> None:
    database = DatabaseSettings(url=_through(proxy, pg_database_url), read_timeout_s=1)
    conf = settings.model_copy(update={"database": database})
    proxy.freeze()
    checks = (check for check in run_checks(conf) if check.item == "database")
    found: list[CheckResult] = []
    error, took = finishes(6, lambda: found.append(next(checks)))
    assert error is None and took < 3.0  # a new connection: psycopg waits at least 2 s
    assert found[0].verdict == "fail"
    assert "the server is not answering" in found[0].detail and "timeout" in found[0].detail


@pytest.mark.parametrize("command", [["sync", "status"], ["db", "current"], ["history", "ABARTENDE"]])
def test_a_cli_read_on_a_hung_database_exits_5_in_one_line_within_its_deadline(
    command: list[str],
    proxy: FrozenProxy,
    pg_database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CONNECTOR_DATABASE__URL", _through(proxy, pg_database_url))
    monkeypatch.setenv("CONNECTOR_DATABASE__READ_TIMEOUT_S", "1")
    proxy.freeze()
    codes: list[int] = []
    error, took = finishes(8, lambda: codes.append(main(command)))
    assert error is None and codes == [EXIT_STORE] and took < 3.0  # a new connection: 2 s at least
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "StoreError" in err and "timeout" in err


def test_a_read_blocked_by_another_sessions_lock_says_a_lock_may_hold_it(
    pg_database_url: str, pg_engine: Engine, settings: Settings
) -> None:
    """A long migration or a stuck job holding a table: the server answers nothing to the read, as
    a hung one; the one line names both causes, so the operator looks at ``pg_locks`` too."""
    conf = settings.model_copy(update={"database": DatabaseSettings(read_timeout_s=1)})
    engine = create_db_engine(pg_database_url, database=conf.database)
    memory = Memory(conf, clock=FrozenClock(NOW), llm=None, engine=engine)
    try:
        seed_erp(memory)
        memory.__dict__["context"] = stub_context(memory)
        with pg_engine.connect() as holder:
            holder.execute(sa.text("LOCK TABLE party IN ACCESS EXCLUSIVE MODE"))
            error, _ = finishes(10, lambda: memory.build_context("ABARTENDE", "balance?"))
            holder.rollback()
        assert isinstance(error, StoreError)
        assert "\n" not in str(error) and "a lock another session holds" in str(error)
    finally:
        engine.dispose()


def test_doctor_waits_for_a_hung_database_once(
    proxy: FrozenProxy, pg_database_url: str, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    """The sync check reads the same database: after the database check failed it is reported as
    not checked instead of waiting the read deadline a second time (doctor took 2x its deadline)."""
    import connector.doctor as doctor

    for other in ("check_chroma", "check_embeddings", "check_llm", "check_tenant"):
        monkeypatch.setattr(doctor, other, lambda *a, name=other: CheckResult(name, "ok", "stub"))
    called: list[str] = []
    monkeypatch.setattr(
        doctor, "check_sync", lambda s: called.append("sync") or CheckResult("sync", "ok", "")
    )
    tenant = TenantSettings(name="acme", kind="acumatica", base_url="http://127.0.0.1:9")
    database = DatabaseSettings(url=_through(proxy, pg_database_url), read_timeout_s=1)
    conf = settings.model_copy(update={"database": database, "tenants": [tenant]})
    proxy.freeze()
    verdicts = {check.item: check for check in run_checks(conf)}
    assert verdicts["database"].verdict == "fail" and called == []
    assert verdicts["sync"].verdict == "fail" and "the database check failed" in verdicts["sync"].detail
