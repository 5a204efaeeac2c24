"""Scrubbing what ``forget`` deleted from the relational files on disk.

SQLite: every connection runs with ``secure_delete`` (deleted rows are overwritten with zeros, see
:mod:`connector.db.engine`), and after an erasure the write-ahead log, which still holds the pages
as they were before, is checkpointed into the database and truncated. Chroma's files:
:mod:`connector.vectors.files` (``purge_chroma_log`` is re-exported here).

"""

from __future__ import annotations

import logging

from sqlalchemy.engine import Engine

from connector.vectors.files import CHROMA_SQLITE, purge_chroma_log

log = logging.getLogger(__name__)

__all__ = ["CHROMA_SQLITE", "purge_chroma_log", "scrub_relational"]


def scrub_relational(engine: Engine) -> None:
    """On SQLite, fold the write-ahead log into the database and truncate it (no-op elsewhere)."""
    if engine.dialect.name != "sqlite":
        return
    with engine.connect() as conn:
        busy = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").first()
    if busy is not None and busy[0]:
        log.warning(
            "the SQLite write-ahead log could not be truncated after an erasure (a reader was active); "
            "it is truncated at the next checkpoint"
        )
