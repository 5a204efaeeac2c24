"""PostgreSQL ``COPY ... FROM STDIN`` on a SQLAlchemy connection's own psycopg connection.

The sync's bulk upsert sends a page as one text payload, the lexical index sends its postings row
by row; both go through :func:`copy_into`, so both run in the caller's transaction and a driver
error comes back as SQLAlchemy's (a duplicate key as ``IntegrityError``), like any statement's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def copy_into(conn: Connection, target: str, columns: Sequence[str], feed: Callable[[Any], None]) -> None:
    """COPY into ``target`` (``columns`` in order); ``feed`` writes the data to psycopg's ``Copy``
    (``copy.write(payload)`` for COPY text, ``copy.write_row(row)`` for values psycopg adapts)."""
    quote = conn.dialect.identifier_preparer.quote
    command = f"COPY {quote(target)} ({', '.join(quote(n) for n in columns)}) FROM STDIN"
    driver: Any = conn.connection.driver_connection  # a psycopg.Connection
    dbapi: Any = conn.dialect.loaded_dbapi
    try:
        with driver.cursor() as cursor, cursor.copy(command) as copy:
            feed(copy)
    except dbapi.Error as exc:
        raise sa.exc.DBAPIError.instance(command, None, exc, dbapi.Error) from exc
