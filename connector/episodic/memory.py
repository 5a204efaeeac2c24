"""Episodic memory: resolved-case summaries of each customer, recalled by similarity.

Scope first, similarity second. A recall reads the customer's live entries from the relational
store (indexed by tenant, customer, status), each with a float16 copy of its vector, and ranks them
with numpy, so its cost follows the customer's history, not the index size, and Chroma is not
touched at all; only rows without a usable copy (written before migration 0006, or by another model)
have their vectors fetched from Chroma by id. The query is embedded on a worker thread while the rows
are read, since the model releases the GIL. Document numbers in the query are matched lexically and
rank first. The scope always comes from the explicit
``customer_id`` / ``tenant`` arguments and is validated before any store is touched; caller metadata
is stored as data and never consulted for scope.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import Clock
from connector.embeddings.base import Embedder, Vectors
from connector.episodic import erp_cases, lifecycle
from connector.episodic import vectors as copies
from connector.episodic.chroma_index import ChromaIndex
from connector.episodic.documents import query_doc_keys
from connector.episodic.fusion import Fused, Fusion, fuse
from connector.episodic.models import (
    CaseHit,
    EpisodicStats,
    InvalidCaseError,
    RecordedCase,
    RestoreReport,
    RetentionReport,
)
from connector.episodic.ranking import score_threshold
from connector.episodic.tables import ARCHIVED, CASES, ENTRIES, LIVE
from connector.episodic.writer import CaseWriter, NewCase, validate
from connector.erasure import Erasures
from connector.errors import StoreError
from connector.lexical import index as lexical
from connector.lexical.tables import CASE_SOURCE
from connector.lexical.tokens import query_terms
from connector.llm import LLMClient
from connector.scope import Scope, tenant_or_default
from connector.settings import RetentionSettings
from connector.telemetry import traced_recall
from connector.threads import LazyPool

MAX_K = 50
_END_OF_TIME = datetime(9999, 12, 31, tzinfo=UTC)

# Built once: a recall runs these statements with parameters, without rebuilding them each time.
# Ranking reads only what it needs of every scope row (id, vector copy, and the document keys when
# the query names documents); the shown fields are read for the top k only. On a customer with 100
# entries this halved the rows' cost (no JSON or timestamp decoding per row).
_SCOPE = (
    ENTRIES.c.tenant == sa.bindparam("tenant"),
    ENTRIES.c.customer_id == sa.bindparam("customer_id"),
)
_RECALLABLE = (
    *_SCOPE,
    ENTRIES.c.status == LIVE,
    ENTRIES.c.retain_from >= sa.bindparam("retain_after"),
    sa.or_(ENTRIES.c.pii.is_(False), ENTRIES.c.occurred_at >= sa.bindparam("pii_after")),
    ENTRIES.c.occurred_at <= sa.bindparam("as_of"),
)
_OF_TYPE = ENTRIES.c.case_type == sa.bindparam("case_type")
_RANKED_COLUMNS = (ENTRIES.c.id, ENTRIES.c.embedding_model, ENTRIES.c.vector)
_CANDIDATES = {
    (with_docs, of_type): sa.select(*_RANKED_COLUMNS, *([ENTRIES.c.doc_keys] if with_docs else [])).where(
        *_RECALLABLE, *([_OF_TYPE] if of_type else [])
    )
    for with_docs in (False, True)
    for of_type in (False, True)
}
_DETAILS = sa.select(
    ENTRIES.c.id, ENTRIES.c.case_id, ENTRIES.c.occurred_at, ENTRIES.c.summary, ENTRIES.c.summary_mode,
    ENTRIES.c.documents, ENTRIES.c.case_type,
).where(*_SCOPE, ENTRIES.c.id.in_(sa.bindparam("ids", expanding=True)))  # fmt: skip

# Threads that embed recall queries while the caller reads the scope's rows.
QUERY_POOL = LazyPool("episodic-query")


class EpisodicMemory:
    """Resolved cases per (tenant, customer): record, recall, retention, restore, erasure, reindex."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock,
        retention: RetentionSettings,
        embedder: Callable[[], Embedder],
        index: Callable[[Embedder], ChromaIndex],
        llm: LLMClient | None,
        erasures: Erasures,
        default_tenant: str,
        embedded_chroma_path: Path | None = None,
    ) -> None:
        """``embedder`` and ``index`` are factories, called once on first use: loading a model or
        opening Chroma is slow or may fail, and a context without past cases needs neither.
        ``embedded_chroma_path`` is the directory of an embedded Chroma, whose write-ahead log
        ``forget`` purges (None for a Chroma server)."""
        self.engine = engine
        self.clock = clock
        self.retention = retention
        self.llm = llm
        self.erasures = erasures
        self.default_tenant = default_tenant
        self.embedded_chroma_path = embedded_chroma_path
        self.fusion = Fusion()
        self._make_embedder = embedder
        self._make_index = index
        self._embedder: Embedder | None = None
        self._index: ChromaIndex | None = None
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    self._embedder = self._make_embedder()
        return self._embedder

    @property
    def index(self) -> ChromaIndex:
        if self._index is None:
            embedder = self.embedder
            with self._lock:
                if self._index is None:
                    self._index = self._make_index(embedder)
        return self._index

    def _scope(self, customer_id: object, tenant: str | None) -> Scope:
        return Scope.of(tenant_or_default(tenant, self.default_tenant), customer_id)

    # Writing -------------------------------------------------------------------------------------
    def record_case(
        self,
        customer_id: str,
        request: str,
        resolution: str,
        *,
        tenant: str | None = None,
        case_id: str | None = None,
        case_type: str | None = None,
        occurred_at: datetime | None = None,
        documents: Sequence[str] = (),
        pii: bool = False,
        transcript: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RecordedCase:
        """Store one resolved case (see :mod:`connector.episodic.writer` for de-duplication)."""
        case = self.prepare(
            customer_id, request, resolution, tenant=tenant, case_id=case_id, case_type=case_type,
            occurred_at=occurred_at, documents=documents, pii=pii, transcript=transcript, metadata=metadata,
        )  # fmt: skip
        return CaseWriter(self).write([case])[0]

    def prepare(
        self,
        customer_id: str,
        request: str,
        resolution: str,
        *,
        tenant: str | None = None,
        case_id: str | None = None,
        case_type: str | None = None,
        occurred_at: datetime | None = None,
        documents: Sequence[str] = (),
        pii: bool = False,
        transcript: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> NewCase:
        """Validate one case for :meth:`record_cases` (raises before anything is stored)."""
        scope = self._scope(customer_id, tenant)
        return validate(
            scope, request, resolution, case_id=case_id, case_type=case_type,
            occurred_at=occurred_at or self.clock.now(), documents=documents, pii=pii,
            transcript=transcript, metadata=metadata,
        )  # fmt: skip

    def record_cases(self, cases: Sequence[NewCase]) -> list[RecordedCase]:
        """Record many prepared cases with batched embedding (bulk loads, ERP ingest)."""
        return CaseWriter(self).write(list(cases))

    # Reading -------------------------------------------------------------------------------------
    @traced_recall
    def recall(
        self,
        customer_id: str,
        query: str,
        *,
        k: int = 3,
        tenant: str | None = None,
        case_type: str | None = None,
        as_of: datetime | None = None,
    ) -> list[CaseHit]:
        """Up to ``k`` past cases of this customer like ``query``: document-number matches first, then
        by the fusion of the lexical and dense scores (:mod:`connector.episodic.fusion`)."""
        scope = self._scope(customer_id, tenant)
        if not isinstance(query, str) or not query.strip():
            got = "a blank string" if isinstance(query, str) else type(query).__name__
            raise InvalidCaseError(
                f"query must be a non-empty string, got {got}: pass the text to search for"
            )
        if not 1 <= k <= MAX_K:
            raise InvalidCaseError(f"k must be between 1 and {MAX_K}, got {k}")
        embedder = self.embedder  # resolved here: the worker must not race to create it
        query_vector = QUERY_POOL.get().submit(_embed_one, embedder, query)
        query_keys = query_doc_keys(query)
        terms = query_terms(query)
        with self.engine.connect() as conn:
            rows = self._candidates(conn, scope, case_type, as_of, with_docs=bool(query_keys))
            rows, matrix = self._vectors_of(rows) if rows else (rows, None)
            if matrix is None or not rows:
                return []
            scored = lexical.search(conn, scope, CASE_SOURCE, terms, (r.id for r in rows))
            entry_keys = [r.doc_keys for r in rows] if query_keys else [()] * len(rows)
            ranked = fuse(
                query_vector.result(), matrix, [scored.get(r.id) for r in rows], entry_keys, query_keys,
                k=k, threshold=score_threshold(embedder.model_id), fusion=self.fusion,
            )  # fmt: skip
            details = self._details(conn, scope, [rows[r.index].id for r in ranked])
        return [_hit(details[rows[r.index].id], r) for r in ranked if rows[r.index].id in details]

    def _vectors_of(self, rows: list[Any]) -> tuple[list[Any], Vectors]:
        """The rows' vectors from their relational copies; Chroma by id only for rows without one.

        A row whose vector is nowhere (Chroma lost it and it has no copy) is left out until reindex.
        Going to Chroma also checks the collection's model, so a model mismatch is still reported.
        """
        model_id, dimension = self.embedder.model_id, self.embedder.dimension
        copied = [copies.usable(r.vector, r.embedding_model, model_id, dimension) for r in rows]
        if all(copied):
            return rows, copies.decode_many([r.vector for r in rows], dimension)
        fetched = self.index.vectors([r.id for r, ok in zip(rows, copied, strict=True) if not ok])
        kept: list[Any] = []
        found: list[Vectors] = []
        for row, ok in zip(rows, copied, strict=True):
            vector = copies.decode(row.vector) if ok else fetched.get(row.id)
            if vector is not None:
                kept.append(row)
                found.append(vector)
        if not kept:
            return [], np.zeros((0, dimension), dtype=np.float32)
        matrix = np.vstack(found)
        if matrix.shape[1] != dimension:
            raise StoreError(f"index vectors have dimension {matrix.shape[1]}, embedder {dimension}")
        return kept, matrix

    def _candidates(
        self,
        conn: sa.Connection,
        scope: Scope,
        case_type: str | None,
        as_of: datetime | None,
        *,
        with_docs: bool,
    ) -> list[Any]:
        """The scope's recallable entries: live, of the type, not past retention or the PII window."""
        now = self.clock.now()
        conf = self.retention
        params = {
            "tenant": scope.tenant,
            "customer_id": scope.customer_id,
            "retain_after": now - timedelta(days=conf.episodic_days),
            "pii_after": now - timedelta(days=conf.pii_days),
            "as_of": as_of or _END_OF_TIME,
            "case_type": case_type,
        }
        return list(conn.execute(_CANDIDATES[(with_docs, case_type is not None)], params).all())

    @staticmethod
    def _details(conn: sa.Connection, scope: Scope, ids: list[str]) -> dict[str, Any]:
        """What a hit shows, for the ranked ids only (still filtered by scope)."""
        if not ids:
            return {}
        params = {"tenant": scope.tenant, "customer_id": scope.customer_id, "ids": ids}
        return {r.id: r for r in conn.execute(_DETAILS, params)}

    # Upkeep --------------------------------------------------------------------------------------
    def apply_retention(self) -> RetentionReport:
        """Archive entries past the retention window; delete PII entries past theirs."""
        return lifecycle.apply_retention(self)

    def restore(
        self, customer_id: str, *, tenant: str | None = None, case_ids: Sequence[str] | None = None
    ) -> RestoreReport:
        """Bring archived entries of one customer back into the live index."""
        return lifecycle.restore(self, self._scope(customer_id, tenant), case_ids)

    def forget(self, customer_id: str, *, tenant: str | None = None) -> dict[str, int]:
        """Erase the customer's entries and raw cases from Chroma and the relational store."""
        return lifecycle.forget(self, self._scope(customer_id, tenant))

    def reindex(self) -> int:
        """Rebuild the Chroma index from the relational copy with the configured embedder."""
        return lifecycle.reindex(self)

    def ingest_erp_cases(self, tenant: str) -> int:
        """Record closed CRM cases of ``tenant`` that are new or changed since last time."""
        return erp_cases.ingest(self, tenant)

    def stats(self) -> EpisodicStats:
        with self.engine.connect() as conn:
            by_status: dict[str, int] = dict(
                conn.execute(sa.select(ENTRIES.c.status, sa.func.count()).group_by(ENTRIES.c.status)).all()
            )
            cases = conn.execute(sa.select(sa.func.count()).select_from(CASES)).scalar_one()
            customers = conn.execute(
                sa.select(sa.func.count()).select_from(
                    sa.select(ENTRIES.c.tenant, ENTRIES.c.customer_id).distinct().subquery()
                )
            ).scalar_one()
        return EpisodicStats(
            embedding_model=self.embedder.model_id,
            live_entries=int(by_status.get(LIVE, 0)),
            archived_entries=int(by_status.get(ARCHIVED, 0)),
            cases=int(cases),
            customers=int(customers),
            index_vectors=self.index.count(),
        )


def _embed_one(embedder: Embedder, text: str) -> Vectors:
    vector: Vectors = embedder.embed([text])[0]
    return vector


def _hit(row: Any, ranked: Fused) -> CaseHit:
    return CaseHit(
        case_id=row.case_id,
        entry_id=row.id,
        occurred_at=row.occurred_at,
        summary=row.summary,
        score=round(ranked.dense, 4),
        lexical_score=round(ranked.lexical, 4),
        fused_score=round(ranked.fused, 6),
        matched_terms=ranked.matched_terms,
        documents=tuple(row.documents),
        case_type=row.case_type,
        summary_mode=row.summary_mode,
        matched_documents=ranked.matched_documents,
    )
