"""``connector episodic reindex --rebuild``: Chroma recreated from the relational store, no hand work.

The relational rows hold every live entry's summary, so the vector index can always be rebuilt
from them: the collection is dropped and created empty, and every live entry is embedded again
(archived entries stay out of the index, as always). When an embedded Chroma cannot even be opened
(a corrupt ``chroma.sqlite3``, a segment directory gone) or its collection cannot be dropped, its
own files are removed first (``chroma.sqlite3`` with its journals and the segment directories,
nothing else in the directory) and Chroma starts empty. A customer with a tombstone stays erased:
rows of it that an interrupted ``forget`` left behind are not embedded. Afterwards the embedded
log file is VACUUMed and segment directories no segment owns are removed, so what the dropped
collection held (an erased customer's vectors and metadata included) leaves no bytes; the new
segments' files are zeroed past their last element, since Chroma starts them with uninitialised
memory that, in a process which handled the erased customer, can hold its bytes
(:mod:`connector.vectors.slack`); the file work is :mod:`connector.vectors.files`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa

from connector.db.chunks import chunks
from connector.episodic import terms as entry_terms
from connector.episodic.lifecycle import _CHUNK, _index_rows, _rows
from connector.episodic.tables import ARCHIVED, ENTRIES, LIVE
from connector.erasure import customer_digest
from connector.errors import StoreError
from connector.vectors.deadline import with_patience
from connector.vectors.files import compact_chroma, remove_chroma_files

__all__ = ["RebuildReport", "compact_chroma", "rebuild", "remove_chroma_files"]

if TYPE_CHECKING:
    from connector.episodic.memory import EpisodicMemory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RebuildReport:
    """What ``reindex --rebuild`` did: entries embedded again, left out, and Chroma files replaced."""

    collection: str
    rebuilt: int
    skipped_erased: int
    archived: int
    removed_files: tuple[str, ...] = ()
    turns_rebuilt: int = 0  # past-conversation turns embedded again (connector.conversations)


@with_patience
def rebuild(episodic: EpisodicMemory, *, release: Callable[[], None]) -> RebuildReport:
    """Recreate the vector index from the relational store.

    ``release`` closes the Chroma client and makes ``episodic`` open a new one on next use; it is
    called before an unreadable embedded directory's files are removed.
    """
    removed: tuple[str, ...] = ()
    try:
        _recreate_empty(episodic)
    except StoreError as exc:
        path = episodic.embedded_chroma_path
        if path is None:
            raise StoreError(f"cannot recreate the episodic collection on the Chroma server: {exc}") from None
        log.warning("Chroma at %s is unreadable (%s): its files are recreated", path, exc)
        release()
        removed = remove_chroma_files(path)
        _recreate_empty(episodic)
    with episodic.engine.begin() as conn:
        entry_terms.index_live_entries(conn)
        conn.execute(sa.update(ENTRIES).where(ENTRIES.c.status == LIVE).values(vector_hash=None))
    keep, skipped = _live_ids_not_erased(episodic)
    for chunk in chunks(keep, _CHUNK):
        _index_rows(episodic, _rows(episodic, chunk))
    if episodic.embedded_chroma_path is not None:
        removed += compact_chroma(episodic.embedded_chroma_path)
    with episodic.engine.connect() as conn:
        archived = conn.execute(
            sa.select(sa.func.count()).select_from(ENTRIES).where(ENTRIES.c.status == ARCHIVED)
        ).scalar_one()
    return RebuildReport(
        collection=_name(episodic),
        rebuilt=len(keep),
        skipped_erased=skipped,
        archived=int(archived),
        removed_files=removed,
    )


def _recreate_empty(episodic: EpisodicMemory) -> None:
    """Drop and create the collection; a collection that survives the drop (it could not be
    dropped) is not empty, and that is a failure too."""
    index = episodic.index
    index.recreate()
    if index.count() != 0:
        raise StoreError(f"the collection {_name(episodic)!r} could not be dropped")


def _name(episodic: EpisodicMemory) -> str:
    index = episodic.index
    return str(getattr(getattr(index, "inner", index), "name", ""))


def _live_ids_not_erased(episodic: EpisodicMemory) -> tuple[list[str], int]:
    """Live entry ids to embed, and how many were left out because their customer is erased."""
    with episodic.engine.connect() as conn:
        rows = conn.execute(
            sa.select(ENTRIES.c.id, ENTRIES.c.tenant, ENTRIES.c.customer_id)
            .where(ENTRIES.c.status == LIVE)
            .order_by(ENTRIES.c.id)
        ).all()
    erased = {tenant: episodic.erasures.erased_digests(tenant) for tenant in {r.tenant for r in rows}}
    keep = [r.id for r in rows if customer_digest(r.tenant, r.customer_id) not in erased[r.tenant]]
    return keep, len(rows) - len(keep)
