"""What ``forget`` and ``reindex --rebuild`` do to embedded Chroma's own files.

Embedded Chroma keeps every write in its log (``embeddings_queue`` in ``chroma.sqlite3``) until
each segment has persisted it, and deletes rows without overwriting them, so an erased vector's
metadata (tenant, customer) outlives its deletion in the log and in free pages. Erasing therefore
removes the ids' add/update/upsert entries from the log (their delete entries stay, so a segment
replaying the log still deletes them), finds any entry still stamped with the erased scope (a
write that raced the erasure), and VACUUMs the file, which rewrites it without free pages; then
the unused part of the HNSW segment files is zeroed (:mod:`connector.vectors.slack`). All of it
under the directory's exclusive lock (:mod:`connector.vectors.lock`): no other process writes
meanwhile. A Chroma server's files are out of reach: see docs/guides/vector-store.md.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import uuid
from collections.abc import Sequence
from pathlib import Path

from connector.db.chunks import chunks
from connector.errors import StoreError
from connector.vectors.lock import LOCK_WAIT_S, lock_of
from connector.vectors.slack import scrub_segment_slack

CHROMA_SQLITE = "chroma.sqlite3"
_CHROMA_DELETE = 3  # chroma's Operation.DELETE in embeddings_queue.operation
_CHUNK = 500


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path, timeout=LOCK_WAIT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open Chroma's file {path}: {exc}") from None
    conn.execute("PRAGMA secure_delete=ON")
    return conn


def _vacuum(conn: sqlite3.Connection) -> None:
    conn.execute("VACUUM")
    with contextlib.suppress(sqlite3.Error):  # only in WAL mode; Chroma uses a rollback journal
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def purge_chroma_log(chroma_dir: Path, ids: Sequence[str], *, scope: tuple[str, str] | None = None) -> int:
    """Remove the ids' entries (and, with ``scope`` = (tenant, customer), every entry stamped with
    it) from embedded Chroma's log, then VACUUM; returns the entries removed."""
    path = chroma_dir / CHROMA_SQLITE
    if (not ids and scope is None) or not path.exists():
        return 0
    with lock_of(chroma_dir).exclusive(LOCK_WAIT_S):
        conn = _connect(path)
        try:
            removed = 0
            for chunk in chunks(ids, _CHUNK):
                marks = ",".join("?" * len(chunk))
                removed += conn.execute(
                    f"DELETE FROM embeddings_queue WHERE operation != ? AND id IN ({marks})",
                    [_CHROMA_DELETE, *chunk],
                ).rowcount
            if scope is not None:
                removed += conn.execute(
                    "DELETE FROM embeddings_queue WHERE operation != ? AND metadata IS NOT NULL"
                    " AND json_valid(metadata) AND json_extract(metadata, '$.tenant') = ?"
                    " AND json_extract(metadata, '$.customer_id') = ?",
                    [_CHROMA_DELETE, *scope],
                ).rowcount
            _vacuum(conn)
        except sqlite3.Error as exc:
            raise StoreError(f"purging erased entries from Chroma's file {path} failed: {exc}") from None
        finally:
            conn.close()
        scrub_segment_slack(chroma_dir)
    return removed


def ids_stamped(chroma_dir: Path, tenant: str, customer_id: str) -> list[str]:
    """Ids whose metadata in Chroma's file names the scope (live records of any collection)."""
    path = chroma_dir / CHROMA_SQLITE
    if not path.exists():
        return []
    with lock_of(chroma_dir).shared(LOCK_WAIT_S):
        conn = _connect(path)
        try:
            rows = conn.execute(
                "SELECT DISTINCT e.embedding_id FROM embeddings e"
                " JOIN embedding_metadata t ON t.id = e.id AND t.key = 'tenant' AND t.string_value = ?"
                " JOIN embedding_metadata c ON c.id = e.id AND c.key = 'customer_id' AND c.string_value = ?",
                [tenant, customer_id],
            ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"reading Chroma's file {path} failed: {exc}") from None
        finally:
            conn.close()
    return [r[0] for r in rows]


def is_segment_dir(path: Path) -> bool:
    try:
        uuid.UUID(path.name)
    except ValueError:
        return False
    return path.is_dir()


def remove_chroma_files(chroma_dir: Path) -> tuple[str, ...]:
    """Remove embedded Chroma's own files (its SQLite file and journals, segment directories)."""
    removed: list[str] = []
    if not chroma_dir.is_dir():
        return ()
    with lock_of(chroma_dir).exclusive(LOCK_WAIT_S):
        for path in sorted(chroma_dir.iterdir()):
            if path.name.startswith(CHROMA_SQLITE) and path.is_file():
                path.unlink()
            elif is_segment_dir(path):
                shutil.rmtree(path)
            else:
                continue
            removed.append(path.name)
    return tuple(removed)


def compact_chroma(chroma_dir: Path) -> tuple[str, ...]:
    """VACUUM embedded Chroma's SQLite file and remove segment directories no segment owns."""
    path = chroma_dir / CHROMA_SQLITE
    if not path.exists():
        return ()
    with lock_of(chroma_dir).exclusive(LOCK_WAIT_S):
        try:
            conn = _connect(path)
            try:
                owned = {row[0] for row in conn.execute("SELECT id FROM segments")}
                _vacuum(conn)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise StoreError(f"compacting Chroma's file {path} after the rebuild failed: {exc}") from None
        orphans = [p for p in sorted(chroma_dir.iterdir()) if is_segment_dir(p) and p.name not in owned]
        for orphan in orphans:
            shutil.rmtree(orphan)
        scrub_segment_slack(chroma_dir)  # what the new segments were started with
    return tuple(p.name for p in orphans)
