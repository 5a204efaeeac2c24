"""Checking a pooled PostgreSQL connection at checkout without a round trip, most of the time.

Why: SQLAlchemy's ``pool_pre_ping`` sends ``SELECT 1`` at every checkout, a round trip before each
group of reads: a third of a past-conversation recall's round trips on PostgreSQL (the recall itself
is one statement). A server that ends a connection (a restart, ``pg_terminate_backend``, an idle
session timeout) says so first: the connection's socket turns readable (the error message, then
the end of the stream). So a connection checked in less than ``QUIET_S`` ago whose socket has
nothing to read is used as it is. One with something to read, or idle longer (a peer that may have
vanished without a word: a firewall's idle drop, a host gone), is pinged as before, and a failed
ping makes the pool open a new connection, as ``pool_pre_ping`` did.
"""

from __future__ import annotations

import select
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

QUIET_S = 5.0  # a connection idle longer than this is pinged at checkout
_CHECKED_IN = "connector_checked_in"  # record.info key: when the connection went back to the pool


def install(engine: Engine) -> None:
    """Check ``engine``'s pooled connections at checkout as the module doc says (instead of
    ``pool_pre_ping``, which the engine must not have too)."""
    dialect = engine.dialect

    def checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        """Raises ``InvalidatePoolError`` (the pool then connects anew) for a connection the server ended."""
        since = record.info.get(_CHECKED_IN)
        if since is None:  # just opened (a record's info goes with its connection)
            return
        if time.monotonic() - since < QUIET_S and quiet(dbapi_connection):
            return
        try:
            dialect.do_ping(dbapi_connection)  # pool_pre_ping's: outside any transaction
        except Exception as exc:
            # as pool_pre_ping: every connection pooled before now is checked again (a restart ends them all)
            raise sa.exc.InvalidatePoolError(f"a pooled connection failed its ping: {exc}") from exc

    sa.event.listen(engine, "checkin", _checked_in)
    sa.event.listen(engine, "checkout", checkout)


def _checked_in(_dbapi_connection: Any, record: Any) -> None:
    if record is not None:
        record.info[_CHECKED_IN] = time.monotonic()


def quiet(dbapi_connection: Any) -> bool:
    """Whether the psycopg connection is open and the server has sent nothing since its last reply
    (an idle connection hears from the server only when it ends the connection, or a notice)."""
    if dbapi_connection.closed or dbapi_connection.broken:
        return False
    poller = select.poll()
    poller.register(dbapi_connection.pgconn.socket, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)
