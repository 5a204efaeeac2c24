"""The library's main object and its composition root: it builds every part and wires them together.

Agent code usually needs only this::

    from connector import Memory
    with Memory() as memory:                # settings from env / .env / config/connector.toml
        memory.record_case("ABARTENDE", "Disputed INV-004821 ...", "Credit memo CM-000311 issued ...")
        ctx = memory.build_context("ABARTENDE", "Why was I charged twice?", session_id="s-1")
        prompt = ctx.text

How a part is wired (follow this when adding a part or a collaborator):

* A part (``EpisodicMemory``, ``WorkingMemory``, ``FactStore``, ``ContextBuilder``, ``SyncRunner``)
  takes in its constructor only what it uses: the engine, the clock, its own settings section, the
  LLM client, and for a sibling it calls a small ``typing.Protocol`` defined next to the part
  (``connector.context.ports.CaseRecall``, ``connector.facts.consolidate.SessionSource``,
  ``connector.sync.runner.CaseIngest``). Something slow to make or that may fail (the embedder,
  the Chroma index) is passed as a factory the part calls on first use.
* No part imports this module. A test builds a part straight from its constructor, with stubs
  for the protocols, instead of patching a ``Memory``.
* ``Memory`` builds each part on first use (a ``cached_property``), so importing the library is
  cheap and a partial configuration still works, and exposes typed shortcuts for agents.
* What a part starts (worker threads) it stops in its ``close()``; :meth:`Memory.close` closes the
  parts it built and the resources it opened (embedder, Chroma client, engine connections).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from connector.clock import Clock, SystemClock
from connector.context.lookup import DocumentDetail
from connector.context.models import ContextResult
from connector.conversations.importer import ImportReport
from connector.conversations.models import TurnHit
from connector.conversations.recall import RecallOptions
from connector.customer_ids import CustomerIds
from connector.db.deadline import bounded_read, bounded_read_async
from connector.db.engine import engine_for
from connector.embeddings.base import Embedder
from connector.episodic.models import CaseHit, RecordedCase
from connector.episodic.rebuild import RebuildReport
from connector.erp.protocol import AdapterFactory
from connector.errors import ErasureIncomplete, StoreError
from connector.facts.models import LearnedFact
from connector.failures import database_errors, translated, translated_async
from connector.llm import LLMClient, make_llm
from connector.recall.fusion_options import Fusion
from connector.scope import Scope, tenant_or_default
from connector.semantic.history_reads import ErpChange
from connector.settings import Settings, load_settings
from connector.sync.progress import Reporter
from connector.sync.runner import SyncRunner
from connector.sync.signals import StopFlag
from connector.telemetry import CREATE_MEMORY, DELETE_MEMORY, SEARCH_MEMORY, UPDATE_MEMORY, traced_memory
from connector.working.models import PinnedValue, Turn

# The types the public methods' signatures name are imported for real (each from a light module: a
# package's __init__ imports its parts lazily), so typing.get_type_hints resolves them at run time
# (pydantic, FastAPI, typeguard); the parts' own classes stay behind TYPE_CHECKING.
if TYPE_CHECKING:
    from connector.audit.part import AuditTrail
    from connector.background import BackgroundJobs
    from connector.context import ContextBuilder
    from connector.conversations import ConversationMemory
    from connector.episodic import EpisodicMemory
    from connector.erasure import Erasures
    from connector.facts import FactStore
    from connector.semantic.history import ErpHistory
    from connector.vectors import ChromaEraser, ChromaIndex, ChromaStore
    from connector.working import WorkingMemory

_AUTO: Any = object()


class Memory:
    """Semantic, episodic and working memory of one deployment, plus ``build_context``."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        clock: Clock | None = None,
        llm: LLMClient | None = _AUTO,
        engine: Engine | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """``llm``, ``engine`` and ``embedder``, when given, are used instead of the ones the settings
        describe and stay the caller's: :meth:`close` does not close them. ``llm=None`` is the non-LLM
        mode whatever the settings say; ``embedder`` is any :class:`~connector.embeddings.base.Embedder`
        (``model_id``, ``dimension``, ``embed``), and an index built with another model refuses it."""
        self.settings = settings if settings is not None else load_settings()
        self.clock: Clock = clock or SystemClock()
        self._llm = llm
        self._engine = engine
        self._embedder = embedder

    # Lifetime --------------------------------------------------------------------------------------
    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release what this Memory started: its parts' and embedder's worker threads, its Chroma
        client, its LLM client's connections and its engine's pooled connections (an engine or LLM
        client handed in stays open: its owner closes it). Idempotent; used again, a closed Memory
        builds its parts anew."""
        built = self.__dict__  # where cached_property keeps what was built
        background = built.pop("background", None)
        if background is not None:  # first: its jobs use the parts; waiting ones are dropped
            background.close()
        for name in ("conversations", "context", "episodic"):
            part = built.pop(name, None)
            if part is not None:
                part.close()
        for name in ("facts", "working", "erasures", "audit"):
            built.pop(name, None)
        embedder = built.pop("embedder", None)
        if embedder is not None and self._embedder is None:
            embedder.close()
        store = built.pop("vector_store", None)
        if store is not None:
            from connector.vectors import release_store

            release_store(store)
        llm = built.pop("llm", None)
        if llm is not None and self._llm is _AUTO:
            llm.close()
        engine = built.pop("engine", None)
        if engine is not None and self._engine is None:
            engine.dispose()

    # Shared resources ------------------------------------------------------------------------------
    @cached_property
    def engine(self) -> Engine:
        if self._engine is not None:
            return self._engine
        with database_errors(self.settings.database_url):  # e.g. the embedded upgrade's failure
            return engine_for(self.settings)

    @cached_property
    def llm(self) -> LLMClient | None:
        """The LLM client, or None in non-LLM mode."""
        return make_llm(self.settings.llm) if self._llm is _AUTO else self._llm

    @cached_property
    def default_tenant(self) -> str:
        return self.settings.default_tenant_name()

    def tenant_name(self, tenant: str | None) -> str:
        """The tenant a call is scoped to: the given one, or the configured default."""
        return tenant_or_default(tenant, self.default_tenant)

    @cached_property
    def embedder(self) -> Embedder:
        """The embedder handed in, else a new one of the configured kind (offline MiniLM or OpenAI)."""
        if self._embedder is not None:
            return self._embedder
        from connector.embeddings import embedder_for

        return embedder_for(self.settings)

    @cached_property
    def vector_store(self) -> ChromaStore:
        """The Chroma this deployment uses, with its deadlines and (embedded) cross-process lock;
        shared by every Memory of the process on the same store."""
        from connector.vectors import acquire_store

        return acquire_store(self.settings)

    @property
    def chroma_client(self) -> Any:
        """The raw Chroma client of :attr:`vector_store` (tools and tests)."""
        return self.vector_store.client()

    @property
    def _embedded_chroma(self) -> Path | None:
        """The embedded Chroma's directory (None for a Chroma server)."""
        return None if self.settings.chroma.host else self.settings.chroma_path

    def _cases_index(self, embedder: Embedder) -> ChromaIndex:
        from connector.vectors import cases_index

        self.vector_store.client()  # an unreachable store fails here, before any row is written
        return cases_index(self.vector_store, self.settings.chroma, embedder)

    def _turns_name(self) -> str:
        from connector.vectors import turns_name

        return turns_name(self.settings.chroma)

    def _turns_index(self, embedder: Embedder) -> ChromaIndex:
        from connector.vectors import ChromaIndex

        self.vector_store.client()
        return ChromaIndex(
            self.vector_store, self._turns_name(), model_id=embedder.model_id, dimension=embedder.dimension
        )

    def _eraser(self, name: str) -> ChromaEraser:
        """A collection opened for ``forget``: the embedding model is neither loaded nor checked."""
        from connector.vectors import ChromaEraser

        self.vector_store.client()
        return ChromaEraser(self.vector_store, name)

    @cached_property
    def background(self) -> BackgroundJobs:
        """The worker that runs LLM work off the agent's path: summary folds, case rewording."""
        from connector.background import BackgroundJobs

        return BackgroundJobs("llm-background")

    def _llm_background(self) -> BackgroundJobs | None:
        return self.background if self.llm is not None else None

    # The parts -------------------------------------------------------------------------------------
    @cached_property
    def erasures(self) -> Erasures:
        """Tombstones of erased customers: every memory write checks them."""
        from connector.erasure import Erasures

        return Erasures(self.engine, self.clock)

    @cached_property
    def audit(self) -> AuditTrail:
        """The audit trail: an event for each write and erasure (who, what, scope, when; no content)."""
        from connector.audit.part import AuditTrail

        return AuditTrail(self.engine, clock=self.clock, settings=self.settings.audit)

    @cached_property
    def episodic(self) -> EpisodicMemory:
        from connector.episodic import EpisodicMemory
        from connector.recall.vector_cache import VectorCache
        from connector.vectors import cases_name

        return EpisodicMemory(
            self.engine,
            clock=self.clock,
            retention=self.settings.retention,
            embedder=lambda: self.embedder,
            index=self._cases_index,
            llm=self.llm,
            erasures=self.erasures,
            default_tenant=self.default_tenant,
            embedded_chroma_path=None if self.settings.chroma.host else self.settings.chroma_path,
            background=self._llm_background(),
            vector_cache=VectorCache(self.settings.chroma.vector_cache_mb * 2**20),
            allow_unknown_customers=self.settings.episodic.allow_unknown_customers,
            eraser=lambda: self._eraser(cases_name(self.settings.chroma)),
        )

    @cached_property
    def conversations(self) -> ConversationMemory:
        """Turns of each customer's earlier sessions: indexed in the background, recalled by similarity."""
        from connector.conversations import ConversationMemory
        from connector.recall.vector_cache import VectorCache

        return ConversationMemory(
            self.engine,
            clock=self.clock,
            settings=self.settings.conversations,
            retention=self.settings.retention,
            embedder=lambda: self.embedder,
            index=self._turns_index,
            erasures=self.erasures,
            default_tenant=self.default_tenant,
            embedded_chroma_path=None if self.settings.chroma.host else self.settings.chroma_path,
            vector_cache=VectorCache(self.settings.chroma.vector_cache_mb * 2**20),
            eraser=lambda: self._eraser(self._turns_name()),
        )

    def _conversations_on(self) -> ConversationMemory | None:
        return self.conversations if self.settings.conversations.enabled else None

    @cached_property
    def customer_ids(self) -> CustomerIds:
        """Refuses a case or width variant of a known customer id (learn, record_turn)."""
        return CustomerIds(self.engine)

    @cached_property
    def working(self) -> WorkingMemory:
        from connector.working import WorkingMemory

        return WorkingMemory(
            self.engine,
            clock=self.clock,
            settings=self.settings.working,
            llm=self.llm,
            erasures=self.erasures,
            default_tenant=self.default_tenant,
            background=self._llm_background(),
            listener=self._conversations_on(),
        )

    @cached_property
    def facts(self) -> FactStore:
        from connector.facts import FactStore

        return FactStore(
            self.engine,
            clock=self.clock,
            settings=self.settings.facts,
            llm=self.llm,
            sessions=self.working,
            erasures=self.erasures,
            default_tenant=self.default_tenant,
        )

    @cached_property
    def history(self) -> ErpHistory:
        from connector.semantic.history import ErpHistory

        return ErpHistory(
            self.engine,
            clock=self.clock,
            settings=self.settings.history,
            pii_days=self.settings.retention.pii_days,
        )

    @cached_property
    def context(self) -> ContextBuilder:
        from connector.context import ContextBuilder

        return ContextBuilder(
            self.engine,
            clock=self.clock,
            settings=self.settings.context,
            expected_sync_lag=timedelta(minutes=self.settings.sync.expected_lag_minutes),
            default_tenant=self.default_tenant,
            erp_kinds={t.name: t.kind for t in self.settings.tenants},
            cases=self.episodic,
            facts=self.facts,
            sessions=self.working,
            conversations=self._conversations_on(),
            conversation_hits=self.settings.conversations.context_hits,
            history=self.settings.history,
        )

    def sync_runner(
        self,
        *,
        adapter_factory: AdapterFactory | None = None,
        reporter: Reporter | None = None,
        stop: StopFlag | None = None,
        pause_gc: bool = False,
    ) -> SyncRunner:
        """A sync runner for the configured tenants; closed ERP cases go to :attr:`episodic`.

        It opens each tenant's adapter through ``adapter_factory`` (default: the ERP adapters of
        ``connector.adapters``, bound to these settings and clock).

        ``pause_gc`` pauses the process's garbage collector while pages flow: for a process that
        is a sync (the CLI), not for an application that syncs beside other work."""
        from connector.adapters.factory import adapter_factory as erp_adapters
        from connector.sync.runner import SyncRunner

        return SyncRunner(
            self.engine,
            clock=self.clock,
            settings=self.settings,
            cases=self.episodic,
            adapter_factory=adapter_factory or erp_adapters(self.settings.sync, self.clock),
            reporter=reporter,
            stop=stop,
            pause_gc=pause_gc,
        )

    # Shortcuts: the small public surface agents use ------------------------------------------------
    @traced_memory(CREATE_MEMORY, "episodic_cases", "customer")
    @translated
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
        """Store a resolved case's factual outcome in episodic memory (see EpisodicMemory.record_case)."""
        with self.audit.writing("case.record", self.tenant_name(tenant), customer_id):
            return self.episodic.record_case(
                customer_id, request, resolution, tenant=tenant, case_id=case_id, case_type=case_type,
                occurred_at=occurred_at, documents=documents, pii=pii, transcript=transcript,
                metadata=metadata,
            )  # fmt: skip

    @translated
    @bounded_read
    def recall_cases(
        self,
        customer_id: str,
        query: str,
        k: int = 3,
        *,
        tenant: str | None = None,
        case_type: str | None = None,
        as_of: datetime | None = None,
        include_archived: bool = False,
        profile: str | Fusion | None = None,
    ) -> list[CaseHit]:
        """Past cases of this customer most similar to ``query`` (scope first, similarity second);
        ``include_archived`` also reaches the archive by document number; ``profile``: the fusion
        (a name of ``connector.recall.profiles.CASE_PROFILES``, default ``case``, or a Fusion)."""
        return self.episodic.recall(
            customer_id, query, k=k, tenant=tenant, case_type=case_type, as_of=as_of,
            include_archived=include_archived, profile=profile,
        )  # fmt: skip

    @translated
    @bounded_read
    def recall_conversations(
        self,
        customer_id: str,
        query: str,
        k: int = 3,
        *,
        tenant: str | None = None,
        exclude_session: str | None = None,
        as_of: datetime | None = None,
        options: RecallOptions | None = None,
        include_archived: bool = False,
    ) -> list[TurnHit]:
        """Turns of this customer's earlier sessions like ``query``, each with its neighbouring turns
        (see ConversationMemory.recall); ``exclude_session`` leaves the current session out;
        ``options``: per-call k-independent choices (neighbours, dates, fusion profile);
        ``include_archived`` also reaches turns past the retention window, lexically."""
        return self.conversations.recall(
            customer_id, query, k=k, tenant=tenant, exclude_session=exclude_session, as_of=as_of,
            options=options, include_archived=include_archived,
        )  # fmt: skip

    @traced_memory(CREATE_MEMORY, "working_turns", "session")
    @translated
    def record_turn(
        self,
        session_id: str,
        customer_id: str,
        role: str,
        content: str,
        *,
        tenant: str | None = None,
        tool_name: str | None = None,
        tool_args: Any = None,
        tool_result: Any = None,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        occurred_at: datetime | None = None,
        external_id: str | None = None,
    ) -> Turn:
        """Append a conversation turn (or a tool call with structured result) to working memory;
        ``occurred_at`` dates it (default now), ``external_id`` is the caller's message id."""
        scope = Scope.of(self.tenant_name(tenant), customer_id)
        self.customer_ids.require_not_variant(scope)
        with self.audit.writing("turn.record", scope.tenant, scope.customer_id):
            return self.working.record_turn(
                session_id, customer_id, role, content, tenant=tenant, tool_name=tool_name,
                tool_args=tool_args, tool_result=tool_result, agent_id=agent_id, workflow_id=workflow_id,
                occurred_at=occurred_at, external_id=external_id,
            )  # fmt: skip

    @traced_memory(UPDATE_MEMORY, "working_pins", "session")
    @translated
    def import_conversations(
        self,
        source: str | Path | Iterable[Mapping[str, Any]],
        *,
        tenant: str | None = None,
        skip_bad: bool = False,
        allow_unknown_customers: bool | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import a conversation history: a JSON Lines file (its path) or records, one turn each.

        Dates are kept (retention counts from them), a message whose ``external_id`` its session
        already holds is skipped, and every imported turn is recallable when this returns. Any bad
        line raises ``InvalidImportError`` naming each and nothing is written, unless ``skip_bad``
        (the sessions holding one are left out whole). ``allow_unknown_customers`` defaults to
        ``episodic.allow_unknown_customers``. See docs/guides/conversations-import.md."""
        from connector.conversations.importer import Importer, records_of

        allow = allow_unknown_customers
        if allow is None:
            allow = self.settings.episodic.allow_unknown_customers
        importer = Importer(
            self.engine, writer=self.working, index=self._conversations_on(), erasures=self.erasures,
            default_tenant=self.tenant_name(tenant), now=self.clock.now(),
            window_start=self.conversations.window_start(),
            allow_unknown_customers=allow,
        )  # fmt: skip
        # One event per import, which commits session by session: it is recorded after them.
        with self.audit.writing("conversations.import", self.tenant_name(tenant), None):
            return importer.run(records_of(source), skip_bad=skip_bad, progress=progress)

    @translated
    def pin(self, session_id: str, name: str, value: Any, *, source: str | None = None) -> PinnedValue:
        """Pin a value the workflow depends on; no summary ever rewrites it."""
        with self.audit.writing("pin", None, None):  # the pin's transaction names its session's scope
            return self.working.pin(session_id, name, value, source=source)

    @traced_memory(CREATE_MEMORY, "learned_facts", "customer")
    @translated
    def learn(
        self,
        customer_id: str,
        content: str,
        *,
        tenant: str | None = None,
        importance: float = 0.5,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        source: str | None = None,
    ) -> LearnedFact:
        """Store a learned fact that has no home in the ERP (see FactStore.learn)."""
        scope = Scope.of(self.tenant_name(tenant), customer_id)
        self.customer_ids.require_not_variant(scope)
        with self.audit.writing("fact.learn", scope.tenant, scope.customer_id):
            return self.facts.learn(
                customer_id, content, tenant=tenant, importance=importance, agent_id=agent_id,
                workflow_id=workflow_id, source=source,
            )  # fmt: skip

    @translated
    @bounded_read
    def build_context(
        self,
        customer_id: str,
        query: str,
        *,
        session_id: str | None = None,
        tenant: str | None = None,
        token_budget: int | None = None,
        as_of: datetime | None = None,
        party_kind: str = "customer",
    ) -> ContextResult:
        """The token-budgeted, deterministic prompt context for one customer and query."""
        return self.context.build(
            customer_id, query, session_id=session_id, tenant=tenant, token_budget=token_budget,
            as_of=as_of, party_kind=party_kind,
        )  # fmt: skip

    @translated_async
    @bounded_read_async
    async def abuild_context(
        self,
        customer_id: str,
        query: str,
        *,
        session_id: str | None = None,
        tenant: str | None = None,
        token_budget: int | None = None,
        as_of: datetime | None = None,
        party_kind: str = "customer",
    ) -> ContextResult:
        """Async variant of :meth:`build_context` for async agents."""
        return await self.context.abuild(
            customer_id, query, session_id=session_id, tenant=tenant, token_budget=token_budget,
            as_of=as_of, party_kind=party_kind,
        )  # fmt: skip

    @traced_memory(SEARCH_MEMORY, "erp_documents", "customer")
    @translated
    @bounded_read
    def lookup_document(
        self,
        customer_id: str,
        number: str,
        *,
        tenant: str | None = None,
        party_kind: str = "customer",
        as_of: datetime | None = None,
    ) -> DocumentDetail:
        """One document of this customer (or vendor) with its lines, by number in any common
        spelling; raises UnknownDocumentError, the same for another party's document as for none.
        ``as_of``: its status, amounts, balance and dates as they stood then (from the ERP change
        history; a document dated later did not exist yet)."""
        from connector.context.lookup import UnknownDocumentError, lookup_document

        scope = Scope.of(self.tenant_name(tenant), customer_id)
        found = lookup_document(self.engine, scope, number, party_kind=party_kind)
        if as_of is None:
            return found
        from connector.context.query import ContextInputError
        from connector.db.reads import read_connection
        from connector.semantic.as_of import document_detail_as_of

        if as_of.tzinfo is None or as_of.utcoffset() is None:
            raise ContextInputError("as_of must be a timezone-aware datetime")
        with read_connection(self.engine) as conn:
            then = document_detail_as_of(conn, found, as_of)
        if then is None:
            raise UnknownDocumentError(number, party_kind, scope.customer_id, scope.tenant, [])
        return then  # type: ignore[no-any-return]

    @traced_memory(DELETE_MEMORY, None, "customer")
    @translated
    @bounded_read
    def erp_history(
        self,
        customer_id: str,
        *,
        tenant: str | None = None,
        field: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        party_kind: str = "customer",
        limit: int | None = None,
    ) -> list[ErpChange]:
        """What changed in the ERP for this customer (or vendor) and its documents, newest first, as
        the sync saw it: one :class:`ErpChange` per tracked field (``field``: only that one)."""
        scope = Scope.of(self.tenant_name(tenant), customer_id)
        fields = [field] if field is not None else None
        return self.history.changes(
            scope, party_kind=party_kind, fields=fields, since=since, until=until, limit=limit
        )

    @translated
    def forget(self, customer_id: str, *, tenant: str | None = None) -> dict[str, int]:
        """Erase a customer's cases, working memory and learned facts from every store, for good.

        A tombstone is written first, so later agent writes raise ``ErasedCustomerError`` and later
        syncs do not bring the customer's ERP cases back into episodic memory (until
        :meth:`lift_erasure`). Deleted bytes are scrubbed from the SQLite files, the embedded
        Chroma log and the unused part of Chroma's index files. Returns how many items each store
        removed. ERP facts are not touched: the ERP owns them. The embedding model is not loaded.
        If Chroma cannot be reached, everything else is still erased and ``ErasureIncomplete`` (a
        StoreError) says what was left; the erasure stays pending, and calling ``forget`` again
        (which then also searches Chroma by metadata), or :meth:`rebuild_episodic_index`, completes it.
        """
        from connector.erasure.disk import scrub_relational

        scope = Scope.of(self.tenant_name(tenant), customer_id)
        with self.audit.erasing(scope.tenant, scope.customer_id) as erasure:  # one transaction with its event
            sweep = self.erasures.erase(scope)  # an earlier erasure of the customer left work in Chroma
        removed: dict[str, int] = {}
        incomplete: list[ErasureIncomplete] = []
        for part in (self.episodic, self.conversations):
            try:
                removed.update(part.forget(scope.customer_id, tenant=scope.tenant, sweep=sweep))
            except ErasureIncomplete as exc:  # Chroma unreachable: the relational side is erased all the same
                incomplete.append(exc)
                removed.update(exc.removed)
        removed.update(self.working.forget(scope.customer_id, tenant=scope.tenant))
        removed.update(self.facts.forget(scope.customer_id, tenant=scope.tenant))
        removed.update(self.history.forget(scope.customer_id, tenant=scope.tenant))
        removed["audit_events_scrubbed"] = self.audit.erased(erasure)
        scrub_relational(self.engine)
        unreached = [u for exc in incomplete for u in exc.unreached]
        if self._embedded_chroma is not None:  # even when Chroma itself could not be opened
            try:
                self._erase_stamped(self._embedded_chroma, scope)
            except StoreError as exc:
                unreached.append(str(exc))
        if unreached:
            raise ErasureIncomplete(scope.customer_id, removed, unreached)
        self.erasures.vectors_erased(scope)
        return removed

    def _erase_stamped(self, chroma_dir: Path, scope: Scope) -> None:
        """Embedded: vectors and log entries still stamped with the customer (a write that raced
        the erasure) go too, then Chroma's file is VACUUMed (no free page keeps a byte of it)."""
        from connector.vectors import cases_name
        from connector.vectors.files import ids_stamped, purge_chroma_log

        stray = ids_stamped(chroma_dir, scope.tenant, scope.customer_id)
        if stray:
            for name in (cases_name(self.settings.chroma), self._turns_name()):
                self._eraser(name).delete(stray)
        purge_chroma_log(chroma_dir, stray, scope=(scope.tenant, scope.customer_id))

    @translated
    def rebuild_episodic_index(self) -> RebuildReport:
        """Recreate the Chroma collection from the relational store (``episodic reindex --rebuild``):
        every live entry is embedded again, erased customers stay out, and an embedded Chroma
        directory that cannot be read is replaced (its own files only). The turns collection of
        past conversations is recreated too and its indexed turns embedded again."""
        report = self.episodic.rebuild(release=self._release_chroma)
        conversations = self._conversations_on()
        if conversations is None:
            return report
        report = dataclasses.replace(report, turns_rebuilt=conversations.rebuild())
        if self._embedded_chroma is not None:
            from connector.episodic.rebuild import compact_chroma

            compact_chroma(self._embedded_chroma)  # the turns collection's dropped bytes too
        self.erasures.all_vectors_erased()  # both collections hold only what the rows allow
        return report

    def _release_chroma(self) -> None:
        """Close the Chroma client so its files can be replaced; the next use opens a new one."""
        from connector.vectors.store import clear_client_cache

        store = self.__dict__.get("vector_store")
        if store is not None:
            store.release()
        clear_client_cache()

    @translated
    def lift_erasure(self, customer_id: str, *, tenant: str | None = None) -> bool:
        """Let a forgotten customer's memories be stored again (an operator's decision; logged)."""
        scope = Scope.of(self.tenant_name(tenant), customer_id)
        with self.audit.writing("erasure.lift", scope.tenant, scope.customer_id):
            return self.erasures.lift(scope)
