"""Retention, restore, erasure, reindexing and reconciling of episodic entries.

Retention (``connector maintenance retention``, also scheduled): a live entry whose ``retain_from``
(its case date, or the time it was restored) is older than ``retention.episodic_days`` leaves the
vector index and stays in the relational archive, from where :func:`restore` brings it back
(embedding its stored summary again). Entries flagged PII are deleted from every store once their
case date is older than ``retention.pii_days``, live or archived.

Order between the two stores: what must be gone (PII) leaves Chroma first, so a failed commit leaves
no PII vector behind (the rows go on the next run); what stays (the archive) is committed first, so
a failed Chroma delete leaves a vector that no recall reads (recall takes its ids from live rows)
and that :func:`check_index` reports and removes. Writes commit rows ``vector_pending`` before
Chroma gets their vectors (see :mod:`connector.episodic.batch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from connector.db.chunks import chunks
from connector.episodic import terms as entry_terms
from connector.episodic.batch import MARK_INDEXED
from connector.episodic.models import IndexCheck, RestoreReport, RetentionReport
from connector.episodic.summary import embedding_text
from connector.episodic.tables import ARCHIVED, CASES, ENTRIES, LIVE
from connector.episodic.writer import chroma_metadata
from connector.erasure.disk import scrub_relational
from connector.errors import ErasureIncomplete, StoreError
from connector.lexical import index as lexical
from connector.recall.vector_index import vector_hash
from connector.recall.windows import Windows
from connector.scope import Scope
from connector.vectors.deadline import with_patience
from connector.vectors.files import purge_chroma_log
from connector.vectors.reconcile import RowState, compare

if TYPE_CHECKING:
    from connector.episodic.memory import EpisodicMemory

_CHUNK = 500
_RESHAPE_CHUNK = 5000  # metadata-only rewrites: no embedding, so larger writes (100k took ~25 s)
_STAMP = (
    sa.update(ENTRIES)
    .where(ENTRIES.c.id == sa.bindparam("_entry"))
    .values(
        vector_hash=sa.bindparam("_hash"),
        vector_pending=sa.bindparam("_pending"),
        embedding_model=sa.bindparam("_model"),
    )
)


@with_patience
def apply_retention(episodic: EpisodicMemory) -> RetentionReport:
    conf = episodic.retention
    now = episodic.clock.now()
    windows = Windows.at(now, conf)
    with episodic.engine.connect() as conn:
        pii_rows = conn.execute(
            sa.select(ENTRIES.c.id, ENTRIES.c.status).where(
                ENTRIES.c.pii.is_(True), ENTRIES.c.occurred_at < windows.pii_before
            )
        ).all()
        old_ids = (
            conn.execute(
                sa.select(ENTRIES.c.id).where(
                    ENTRIES.c.status == LIVE,
                    ENTRIES.c.retain_from < windows.archive_before,
                    ENTRIES.c.pii.is_(False),
                )
            )
            .scalars()
            .all()
        )
    pii_ids = [r.id for r in pii_rows]
    if pii_ids:
        episodic.index.delete([r.id for r in pii_rows if r.status == LIVE])
        if episodic.embedded_chroma_path is not None:  # PII leaves no copy in Chroma's log
            purge_chroma_log(episodic.embedded_chroma_path, pii_ids)
    with episodic.engine.begin() as conn:
        entry_terms.unindex_entries(conn, [*pii_ids, *old_ids])
        for chunk in chunks(pii_ids, _CHUNK):
            conn.execute(sa.delete(CASES).where(CASES.c.entry_id.in_(chunk)))
            conn.execute(sa.delete(ENTRIES).where(ENTRIES.c.id.in_(chunk)))
        for chunk in chunks(old_ids, _CHUNK):
            conn.execute(
                sa.update(ENTRIES)
                .where(ENTRIES.c.id.in_(chunk))
                .values(status=ARCHIVED, archived_at=now, vector_hash=None, vector_pending=False)
            )
    if old_ids:
        episodic.index.delete(list(old_ids))
    if pii_ids:
        scrub_relational(episodic.engine)
    return RetentionReport(
        ran_at=now,
        archived=len(old_ids),
        pii_deleted=len(pii_ids),
        archive_after_days=conf.episodic_days,
        pii_after_days=conf.pii_days,
        archived_entry_ids=tuple(old_ids),
    )


@with_patience
def restore(episodic: EpisodicMemory, scope: Scope, case_ids: Sequence[str] | None) -> RestoreReport:
    """Bring a customer's archived entries (all, or those holding ``case_ids``) back into the index.

    A restored entry's retention clock restarts now, so the next retention pass keeps it. Its stored
    summary is embedded again (the archive keeps no vector).
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
    with episodic.engine.connect() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
    if not rows:
        return RestoreReport(restored=0)
    with episodic.engine.begin() as conn:
        conn.execute(
            sa.update(ENTRIES)
            .where(ENTRIES.c.id.in_([r["id"] for r in rows]), ENTRIES.c.status == ARCHIVED)
            .values(status=LIVE, archived_at=None, retain_from=now)
        )
        entry_terms.index_entries(conn, rows)
    _index_rows(episodic, rows)
    return RestoreReport(restored=len(rows), entry_ids=tuple(r["id"] for r in rows))


def _index_rows(episodic: EpisodicMemory, rows: list[dict[str, Any]]) -> None:
    """Embed the rows' summaries and give Chroma their vectors, in the writer's order: the rows are
    marked pending with their new hash and committed, then Chroma is written, then the marks cleared."""
    embedder = episodic.embedder
    texts = [embedding_text(r["summary"]) for r in rows]
    vectors = embedder.embed(texts)
    for row, text in zip(rows, texts, strict=True):
        row["vector_hash"] = vector_hash(embedder.model_id, text)
    marks = [{"_entry": r["id"], "_hash": r["vector_hash"]} for r in rows]
    with episodic.engine.begin() as conn:
        conn.execute(_STAMP, [{**m, "_pending": True, "_model": embedder.model_id} for m in marks])
    episodic.index.upsert([r["id"] for r in rows], vectors, [chroma_metadata(r) for r in rows])
    with episodic.engine.begin() as conn:
        conn.execute(MARK_INDEXED, marks)


def forget(episodic: EpisodicMemory, scope: Scope, *, sweep: bool = True) -> dict[str, int]:
    """Erase every entry and raw case of one customer, live or archived, from Chroma and the tables.

    Chroma goes first, by the rows' ids (no embedder is loaded: :meth:`EpisodicMemory.eraser`); if it
    cannot be reached the tables are still erased and :class:`ErasureIncomplete` says so. Vectors
    that no row names exist only after such an unfinished erasure (every other path deletes the
    vector before its row, or keeps the row), so the scan of Chroma by metadata that finds them
    runs only with ``sweep`` (``Memory.forget``: when an earlier erasure is still pending).
    """
    in_scope = (ENTRIES.c.tenant == scope.tenant) & (ENTRIES.c.customer_id == scope.customer_id)
    with episodic.engine.connect() as conn:
        rows = conn.execute(sa.select(ENTRIES.c.id, ENTRIES.c.status).where(in_scope)).all()
    unreached = _forget_vectors(episodic, scope, [r.id for r in rows], sweep=sweep)
    episodic.vector_cache.drop_scope(scope)  # and no copy in this process's cache (even if Chroma is down)
    episodic.text_vectors.drop_scope(scope)  # nor of the vectors its texts got from the embedder
    with episodic.engine.begin() as conn:  # counted as deleted: rows a racing write added too
        cases = conn.execute(
            sa.delete(CASES).where(CASES.c.tenant == scope.tenant, CASES.c.customer_id == scope.customer_id)
        ).rowcount
        live = conn.execute(sa.delete(ENTRIES).where(in_scope, ENTRIES.c.status == LIVE)).rowcount
        archived = conn.execute(sa.delete(ENTRIES).where(in_scope)).rowcount
        lexical.delete_scope(conn, scope)
    removed = {
        "episodic_entries": int(live or 0),
        "episodic_archive": int(archived or 0),
        "episodic_cases": int(cases or 0),
    }
    if unreached is not None:
        raise ErasureIncomplete(scope.customer_id, removed, [unreached])
    return removed


def _forget_vectors(episodic: EpisodicMemory, scope: Scope, ids: list[str], *, sweep: bool) -> str | None:
    """Chroma's part of an erasure: the rows' ids and, with ``sweep``, any vector stamped with the
    scope (left by an earlier ``forget`` that could not reach Chroma). None when done, else what
    could not be done."""
    try:
        eraser = episodic.eraser()
        stray = eraser.ids_in_scope(scope.tenant, scope.customer_id) if sweep else []
        every = sorted(set(ids) | set(stray))
        if every:
            eraser.delete(every)  # archived ids are not in the index; deleting them is a no-op
            if episodic.embedded_chroma_path is not None:  # its log still holds the vectors and metadata
                purge_chroma_log(
                    episodic.embedded_chroma_path, every, scope=(scope.tenant, scope.customer_id)
                )
    except StoreError as exc:
        return f"Chroma was not reached ({exc})"
    return None


@with_patience
def reindex(episodic: EpisodicMemory) -> int:
    """Make the vector index hold every live entry's vector for the configured embedder.

    An index built with this model is reconciled (:func:`check_index` with ``fix``): nothing already
    right is embedded again. An index of another model (or none) is dropped and every live entry is
    embedded from its stored summary. Returns the number of live entries.
    """
    embedder = episodic.embedder
    with episodic.engine.begin() as conn:
        entry_terms.index_live_entries(conn)
    if episodic.index.stored_model() == (embedder.model_id, embedder.dimension):
        return check_index(episodic, fix=True).live_entries
    episodic.index.recreate()
    with episodic.engine.begin() as conn:
        conn.execute(sa.update(ENTRIES).where(ENTRIES.c.status == LIVE).values(vector_hash=None))
    return check_index(episodic, fix=True).live_entries


@with_patience
def check_index(episodic: EpisodicMemory, *, fix: bool) -> IndexCheck:
    """Compare the live entries with the vector index id by id; with ``fix`` repair both ways.

    - orphan: a vector whose id is not a live entry (archived, deleted, or a write that never
      committed): deleted;
    - missing: a live entry without a vector, or with one of another scope, or whose write is still
      pending, or whose vector's hash is not the row's: embedded from its summary again;
    - unstamped: a live entry from before vector hashes whose vector is there: its hash is recorded
      in both stores, nothing is embedded;
    - old metadata: a live entry whose vector is right but stored with the keys older versions
      wrote beside its stamp (slower to read, not wrong, so not inconsistent): its metadata is
      rewritten as the stamp alone, nothing is embedded.
    """
    index = episodic.index
    with episodic.engine.connect() as conn:
        live = {
            r.id: r
            for r in conn.execute(
                sa.select(
                    ENTRIES.c.id, ENTRIES.c.tenant, ENTRIES.c.customer_id, ENTRIES.c.vector_hash,
                    ENTRIES.c.vector_pending,
                ).where(ENTRIES.c.status == LIVE)
            )
        }  # fmt: skip
    states = {
        entry_id: RowState(row.tenant, row.customer_id, row.vector_hash, bool(row.vector_pending))
        for entry_id, row in live.items()
    }
    diff = compare(states, index.stamps())
    orphans, missing, unstamped, reshape = diff.orphans, diff.missing, diff.unstamped, diff.old_metadata
    if fix:
        index.delete(orphans)
        for chunk in chunks(sorted(missing), _CHUNK):
            _index_rows(episodic, _rows(episodic, chunk))
        for chunk in chunks(sorted(unstamped), _CHUNK):
            _stamp_rows(episodic, _rows(episodic, chunk))
        for chunk in chunks(sorted(reshape), _RESHAPE_CHUNK):
            index.update_metadata(chunk, [chroma_metadata(live[entry_id]._mapping) for entry_id in chunk])
    return IndexCheck(
        live_entries=len(live),
        index_vectors=diff.vectors,
        orphans=len(orphans),
        missing=len(missing),
        unstamped=len(unstamped),
        fixed=fix,
        old_metadata=len(reshape),
    )


def _rows(episodic: EpisodicMemory, ids: list[str]) -> list[dict[str, Any]]:
    with episodic.engine.connect() as conn:
        query = sa.select(ENTRIES).where(ENTRIES.c.id.in_(ids), ENTRIES.c.status == LIVE)
        return [dict(r) for r in conn.execute(query.order_by(ENTRIES.c.id)).mappings()]


def _stamp_rows(episodic: EpisodicMemory, rows: list[dict[str, Any]]) -> None:
    """Rows from before hashes: hash the text their vector was made from, in both stores."""
    model_id = episodic.embedder.model_id
    for row in rows:
        row["vector_hash"] = vector_hash(model_id, embedding_text(row["summary"]))
    episodic.index.update_metadata([r["id"] for r in rows], [chroma_metadata(r) for r in rows])
    with episodic.engine.begin() as conn:
        marks = [
            {"_entry": r["id"], "_hash": r["vector_hash"], "_pending": False, "_model": model_id}
            for r in rows
        ]
        conn.execute(_STAMP, marks)
