"""Per-transaction settings for the pages a sync writes (PostgreSQL; no-ops elsewhere).

Asynchronous commit for pages that do not carry the watermark. A synchronous commit waits for
the WAL flush (tens of milliseconds per page on a slow disk), and the sync commits every page. A
page that does not complete the window may be lost on a server crash without harm: transactions
become durable in commit order, so a lost page takes every later one (and the run's counters)
with it, the watermark has not moved, and the next run reads the window again. The page carrying
the watermark commits synchronously, which also flushes every earlier page, so a run that
reports success is durable.

LZ4 for the TOASTed values of the page (the raw ERP JSON of a record is often over the 2 kB
threshold): a fifth less server CPU than the default pglz on a full load, and faster to read.
Only where the server was built with LZ4; existing values keep their compression.
"""

from __future__ import annotations

import threading

from sqlalchemy.engine import Connection

_lz4: dict[str, bool] = {}  # database URL -> the server offers lz4
_lock = threading.Lock()


def tune_page_transaction(conn: Connection, *, durable: bool) -> None:
    """Asynchronous commit unless ``durable``, and LZ4 where offered: one statement (PostgreSQL)."""
    if conn.dialect.name != "postgresql":
        return
    settings = [] if durable else ["set_config('synchronous_commit', 'off', true)"]
    if _offers_lz4(conn):
        settings.append("set_config('default_toast_compression', 'lz4', true)")
    if settings:
        conn.exec_driver_sql(f"SELECT {', '.join(settings)}")


def _offers_lz4(conn: Connection) -> bool:
    """Whether the server was built with LZ4 (asked once per database URL)."""
    url = str(conn.engine.url)
    with _lock:
        offered = _lz4.get(url)
    if offered is None:
        offered = bool(
            conn.exec_driver_sql(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
            ).scalar()
        )
        with _lock:
            _lz4[url] = offered
    return offered
