"""Every database call has a deadline from the settings: SQLite waits ``database.busy_timeout_s``
for another writer's lock, PostgreSQL cancels a statement after ``database.statement_timeout_s``
and declares a silent server dead after ``database.dead_server_s`` (keepalives, TCP user timeout)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from connector.db.engine import create_db_engine
from connector.settings import DatabaseSettings


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
