"""Shared fixtures: settings in a temp dir, SQLite and PostgreSQL engines.

PostgreSQL tests use ``CONNECTOR_TEST_PG_URL`` (default: the local server's ``test`` database's
host with a fresh database per session). In CI (``CI=true``) an unreachable PostgreSQL fails the
run; elsewhere those tests skip with the reason.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.db.engine import create_db_engine, dispose_engines
from connector.db.migrate import upgrade_to_head
from connector.schema import metadata
from connector.settings import Settings
from connector.testing.scratch_db import ScratchDatabases

pytest_plugins = [
    "chroma_fixtures",
    "fd_report",
    "kinds",
    "llm_stub",
    "open_memories",
    "connector.testing.pytest_plugin",
]

PG_ADMIN_URL = os.environ.get("CONNECTOR_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads the developer's .env, config file or data directory (and past-conversation
    indexing is off unless a test asks for it)."""
    for key in list(os.environ):
        if key.startswith("CONNECTOR_") and key != "CONNECTOR_TEST_PG_URL":
            monkeypatch.delenv(key, raising=False)
    # Past-conversation indexing embeds every recorded turn on a background worker; tests of it
    # turn it on in their settings (tests/conversation_fixtures.py), the others never load a model for it.
    monkeypatch.setenv("CONNECTOR_CONVERSATIONS__ENABLED", "false")
    monkeypatch.chdir(tmp_path)
    yield
    dispose_engines()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite file migrated to head once per session; tests start from a copy (migrations are slow)."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.sqlite3"
    engine = create_db_engine(f"sqlite:///{path}")
    upgrade_to_head(engine)
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path


@pytest.fixture
def settings(tmp_path: Path, sqlite_template: Path) -> Settings:
    data_dir = tmp_path / "data"
    data_dir.mkdir(exist_ok=True)
    shutil.copyfile(sqlite_template, data_dir / "connector.sqlite3")
    return Settings(data_dir=data_dir)


@pytest.fixture
def sqlite_engine(tmp_path: Path, sqlite_template: Path) -> Iterator[Engine]:
    path = tmp_path / "test.sqlite3"
    shutil.copyfile(sqlite_template, path)
    engine = create_db_engine(f"sqlite:///{path}")
    yield engine
    engine.dispose()


@contextmanager
def scratch_pg_database(prefix: str) -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped on exit; fails in CI (skips elsewhere) if unreachable."""
    admin_url = sa.engine.make_url(PG_ADMIN_URL)
    try:
        admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as exc:
        message = f"PostgreSQL at {admin_url.render_as_string(hide_password=True)} unreachable: {exc}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    admin.dispose()
    scratch = ScratchDatabases(PG_ADMIN_URL, prefix)
    url = scratch.create()
    try:
        yield url
    finally:
        dispose_engines()
        scratch.drop_all()


@pytest.fixture(scope="session")
def pg_database_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, dropped at the end."""
    with scratch_pg_database("connector_test") as url:
        yield url


@pytest.fixture(scope="session")
def _pg_engine_session(pg_database_url: str) -> Iterator[Engine]:
    engine = create_db_engine(pg_database_url)
    upgrade_to_head(engine)
    yield engine
    engine.dispose()


def truncate_all(engine: Engine) -> None:
    with engine.begin() as conn:
        names = ", ".join(f'"{t.name}"' for t in metadata.sorted_tables)
        conn.execute(sa.text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))


@pytest.fixture
def pg_engine(_pg_engine_session: Engine) -> Engine:
    truncate_all(_pg_engine_session)
    return _pg_engine_session


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Engine:
    """Runs the test once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_engine")  # type: ignore[no-any-return]
    return request.getfixturevalue("pg_engine")  # type: ignore[no-any-return]
