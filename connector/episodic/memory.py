"""Episodic memory: resolved-case summaries of each customer, recalled by similarity.

Scope first, similarity second. A recall reads the customer's live entries (id and vector hash)
from the relational store (indexed by tenant, customer, status) and ranks them by the hybrid
pipeline it shares with turn recall (:mod:`~connector.recall.scoped_recall`: vectors from Chroma
through the in-process cache, each checked against its row; BM25 over the scope; fusion), so its
cost follows the customer's history, not the index size. The query is embedded on a worker thread
while the rows and vectors are read, since the model releases the GIL. Document numbers in the
query are matched lexically and rank first; ``include_archived`` also reaches archived entries by
document number; only the top k hits' shown fields are read.
The scope always comes from the explicit ``customer_id`` / ``tenant`` arguments and is validated
before any store is touched; caller metadata is stored as data and never consulted for scope.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.background import BackgroundJobs
from connector.clock import Clock
from connector.db.reads import read_connection
from connector.embeddings.base import Embedder
from connector.embeddings.shared_query import SharedQuery
from connector.episodic import erp_cases, lifecycle
from connector.episodic.customers import require_known_customer
from connector.episodic.documents import query_doc_keys
from connector.episodic.models import (
    CaseHit,
    EpisodicStats,
    IndexCheck,
    InvalidCaseError,
    RecordedCase,
    RestoreReport,
    RetentionReport,
)
from connector.episodic.rebuild import RebuildReport
from connector.episodic.reword import reword
from connector.episodic.tables import ARCHIVED, CASES, ENTRIES, LIVE
from connector.episodic.text_vectors import TextVectors
from connector.episodic.writer import CaseWriter, NewCase, validate
from connector.erasure import Erasures
from connector.lexical import index as lexical
from connector.lexical.tables import CASE_SOURCE
from connector.llm import LLMClient
from connector.recall import anchors, when
from connector.recall.document_keys import matches
from connector.recall.fusion import Fused, Fusion
from connector.recall.lazy_vectors import LazyVectors
from connector.recall.profiles import CASE_PROFILES, DEFAULT_CASE_PROFILE, check_profile, resolve
from connector.recall.scoped_recall import RecallQuery, ScopedRecall
from connector.recall.vector_cache import CachedIndex, VectorCache
from connector.recall.vector_index import Eraser, VectorIndex
from connector.recall.windows import Windows
from connector.scope import Scope, tenant_or_default
from connector.settings import RetentionSettings
from connector.telemetry import traced_recall

MAX_K = 50
REWORDED = ("created", "updated", "archived")  # results whose entry holds the case's own summary
_END_OF_TIME = datetime(9999, 12, 31, tzinfo=UTC)

# Built once: a recall runs these statements with parameters, without rebuilding them each time.
# Ranking reads only what it needs of every scope row (id, vector hash, its lexical document's length,
# and the document keys when the query names documents); the shown fields are read for the top k
# only. On a customer with 100 entries this halved the rows' cost (no JSON or timestamp decoding).
_SCOPE = (
    ENTRIES.c.tenant == sa.bindparam("tenant"),
    ENTRIES.c.customer_id == sa.bindparam("customer_id"),
)
_NOT_EXPIRED = (
    sa.or_(ENTRIES.c.pii.is_(False), ENTRIES.c.occurred_at >= sa.bindparam("pii_after")),
    ENTRIES.c.occurred_at <= sa.bindparam("as_of"),
)
_RECALLABLE = (
    *_SCOPE,
    ENTRIES.c.status == LIVE,
    ENTRIES.c.retain_from >= sa.bindparam("retain_after"),
    *_NOT_EXPIRED,
)
_OF_TYPE = ENTRIES.c.case_type == sa.bindparam("case_type")
_WITH_LENGTHS, _LENGTH = lexical.with_lengths(ENTRIES, CASE_SOURCE)
_RANKED_COLUMNS = (ENTRIES.c.id, ENTRIES.c.vector_hash, _LENGTH)
# The span of dates the query's words name ("last week", "in March": connector.recall.when).
_IN_SPAN = (
    ENTRIES.c.occurred_at >= sa.bindparam("span_start"),
    ENTRIES.c.occurred_at < sa.bindparam("span_end"),
)
_CANDIDATES = {
    (with_docs, of_type, in_span): sa.select(*_RANKED_COLUMNS, *([ENTRIES.c.doc_keys] if with_docs else []))
    .select_from(_WITH_LENGTHS)
    .where(*_RECALLABLE, *([_OF_TYPE] if of_type else []), *(_IN_SPAN if in_span else ()))
    for with_docs in (False, True)
    for of_type in (False, True)
    for in_span in (False, True)
}
_DETAILS = sa.select(
    ENTRIES.c.id, ENTRIES.c.case_id, ENTRIES.c.occurred_at, ENTRIES.c.summary, ENTRIES.c.summary_mode,
    ENTRIES.c.documents, ENTRIES.c.case_type,
).where(*_SCOPE, ENTRIES.c.id.in_(sa.bindparam("ids", expanding=True)))  # fmt: skip
# The archive, reached on purpose (``include_archived``): archived entries, matched by document number.
_ARCHIVED = {
    of_type: sa.select(ENTRIES.c.id, ENTRIES.c.doc_keys).where(
        *_SCOPE, ENTRIES.c.status == ARCHIVED, *_NOT_EXPIRED, *([_OF_TYPE] if of_type else [])
    )
    for of_type in (False, True)
}


class EpisodicMemory:
    """Resolved cases per (tenant, customer): record, recall, retention, restore, erasure, reindex."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock,
        retention: RetentionSettings,
        embedder: Callable[[], Embedder],
        index: Callable[[Embedder], VectorIndex],
        llm: LLMClient | None,
        erasures: Erasures,
        default_tenant: str,
        embedded_chroma_path: Path | None = None,
        background: BackgroundJobs | None = None,
        vector_cache: VectorCache | None = None,
        allow_unknown_customers: bool = False,
        eraser: Callable[[], Eraser] | None = None,
    ) -> None:
        """``embedder`` and ``index`` are factories, called once on first use: loading a model or
        opening Chroma is slow or may fail, and a context without past cases needs neither.
        ``index`` makes the store of record for entry vectors (Chroma, or any VectorIndex).
        ``embedded_chroma_path`` is the directory of an embedded Chroma, whose write-ahead log
        ``forget`` purges (None for a Chroma server). ``background``: where ``record_case`` has the
        LLM reword a case (without it, or without an LLM, the summary is final when it returns).
        ``vector_cache``: the in-process cache in front of the index (:mod:`.vector_cache`; none
        without it).
        ``allow_unknown_customers``: record cases for customer ids semantic memory does not hold
        (refused by default, :mod:`connector.episodic.customers`).
        ``eraser``: opens the vector store for ``forget`` without the embedder (loading a model to
        delete vectors is slow and needless; without it ``forget`` opens ``index``)."""
        self.engine = engine
        self.clock = clock
        self.retention = retention
        self.llm = llm
        self.erasures = erasures
        self.default_tenant = default_tenant
        self.embedded_chroma_path = embedded_chroma_path
        self.background = background
        self.allow_unknown_customers = allow_unknown_customers
        self.fusion = CASE_PROFILES[DEFAULT_CASE_PROFILE]  # no dialogue rules (speaker hedge)
        self._vectors = LazyVectors(embedder, index, vector_cache, eraser)
        self.text_vectors = TextVectors()  # the embedder's vectors of texts recorded lately, by hash
        # Embeds recall queries on its own threads while the caller reads the scope's rows.
        self._recall = ScopedRecall(self._vectors, CASE_SOURCE, "episodic-query")

    def close(self) -> None:
        """Stop this store's worker threads (the embedder and Chroma belong to whoever made them)."""
        self._recall.close()

    @property
    def embedder(self) -> Embedder:
        return self._vectors.embedder

    @property
    def index(self) -> CachedIndex:
        """The store of record for vectors, read through this store's vector cache."""
        return self._vectors.index

    @property
    def vector_cache(self) -> VectorCache:
        """The in-process cache of entry vectors in front of :attr:`index`."""
        return self._vectors.cache

    def eraser(self) -> Eraser:
        """What ``forget`` deletes through (:meth:`LazyVectors.eraser`)."""
        return self._vectors.eraser()

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
        """Store one resolved case (see :mod:`connector.episodic.writer` for de-duplication).

        A customer id semantic memory does not hold is refused with UnknownCustomerError unless
        ``allow_unknown_customers`` (:mod:`connector.episodic.customers`). Returns without waiting
        on the LLM: the case is stored with its labelled deterministic summary, and the LLM rewords
        it on the background worker (:mod:`connector.episodic.reword`).
        """
        case = self.prepare(
            customer_id, request, resolution, tenant=tenant, case_id=case_id, case_type=case_type,
            occurred_at=occurred_at, documents=documents, pii=pii, transcript=transcript, metadata=metadata,
        )  # fmt: skip
        if not self.allow_unknown_customers:
            require_known_customer(self.engine, case.scope)
        return self._record([case])[0]

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
        """Record many prepared cases with batched embedding (bulk loads, ERP ingest). Their
        customers are not checked against semantic memory: ERP cases name the ERP's own customers.

        Like :meth:`record_case`, never waits on the LLM: each new or updated entry is stored with
        its labelled deterministic summary and reworded on the bounded background worker.
        """
        return self._record(list(cases))

    def _record(self, cases: list[NewCase]) -> list[RecordedCase]:
        llm, background = self.llm, self.background
        if llm is None or background is None:
            return CaseWriter(self).write(cases)
        results = CaseWriter(self, deterministic=True).write(cases)
        last: dict[str, tuple[NewCase, RecordedCase]] = {}  # an entry written twice: its last content
        for case, recorded in zip(cases, results, strict=True):
            if recorded.status in REWORDED and recorded.summary_mode == "non-llm":
                last[recorded.entry_id] = (case, recorded)
        for entry, (case, recorded) in last.items():
            background.submit(("reword", entry), _rewording(self.engine, llm, entry, case, recorded.summary))
        return results

    # Reading -------------------------------------------------------------------------------------
    def start_query(self, query: str, shared_query: SharedQuery) -> None:
        """Start embedding ``query`` for a later :meth:`recall` with ``shared_query`` (the context
        builder reads the ERP's facts meanwhile)."""
        self._recall.embed(query, shared_query)

    @traced_recall("cases")
    def recall(
        self,
        customer_id: str,
        query: str,
        *,
        k: int = 3,
        tenant: str | None = None,
        case_type: str | None = None,
        as_of: datetime | None = None,
        include_archived: bool = False,
        shared_query: SharedQuery | None = None,
        profile: str | Fusion | None = None,
    ) -> list[CaseHit]:
        """Up to ``k`` past cases of this customer like ``query``: document-number matches first, then
        by the fusion of the lexical and dense scores (:mod:`connector.recall.fusion`).

        ``include_archived`` also searches the archive (entries past retention) by the document
        numbers the query names; such hits rank after live document matches and say ``archived``.
        ``profile``: a name of :data:`~connector.recall.profiles.CASE_PROFILES` or a :class:`Fusion`
        (default ``case``). Relative time in the query ("last week", "two days ago", "the
        past two months"; against ``as_of``, else now: :mod:`connector.recall.when`) ranks only the
        cases of that time (none cut by the dense threshold: the time is the evidence), or all of them
        when none is of that time. A date or month the query names is matched by the cases' date
        terms instead (a boost, not a filter): in ERP text it often names a due or document date.
        An ERP event the query anchors time on ("before the credit hold", "since the credit limit
        was raised": :mod:`connector.recall.anchors`) is dated by the customer's ERP history and
        narrows the same way; an event the history lacks narrows nothing.
        """
        scope = self._scope(customer_id, tenant)
        if not isinstance(query, str) or not query.strip():
            got = "a blank string" if isinstance(query, str) else type(query).__name__
            raise InvalidCaseError(
                f"query must be a non-empty string, got {got}: pass the text to search for"
            )
        if not 1 <= k <= MAX_K:
            raise InvalidCaseError(f"k must be between 1 and {MAX_K}, got {k}")
        problem = check_profile(profile, CASE_PROFILES)
        if problem is not None:
            raise InvalidCaseError(problem)
        fusion = resolve(profile, CASE_PROFILES, self.fusion)
        search = RecallQuery(query, shared_query, query_doc_keys(query))
        search.vector = self._recall.embed(query, shared_query)  # beside the rows' reads
        params = self._params(scope, case_type, as_of)
        moment = as_of or self.clock.now()
        named = when.span(query, moment, absolute=False)
        anchor = anchors.find(query)
        with read_connection(self.engine) as conn:
            if anchor is not None:  # "before the credit hold": the customer's own ERP history dates it
                named = anchors.resolve(conn, scope, anchor, moment) or named
            ranked: list[tuple[Any, Fused]] = []
            if named is not None:  # the cases of that time first; all of them when none matches
                spanned = {**params, "span_start": named[0], "span_end": named[1]}
                statement = _CANDIDATES[(bool(search.doc_keys), case_type is not None, True)]
                ranked = self._recall.rank(
                    conn, scope, statement, spanned, search, k=k, fusion=fusion, cut=False
                )
                if not ranked and search.vector is not None and search.vector.cancelled():
                    search.vector = self._recall.embed(query, shared_query)
            if not ranked:
                ranked = self._recall.rank(
                    conn, scope, _CANDIDATES[(bool(search.doc_keys), case_type is not None, False)], params,
                    search, k=k, fusion=fusion, complete=case_type is None and as_of is None,
                )  # fmt: skip
            hits = [(row.id, fused, False) for row, fused in ranked]
            if include_archived and search.doc_keys:
                hits = _with_archive(hits, self._archived(conn, params, search.doc_keys, case_type), k)
            details = self._details(conn, scope, [entry_id for entry_id, _, _ in hits])
        return [_hit(details[i], r, archived=a) for i, r, a in hits if i in details]

    @staticmethod
    def _archived(
        conn: sa.Connection, params: Mapping[str, Any], query_keys: set[str], case_type: str | None
    ) -> list[tuple[str, Fused]]:
        """Archived entries of the scope naming a queried document, most documents matched first."""
        found = []
        for row in conn.execute(_ARCHIVED[case_type is not None], params):
            named = matches(query_keys, row.doc_keys)
            if named:
                found.append((row.id, Fused(-1, 0.0, 0.0, 0.0, (), named)))
        found.sort(key=lambda hit: (-len(hit[1].matched_documents), hit[0]))
        return found

    def _params(self, scope: Scope, case_type: str | None, as_of: datetime | None) -> dict[str, Any]:
        windows = Windows.at(self.clock.now(), self.retention)
        return {
            "tenant": scope.tenant,
            "customer_id": scope.customer_id,
            "retain_after": windows.archive_before,
            "pii_after": windows.pii_before,
            "as_of": as_of or _END_OF_TIME,
            "case_type": case_type,
        }

    @staticmethod
    def _details(conn: sa.Connection, scope: Scope, ids: list[str]) -> dict[str, Any]:
        """What a hit shows, for the ranked ids only (still filtered by scope)."""
        if not ids:
            return {}
        params = {"tenant": scope.tenant, "customer_id": scope.customer_id, "ids": ids}
        return {r.id: r for r in conn.execute(_DETAILS, params).all()}

    # Upkeep --------------------------------------------------------------------------------------
    def apply_retention(self) -> RetentionReport:
        """Archive entries past the retention window; delete PII entries past theirs."""
        return lifecycle.apply_retention(self)

    def restore(
        self, customer_id: str, *, tenant: str | None = None, case_ids: Sequence[str] | None = None
    ) -> RestoreReport:
        """Bring archived entries of one customer back into the live index."""
        return lifecycle.restore(self, self._scope(customer_id, tenant), case_ids)

    def forget(self, customer_id: str, *, tenant: str | None = None, sweep: bool = True) -> dict[str, int]:
        """Erase the customer's entries and raw cases from Chroma and the relational store.

        ``sweep``: also search Chroma by metadata for vectors of the customer that no row names (an
        earlier erasure left them); ``Memory.forget`` asks for it only after an unfinished erasure."""
        return lifecycle.forget(self, self._scope(customer_id, tenant), sweep=sweep)

    def reindex(self) -> int:
        """Make the vector index hold every live entry's vector (rebuilt if the embedder changed)."""
        return lifecycle.reindex(self)

    def rebuild(self, *, release: Callable[[], None] | None = None) -> RebuildReport:
        """Recreate the vector index from the relational store (see :mod:`connector.episodic.rebuild`);
        ``release`` closes the Chroma client before unreadable embedded files are replaced."""
        from connector.episodic.rebuild import rebuild

        def reopen() -> None:
            if release is not None:
                release()
            self._vectors.reopen()  # the factory opens the index again, on a new client

        return rebuild(self, release=reopen)

    def check_index(self, *, fix: bool = False) -> IndexCheck:
        """Compare the relational entries with the vector index id by id; ``fix`` repairs both ways."""
        return lifecycle.check_index(self, fix=fix)

    def ingest_erp_cases(self, tenant: str) -> int:
        """Record closed CRM cases of ``tenant`` that are new or changed since last time (how many)."""
        return sum(erp_cases.ingest(self, tenant).values())

    def ingest_erp_cases_by_status(self, tenant: str) -> dict[str, int]:
        """As :meth:`ingest_erp_cases`, counted by what became of each case (created, archived, ...)."""
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


def _rewording(engine: Engine, llm: LLMClient, entry: str, case: NewCase, written: str) -> Callable[[], bool]:
    return lambda: reword(engine, llm, entry, case, written)


def _with_archive(
    live: list[tuple[str, Fused, bool]], archived: list[tuple[str, Fused]], k: int
) -> list[tuple[str, Fused, bool]]:
    """Live document matches, then archived document matches, then the other live hits; top ``k``."""
    named = [hit for hit in live if hit[1].matched_documents]
    others = [hit for hit in live if not hit[1].matched_documents]
    return (named + [(i, r, True) for i, r in archived] + others)[:k]


def _hit(row: Any, ranked: Fused, *, archived: bool = False) -> CaseHit:
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
        archived=archived,
    )
