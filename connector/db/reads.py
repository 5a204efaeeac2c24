"""Connections for groups of plain reads: the context's, the recalls' and the learned facts'.

On PostgreSQL such a connection runs in autocommit. A transaction gives these reads nothing at
READ COMMITTED (each statement takes its own snapshot either way), but costs two round trips per
checkout (psycopg's ``BEGIN`` before the first statement, the pool's ``ROLLBACK`` at its return),
and the rollback also empties psycopg's prepared-statement cache (a writer's statements too). In
autocommit the pool's reset finds no transaction and sends nothing. The reads themselves are not
prepared: a prepared statement soon runs with PostgreSQL's generic plan, which for a customer's
postings or turns assumes an average customer's few rows and reads a long history's every row
(the full-size bench's turn recall cost more, not less); planned with their parameters, as
before, they read only what they return. SQLite's driver begins no transaction for a read, so its
connections are left as they are. Writes keep ``engine.begin()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from sqlalchemy.engine import Connection, Engine


def read_connection(engine: Engine) -> AbstractContextManager[Connection]:
    """A pooled connection for reads only (a context manager, like ``engine.connect()``, which it
    is on SQLite)."""
    if engine.dialect.name != "postgresql":
        return engine.connect()
    return _autocommit_read(engine)


@contextmanager
def _autocommit_read(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT")
        driver = conn.connection.dbapi_connection
        threshold = getattr(driver, "prepare_threshold", None)
        driver.prepare_threshold = None  # type: ignore[union-attr]
        try:
            yield conn
        finally:
            driver.prepare_threshold = threshold  # type: ignore[union-attr]
