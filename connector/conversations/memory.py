"""Past conversations as episodic memory: the turns of a customer's earlier sessions, recallable.

Working memory tells this part when turns were recorded (:meth:`ConversationMemory.turns_recorded`);
the part indexes them on its own bounded background worker (:mod:`connector.conversations.indexer`),
so ``record_turn`` never waits on the embedder. A turn is recallable once its pass has run: on an
idle worker a few milliseconds after ``record_turn`` returns; :meth:`flush` waits for the worker and
then indexes whatever is still pending (a job dropped for a full backlog, or sessions written by
another process), so after it returns every turn recorded before is indexed. Recall
(:mod:`connector.conversations.recall`) is scoped like case recall. Retention windows apply to
indexed turns as to cases; ``forget`` removes rows, postings and vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.background import BackgroundJobs
from connector.clock import Clock
from connector.conversations import generations, indexer
from connector.conversations import recall as recall_module
from connector.conversations.models import ConversationRetention, IndexReport, TurnHit, TurnIndexCheck
from connector.conversations.recall import RecallOptions
from connector.conversations.scope_vectors import ScopeVectors
from connector.conversations.tables import PARTS, SESSIONS, TURNS
from connector.embeddings.base import Embedder
from connector.embeddings.shared_query import SharedQuery
from connector.erasure import Erasures
from connector.errors import ErasureIncomplete, StoreError
from connector.lexical import index as lexical
from connector.lexical.tables import TURN_SOURCE
from connector.recall.fusion import Fusion
from connector.recall.lazy_vectors import LazyVectors
from connector.recall.profiles import DEFAULT_TURN_PROFILE, TURN_PROFILES
from connector.recall.scoped_recall import ScopedRecall
from connector.recall.vector_cache import CachedIndex, VectorCache
from connector.recall.vector_index import Eraser, VectorIndex
from connector.recall.windows import Windows
from connector.scope import Scope, tenant_or_default
from connector.settings import ConversationSettings, RetentionSettings
from connector.telemetry import traced_recall


class ConversationMemory:
    """Index and recall the turns of each customer's earlier sessions."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock,
        settings: ConversationSettings,
        retention: RetentionSettings,
        embedder: Callable[[], Embedder],
        index: Callable[[Embedder], VectorIndex],
        erasures: Erasures,
        default_tenant: str,
        embedded_chroma_path: Path | None = None,
        fusion: Fusion | None = None,
        vector_cache: VectorCache | None = None,
        eraser: Callable[[], Eraser] | None = None,
    ) -> None:
        """``embedder`` and ``index`` are factories called on first use (``index`` makes the turns'
        vector collection, e.g. Chroma's ``<prefix>_turns``). ``embedded_chroma_path``: the embedded
        Chroma whose log erasure purges (None for a server). ``fusion``: as case recall's default.
        ``vector_cache``: the in-process cache of turn vectors read from Chroma (none without it).
        ``eraser``: opens the collection for ``forget`` without the embedder."""
        self.engine = engine
        self.clock = clock
        self.settings = settings
        self.retention = retention
        self.erasures = erasures
        self.default_tenant = default_tenant
        self.embedded_chroma_path = embedded_chroma_path
        self.fusion = fusion or TURN_PROFILES[DEFAULT_TURN_PROFILE]
        self._vectors = LazyVectors(embedder, index, vector_cache, eraser)
        self.background = BackgroundJobs("turn-index", max_pending=settings.max_pending)
        # The hybrid ranking of a customer's indexed turns; embeds queries on its own threads.
        self.ranking = ScopedRecall(self._vectors, TURN_SOURCE, "conversation-query")
        # Each recalled customer's turn vectors as one matrix (bounded like the vector cache).
        self.scope_vectors = ScopeVectors(vector_cache.max_bytes if vector_cache is not None else 0)

    def close(self) -> None:
        """Stop the indexing worker (after the pass in hand) and the query threads."""
        self.background.close()
        self.ranking.close()

    @property
    def embedder(self) -> Embedder:
        return self._vectors.embedder

    @property
    def index(self) -> CachedIndex:
        """The turns' vectors in the store of record, read through this part's vector cache."""
        return self._vectors.index

    def eraser(self) -> Eraser:
        """What ``forget`` deletes through (:meth:`LazyVectors.eraser`)."""
        return self._vectors.eraser()

    def window_start(self) -> datetime:
        """Turns dated before this are past retention: not indexed, not recalled, not shown."""
        windows = Windows.at(self.clock.now(), self.retention)
        return windows.pii_before if self.settings.pii else windows.archive_before

    def archive_reachable(self) -> bool:
        """Whether ``include_archived`` may reach turns past :meth:`window_start`: not when that
        window is the PII window (``conversations.pii``), past which turns never come back."""
        return not self.settings.pii

    # Indexing ------------------------------------------------------------------------------------
    def turns_recorded(self, session_id: str) -> None:
        """Ask for the session's new turns to be indexed; returns at once (working memory's hook)."""
        self.background.submit(("index", session_id), lambda: indexer.index_session(self, session_id))

    def index_session(self, session_id: str) -> int:
        """Index the session's turns not indexed yet, now, on the caller's thread."""
        return indexer.index_session(self, session_id)

    def index_sessions(self, session_ids: Sequence[str], *, cache: bool = True) -> int:
        """Index these sessions' turns not indexed yet, now, embedding them together (imports);
        ``cache`` off: the vectors written are not read back into the vector cache."""
        return indexer.index_sessions(self, session_ids, cache=cache)

    def index_pending(self, *, limit: int | None = None) -> IndexReport:
        """Index every session with turns not indexed yet (catch-up; also what :meth:`flush` runs)."""
        sessions = indexer.pending_sessions(self, limit)
        turns = sum(indexer.index_session(self, sid) for sid in sessions)
        return IndexReport(turns=turns, sessions=len(sessions))

    def flush(self, timeout: float = 60.0) -> IndexReport:
        """Wait (up to ``timeout`` seconds) for the worker, then index whatever is still pending:
        afterwards every turn recorded before the call is indexed (tests, scripts, shutdown)."""
        self.background.wait(timeout)
        return self.index_pending()

    def check_index(self, *, fix: bool = False) -> TurnIndexCheck:
        """Compare the indexed turns with their vectors id by id; ``fix`` embeds only the missing."""
        return indexer.check(self, fix=fix)

    def repair(self) -> int:
        """Re-embed indexed turns whose Chroma vector is missing or stale; returns how many."""
        return indexer.repair(self)

    # Reading -------------------------------------------------------------------------------------
    @traced_recall("turns")
    def recall(
        self,
        customer_id: str,
        query: str,
        *,
        k: int = 3,
        tenant: str | None = None,
        exclude_session: str | None = None,
        as_of: datetime | None = None,
        shared_query: SharedQuery | None = None,
        options: RecallOptions | None = None,
        include_archived: bool = False,
    ) -> list[TurnHit]:
        """Up to ``k`` turns of this customer's earlier sessions like ``query``, each with its
        neighbours (``conversations.before`` / ``after``) from its own session.

        ``exclude_session``: the current session, whose turns the context already shows (as its
        summary and recent turns). A blank, punctuation-only or stop-word-only query never raises:
        it finds nothing, or what its embedding finds; query text is never search syntax.
        ``options``: per-call neighbours, dates and fusion profile (:class:`RecallOptions`).
        ``include_archived``: also the turns past the retention window, ranked lexically from
        working memory (:mod:`connector.conversations.archive`); such hits say ``archived``.
        """
        scope = Scope.of(tenant_or_default(tenant, self.default_tenant), customer_id)
        return recall_module.recall(
            self,
            scope,
            query,
            k=k,
            exclude_session=exclude_session,
            as_of=as_of,
            shared_query=shared_query,
            options=options,
            include_archived=include_archived,
        )

    # Upkeep --------------------------------------------------------------------------------------
    def apply_retention(self) -> ConversationRetention:
        """Take indexed turns past their window out of the index (rows, postings, vectors); the turns
        themselves stay in working memory."""
        with self.engine.connect() as conn:
            ids = list(
                conn.execute(sa.select(TURNS.c.id).where(TURNS.c.occurred_at < self.window_start())).scalars()
            )
        indexer.remove(self, ids)
        return ConversationRetention(removed=len(ids))

    def forget(self, customer_id: str, *, tenant: str, sweep: bool = True) -> dict[str, int]:
        """Erase the customer's indexed turns everywhere: Chroma (and its log), rows, postings, progress.

        ``sweep``: also search Chroma by metadata for turn vectors no row names (an unfinished
        erasure left them; see :func:`connector.episodic.lifecycle.forget`)."""
        scope = Scope.of(tenant, customer_id)
        in_scope = sa.and_(TURNS.c.tenant == scope.tenant, TURNS.c.customer_id == scope.customer_id)
        with self.engine.connect() as conn:
            ids = list(conn.execute(sa.select(TURNS.c.id).where(in_scope)).scalars())
        unreached = None
        erased = 0
        try:
            eraser = self.eraser()
            stray = eraser.ids_in_scope(scope.tenant, scope.customer_id) if sweep else []
            erased = indexer.remove(self, sorted(set(ids) | set(stray)), eraser=eraser)
        except StoreError as exc:  # Chroma unreachable: the rows below are erased all the same
            unreached = f"Chroma's turn vectors were not reached ({exc})"
        opened = self._vectors.opened
        if opened is not None:  # and no copy in this process's vector cache
            opened.drop_scope(scope)
        self.scope_vectors.drop(scope)
        with self.engine.begin() as conn:
            erased += conn.execute(sa.delete(TURNS).where(in_scope)).rowcount  # a concurrent pass's rows
            conn.execute(
                sa.delete(PARTS).where(
                    PARTS.c.tenant == scope.tenant, PARTS.c.customer_id == scope.customer_id
                )
            )
            generations.forget(conn, scope)
            conn.execute(
                sa.delete(SESSIONS).where(
                    SESSIONS.c.tenant == scope.tenant, SESSIONS.c.customer_id == scope.customer_id
                )
            )
            lexical.delete_source_scope(conn, scope, TURN_SOURCE)
        if unreached is not None:
            raise ErasureIncomplete(customer_id, {"conversation_turns": erased}, [unreached])
        return {"conversation_turns": erased}

    def rebuild(self) -> int:
        """Recreate the turns collection and embed every indexed turn again (``reindex --rebuild``)."""
        self._vectors.reopen()  # on the client the caller opened anew
        self.scope_vectors.clear()
        self.index.recreate()
        with self.engine.connect() as conn:
            scopes = conn.execute(sa.select(TURNS.c.tenant, TURNS.c.customer_id).distinct()).all()
        for tenant, customer_id in scopes:  # rows an interrupted forget left: erased, not embedded
            if self.erasures.is_erased(Scope.of(tenant, customer_id)):
                self.forget(customer_id, tenant=tenant)
        return self.repair()

    def stats(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            turns = conn.execute(sa.select(sa.func.count()).select_from(TURNS)).scalar_one()
            sessions = conn.execute(sa.select(sa.func.count()).select_from(SESSIONS)).scalar_one()
        return {"indexed_turns": int(turns), "indexed_sessions": int(sessions)}
