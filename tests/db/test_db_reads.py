"""Read connections: no transaction held on PostgreSQL, reads planned per call, writers unaffected."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.db.engine import create_db_engine
from connector.db.models import SyncState
from connector.db.reads import read_connection

sync_state_t: sa.Table = SyncState.__table__  # type: ignore[attr-defined]
_READ = sa.select(sync_state_t.c.stream).where(sync_state_t.c.tenant == sa.bindparam("tenant"))


@pytest.fixture
def own_pg_engine(pg_engine: Engine, pg_database_url: str) -> Iterator[Engine]:
    """An engine of its own on the migrated test database: its pool holds only this test's
    connections (one, when they are used one after the other)."""
    engine = create_db_engine(pg_database_url)
    yield engine
    engine.dispose()


def test_a_read_on_postgresql_leaves_no_transaction_open(own_pg_engine: Engine) -> None:
    with read_connection(own_pg_engine) as conn:
        conn.execute(_READ, {"tenant": "t"}).all()
        status = conn.connection.dbapi_connection.info.transaction_status  # type: ignore[union-attr]
        assert status == psycopg.pq.TransactionStatus.IDLE


def _prepared(engine: Engine) -> list[str]:
    with read_connection(engine) as conn:
        return list(conn.execute(sa.text("SELECT statement FROM pg_prepared_statements")).scalars())


def test_a_read_is_planned_with_its_own_parameters_however_often_it_runs(own_pg_engine: Engine) -> None:
    """Never prepared: a generic plan assumes an average customer's rows, not this one's."""
    for _ in range(8):
        with read_connection(own_pg_engine) as conn:
            conn.execute(_READ, {"tenant": "t"}).all()
    assert not any("FROM sync_state" in text for text in _prepared(own_pg_engine))


def test_a_read_leaves_a_writers_prepared_statements_in_place(own_pg_engine: Engine) -> None:
    with own_pg_engine.begin() as conn:
        for n in range(8):
            conn.execute(sa.insert(sync_state_t), {"tenant": "t", "stream": f"s{n}"})
    with read_connection(own_pg_engine) as conn:
        assert len(conn.execute(_READ, {"tenant": "t"}).all()) == 8
    assert any("INSERT INTO sync_state" in text for text in _prepared(own_pg_engine))


def test_a_writer_on_the_connection_a_read_returned_still_gets_a_transaction(own_pg_engine: Engine) -> None:
    with read_connection(own_pg_engine) as conn:
        conn.execute(_READ, {"tenant": "t"}).all()
        read_on = conn.connection.dbapi_connection
    with own_pg_engine.connect() as conn:
        assert conn.connection.dbapi_connection is read_on
        with conn.begin() as transaction:
            conn.execute(sa.insert(sync_state_t), {"tenant": "t", "stream": "customers"})
            transaction.rollback()
    with read_connection(own_pg_engine) as conn:
        assert conn.execute(_READ, {"tenant": "t"}).all() == []
