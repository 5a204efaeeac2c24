"""Retention, restore, erasure and reindexing of episodic entries.

Retention (``connector maintenance retention``, also scheduled): a live entry whose ``retain_from``
(its case date, or the time it was restored) is older than ``retention.episodic_days`` leaves the
Chroma index and stays in the relational archive, from where :func:`restore` brings it back. Entries
flagged PII are deleted from every store once their case date is older than ``retention.pii_days``,
live or archived. Chroma is changed before the rows are committed, so a failure leaves at worst a
row without a vector (skipped by recall, fixed by ``reindex``), never a vector without a row.

An archived row keeps the float16 copy of its vector, so :func:`restore` puts it back into Chroma
without embedding it again, and :func:`reindex` rebuilds Chroma from the copies when they were made
by the configured model; only rows without a usable copy are embedded (and get one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa

from connector.embeddings.base import Vectors
from connector.episodic import terms as entry_terms
from connector.episodic import vectors as copies
from connector.episodic.models import RestoreReport, RetentionReport
from connector.episodic.summary import embedding_text
from connector.episodic.tables import ARCHIVED, CASES, ENTRIES, LIVE
from connector.episodic.writer import chroma_metadata
from connector.erasure.disk import purge_chroma_log
from connector.lexical import index as lexical
from connector.scope import Scope

if TYPE_CHECKING:
    from connector.episodic.memory import EpisodicMemory

_CHUNK = 500


def _chunks(ids: Sequence[str]) -> list[list[str]]:
    return [list(ids[i : i + _CHUNK]) for i in range(0, len(ids), _CHUNK)]


def apply_retention(episodic: EpisodicMemory) -> RetentionReport:
    conf = episodic.retention
    now = episodic.clock.now()
    pii_cutoff = now - timedelta(days=conf.pii_days)
    archive_cutoff = now - timedelta(days=conf.episodic_days)
    with episodic.engine.connect() as conn:
        pii_rows = conn.execute(
            sa.select(ENTRIES.c.id, ENTRIES.c.status).where(
                ENTRIES.c.pii.is_(True), ENTRIES.c.occurred_at < pii_cutoff
            )
        ).all()
        old_ids = (
            conn.execute(
                sa.select(ENTRIES.c.id).where(
                    ENTRIES.c.status == LIVE, ENTRIES.c.retain_from < archive_cutoff, ENTRIES.c.pii.is_(False)
                )
            )
            .scalars()
            .all()
        )
    pii_ids = [r.id for r in pii_rows]
    if pii_ids or old_ids:
        episodic.index.delete([r.id for r in pii_rows if r.status == LIVE] + list(old_ids))
    with episodic.engine.begin() as conn:
        entry_terms.unindex_entries(conn, [*pii_ids, *old_ids])
        for chunk in _chunks(pii_ids):
            conn.execute(sa.delete(CASES).where(CASES.c.entry_id.in_(chunk)))
            conn.execute(sa.delete(ENTRIES).where(ENTRIES.c.id.in_(chunk)))
        for chunk in _chunks(old_ids):
            conn.execute(
                sa.update(ENTRIES).where(ENTRIES.c.id.in_(chunk)).values(status=ARCHIVED, archived_at=now)
            )
    return RetentionReport(
        ran_at=now,
        archived=len(old_ids),
        pii_deleted=len(pii_ids),
        archive_after_days=conf.episodic_days,
        pii_after_days=conf.pii_days,
        archived_entry_ids=tuple(old_ids),
    )


def restore(episodic: EpisodicMemory, scope: Scope, case_ids: Sequence[str] | None) -> RestoreReport:
    """Bring a customer's archived entries (all, or those holding ``case_ids``) back into the index.

    A restored entry's retention clock restarts now, so the next retention pass keeps it.
    """
    now = episodic.clock.now()
    query = sa.select(ENTRIES).where(
        ENTRIES.c.tenant == scope.tenant,
        ENTRIES.c.customer_id == scope.customer_id,
        ENTRIES.c.status == ARCHIVED,
    )
    if case_ids is not None:
        holding = sa.select(CASES.c.entry_id).where(
            CASES.c.tenant == scope.tenant,
            CASES.c.customer_id == scope.customer_id,
            CASES.c.case_key.in_(list(case_ids)),
        )
        query = query.where(ENTRIES.c.id.in_(holding))
    with episodic.engine.begin() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
        if not rows:
            return RestoreReport(restored=0)
        ids = [r["id"] for r in rows]
        vectors = _vectors_for(episodic, conn, rows)
        conn.execute(
            sa.update(ENTRIES)
            .where(ENTRIES.c.id.in_(ids))
            .values(status=LIVE, archived_at=None, retain_from=now)
        )
        entry_terms.index_entries(conn, rows)
        episodic.index.upsert(ids, vectors, [chroma_metadata(r) for r in rows])
    return RestoreReport(restored=len(ids), entry_ids=tuple(ids))


def forget(episodic: EpisodicMemory, scope: Scope) -> dict[str, int]:
    """Erase every entry and raw case of one customer, live or archived, from Chroma and the tables."""
    in_scope = (ENTRIES.c.tenant == scope.tenant) & (ENTRIES.c.customer_id == scope.customer_id)
    with episodic.engine.connect() as conn:
        rows = conn.execute(sa.select(ENTRIES.c.id, ENTRIES.c.status).where(in_scope)).all()
    ids = [r.id for r in rows]
    if ids:
        episodic.index.delete(ids)  # archived ids are not in the index; deleting them is a no-op
        if episodic.embedded_chroma_path is not None:  # its log still holds the vectors and metadata
            purge_chroma_log(episodic.embedded_chroma_path, ids)
    with episodic.engine.begin() as conn:
        cases = conn.execute(
            sa.delete(CASES).where(CASES.c.tenant == scope.tenant, CASES.c.customer_id == scope.customer_id)
        ).rowcount
        conn.execute(sa.delete(ENTRIES).where(in_scope))
        lexical.delete_scope(conn, scope)
    return {
        "episodic_entries": sum(1 for r in rows if r.status == LIVE),
        "episodic_archive": sum(1 for r in rows if r.status == ARCHIVED),
        "episodic_cases": int(cases or 0),
    }


def reindex(episodic: EpisodicMemory, *, batch_size: int = 256) -> int:
    """Rebuild the Chroma collection from the live entries: their vector copies, else embeddings.

    Rows without a copy first take it from the existing collection when that was built with the
    configured model, so an upgraded store is rebuilt without embedding anything again.
    """
    index = episodic.index
    _backfill_copies(episodic, batch_size)
    with episodic.engine.begin() as conn:
        entry_terms.index_live_entries(conn)
    index.recreate()
    done = 0
    last_id = ""
    while True:
        with episodic.engine.begin() as conn:
            rows = _live_page(conn, last_id, batch_size)
            if not rows:
                return done
            ids = [r["id"] for r in rows]
            index.upsert(ids, _vectors_for(episodic, conn, rows), [chroma_metadata(r) for r in rows])
        done += len(rows)
        last_id = ids[-1]


def _live_page(
    conn: sa.Connection, after_id: str, limit: int, *, without_copy: bool = False
) -> list[dict[str, Any]]:
    query = sa.select(ENTRIES).where(ENTRIES.c.status == LIVE, ENTRIES.c.id > after_id)
    if without_copy:
        query = query.where(ENTRIES.c.vector.is_(None))
    return [dict(r) for r in conn.execute(query.order_by(ENTRIES.c.id).limit(limit)).mappings()]


def _backfill_copies(episodic: EpisodicMemory, batch_size: int) -> None:
    """Live rows without a copy (written before migration 0006) take it from the existing index."""
    embedder = episodic.embedder
    if episodic.index.stored_model() != (embedder.model_id, embedder.dimension):
        return  # no index, or one of another model: those rows are embedded by reindex
    last_id = ""
    while True:
        with episodic.engine.begin() as conn:
            rows = _live_page(conn, last_id, batch_size, without_copy=True)
            if not rows:
                return
            fetched = episodic.index.vectors([r["id"] for r in rows])
            _store_copies(conn, fetched, embedder.model_id)
        last_id = rows[-1]["id"]


def _vectors_for(episodic: EpisodicMemory, conn: sa.Connection, rows: list[dict[str, Any]]) -> Vectors:
    """The rows' vectors: their copies when the configured model made them, else embedded now.

    Rows embedded here get a fresh copy and the model's name, in the caller's transaction.
    """
    embedder = episodic.embedder
    model_id, dimension = embedder.model_id, embedder.dimension
    usable = [copies.usable(r["vector"], r["embedding_model"], model_id, dimension) for r in rows]
    stale = [r for r, ok in zip(rows, usable, strict=True) if not ok]
    embedded = embedder.embed([embedding_text(r["summary"]) for r in stale]) if stale else None
    fresh = {r["id"]: embedded[i] for i, r in enumerate(stale)} if embedded is not None else {}
    _store_copies(conn, fresh, model_id)
    matrix = np.empty((len(rows), dimension), dtype=np.float32)
    for i, (row, ok) in enumerate(zip(rows, usable, strict=True)):
        matrix[i] = copies.decode(row["vector"]) if ok else fresh[row["id"]]
    return matrix


def _store_copies(conn: sa.Connection, vectors: Mapping[str, Vectors], model_id: str) -> None:
    if vectors:
        conn.execute(
            sa.update(ENTRIES).where(ENTRIES.c.id == sa.bindparam("_entry")),
            [
                {"_entry": i, "vector": copies.encode(v), "embedding_model": model_id}
                for i, v in vectors.items()
            ],
        )
