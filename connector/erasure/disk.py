"""Scrubbing what ``forget`` deleted from the files on disk.

SQLite: every connection runs with ``secure_delete`` (deleted rows are overwritten with zeros, see
:mod:`connector.db.engine`), and after an erasure the write-ahead log, which still holds the pages
as they were before, is checkpointed into the database and truncated.

Embedded Chroma keeps every write in its own log (``embeddings_queue`` in ``chroma.sqlite3``) until
each segment has persisted it; Chroma's own purge (what ``chroma utils vacuum`` runs) only drops
entries below the oldest segment's persisted sequence number, so a recent entry's vector and
metadata outlive its deletion there. The purge below removes the erased ids' add/update/upsert
entries from that log (their delete entries stay, so a segment replaying the log still deletes
them) and then VACUUMs the file, which rewrites it without the free pages that held the deleted
metadata; then the unused part of the HNSW segment files is zeroed (:mod:`connector.erasure.hnsw`).
A Chroma server's files are out of reach: see the README for what its operator runs.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy.engine import Engine

from connector.db.chunks import chunks
from connector.erasure.hnsw import scrub_segment_slack
from connector.errors import StoreError

log = logging.getLogger(__name__)

CHROMA_SQLITE = "chroma.sqlite3"
_CHROMA_DELETE = 3  # chroma's Operation.DELETE in embeddings_queue.operation
_CHUNK = 500


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


def purge_chroma_log(chroma_dir: Path, ids: Sequence[str]) -> int:
    """Remove the erased ids' entries from embedded Chroma's log, then VACUUM; returns entries removed."""
    path = chroma_dir / CHROMA_SQLITE
    if not ids or not path.exists():
        return 0
    try:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open Chroma's log at {path} to purge erased entries: {exc}") from None
    try:
        conn.execute("PRAGMA secure_delete=ON")
        removed = 0
        for chunk in chunks(ids, _CHUNK):
            marks = ",".join("?" * len(chunk))
            removed += conn.execute(
                f"DELETE FROM embeddings_queue WHERE operation != ? AND id IN ({marks})",
                [_CHROMA_DELETE, *chunk],
            ).rowcount
        conn.execute("VACUUM")
        with contextlib.suppress(sqlite3.Error):  # only in WAL mode; Chroma uses a rollback journal
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise StoreError(f"purging erased entries from Chroma's log at {path} failed: {exc}") from None
    finally:
        conn.close()
    scrub_segment_slack(chroma_dir)
    return removed
