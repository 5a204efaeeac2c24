"""Asynchronous commit for the pages of a run that do not carry the watermark (PostgreSQL).

A synchronous commit waits for the WAL flush (tens of milliseconds per page on a slow disk), and
the sync commits every page. A page that does not complete the window may be lost on a server
crash without harm: transactions become durable in commit order, so a lost page takes every
later one (and the run's counters) with it, the watermark has not moved, and the next run reads
the window again. The page carrying the watermark commits synchronously, which also flushes
every earlier page, so a run that reports success is durable.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection


def relax_commit(conn: Connection) -> None:
    """Let this transaction's commit return before its WAL reaches disk (PostgreSQL only)."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")
