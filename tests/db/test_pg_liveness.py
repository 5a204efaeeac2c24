"""PostgreSQL's pooled connections at checkout: one used a moment ago goes out without a ping, one the
server ended is replaced before the caller sees it, one idle for long is pinged (connector.db.pg_liveness)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.db import pg_liveness
from connector.db.engine import create_db_engine
from connector.db.reads import read_connection

_PID = sa.text("SELECT pg_backend_pid()")


@pytest.fixture
def own_pg_engine(pg_engine: Engine, pg_database_url: str) -> Iterator[Engine]:
    """An engine of its own: its pool holds one connection when they are used one after the other."""
    engine = create_db_engine(pg_database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement psycopg sends from now on (pings included)."""
    statements: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return statements


def _pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(_PID).scalar_one())


def test_a_connection_used_a_moment_ago_goes_out_without_a_ping(
    own_pg_engine: Engine, sent: list[str]
) -> None:
    first = _pid(own_pg_engine)
    sent.clear()
    with own_pg_engine.connect():
        pass
    assert sent == []
    assert _pid(own_pg_engine) == first


def test_a_connection_the_server_ended_is_replaced_at_checkout(
    own_pg_engine: Engine, pg_engine: Engine
) -> None:
    ended = _pid(own_pg_engine)
    with pg_engine.connect() as admin:  # waits until the backend is gone: its goodbye was sent
        assert admin.execute(sa.text("SELECT pg_terminate_backend(:pid, 10000)"), {"pid": ended}).scalar_one()

    with own_pg_engine.connect() as conn:
        assert conn.execute(_PID).scalar_one() != ended


def test_a_connection_idle_for_long_is_pinged(
    own_pg_engine: Engine, sent: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _pid(own_pg_engine)
    monkeypatch.setattr(pg_liveness, "QUIET_S", 0.0)
    sent.clear()
    with own_pg_engine.connect():
        pass
    assert len(sent) == 1  # the ping


def test_a_ping_leaves_no_transaction_open(own_pg_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    _pid(own_pg_engine)
    monkeypatch.setattr(pg_liveness, "QUIET_S", 0.0)
    with read_connection(own_pg_engine) as conn:  # switches to autocommit: refused inside a transaction
        assert conn.execute(_PID).scalar_one()
