"""The library's main object: one place that owns settings, stores and the clock.

Agent code usually needs only this::

    from connector import Memory
    memory = Memory()                       # settings from env / .env / config/connector.toml
    memory.record_case("ABARTENDE", "Disputed INV-004821 ...", "Credit memo CM-000311 issued ...")
    ctx = memory.build_context("ABARTENDE", "Why was I charged twice?", session_id="s-1")
    prompt = ctx.text

Each memory lives in its own module and gets this object (settings, engine, clock, LLM, embedder)
when first used, so importing the library is cheap and a partial configuration still works.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from connector.clock import Clock, SystemClock
from connector.db.engine import engine_for
from connector.llm import LLMClient, make_llm
from connector.settings import Settings, load_settings

if TYPE_CHECKING:
    from connector.context import ContextBuilder
    from connector.episodic import EpisodicMemory
    from connector.erasure import Erasures
    from connector.facts import FactStore
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
    ) -> None:
        self.settings = settings if settings is not None else load_settings()
        self.clock: Clock = clock or SystemClock()
        self._llm = llm
        self._engine = engine

    @cached_property
    def engine(self) -> Engine:
        return self._engine if self._engine is not None else engine_for(self.settings)

    @cached_property
    def llm(self) -> LLMClient | None:
        """The LLM client, or None in non-LLM mode."""
        return make_llm(self.settings.llm) if self._llm is _AUTO else self._llm

    def tenant_name(self, tenant: str | None) -> str:
        """The tenant a call is scoped to: the given one, or the configured default."""
        return tenant if tenant is not None else self.settings.default_tenant_name()

    @cached_property
    def erasures(self) -> Erasures:
        """Tombstones of erased customers: every memory write checks them."""
        from connector.erasure import Erasures

        return Erasures(self.engine, self.clock)

    @cached_property
    def episodic(self) -> EpisodicMemory:
        from connector.episodic import EpisodicMemory

        return EpisodicMemory(self)

    @cached_property
    def working(self) -> WorkingMemory:
        from connector.working import WorkingMemory

        return WorkingMemory(self)

    @cached_property
    def facts(self) -> FactStore:
        from connector.facts import FactStore

        return FactStore(self)

    @cached_property
    def context(self) -> ContextBuilder:
        from connector.context import ContextBuilder

        return ContextBuilder(self)

    # Delegates: the small public surface agents use --------------------------------------------
    def record_case(self, customer_id: str, request: str, resolution: str, **kw: Any) -> Any:
        """Store a resolved case's factual outcome in episodic memory (see EpisodicMemory.record_case)."""
        return self.episodic.record_case(customer_id, request, resolution, **kw)

    def recall_cases(self, customer_id: str, query: str, k: int = 3, **kw: Any) -> Any:
        """Past cases of this customer most similar to ``query`` (scope first, similarity second)."""
        return self.episodic.recall(customer_id, query, k=k, **kw)

    def record_turn(self, session_id: str, customer_id: str, role: str, content: str, **kw: Any) -> Any:
        """Append a conversation turn (or a tool call with structured result) to working memory."""
        return self.working.record_turn(session_id, customer_id, role, content, **kw)

    def pin(self, session_id: str, name: str, value: Any, **kw: Any) -> Any:
        """Pin a value the workflow depends on; no summary ever rewrites it."""
        return self.working.pin(session_id, name, value, **kw)

    def learn(self, customer_id: str, content: str, **kw: Any) -> Any:
        """Store a learned fact that has no home in the ERP (see FactStore.learn)."""
        return self.facts.learn(customer_id, content, **kw)

    def build_context(self, customer_id: str, query: str, **kw: Any) -> Any:
        """The token-budgeted, deterministic prompt context for one customer and query."""
        return self.context.build(customer_id, query, **kw)

    async def abuild_context(self, customer_id: str, query: str, **kw: Any) -> Any:
        """Async variant of :meth:`build_context` for async agents."""
        return await self.context.abuild(customer_id, query, **kw)

    def lookup_document(
        self, customer_id: str, number: str, *, tenant: str | None = None, party_kind: str = "customer"
    ) -> Any:
        """One document of this customer (or vendor) with its lines, by number in any common
        spelling; raises UnknownDocumentError, the same for another party's document as for none."""
        from connector.context.lookup import lookup_document
        from connector.scope import Scope

        scope = Scope.of(self.tenant_name(tenant), customer_id)
        return lookup_document(self.engine, scope, number, party_kind=party_kind)

    def forget(self, customer_id: str, *, tenant: str | None = None) -> dict[str, int]:
        """Erase a customer's cases, working memory and learned facts from every store, for good.

        A tombstone is written first, so later agent writes raise ``ErasedCustomerError`` and later
        syncs do not bring the customer's ERP cases back into episodic memory (until
        :meth:`lift_erasure`). Deleted bytes are scrubbed from the SQLite files and the embedded
        Chroma log. Returns how many items each store removed. ERP facts are not touched: the ERP
        owns them.
        """
        from connector.erasure.disk import scrub_relational
        from connector.scope import Scope

        scope = Scope.of(self.tenant_name(tenant), customer_id)
        self.erasures.erase(scope)
        removed: dict[str, int] = {}
        removed.update(self.episodic.forget(scope.customer_id, tenant=scope.tenant))
        removed.update(self.working.forget(scope.customer_id, tenant=scope.tenant))
        removed.update(self.facts.forget(scope.customer_id, tenant=scope.tenant))
        scrub_relational(self.engine)
        return removed

    def lift_erasure(self, customer_id: str, *, tenant: str | None = None) -> bool:
        """Let a forgotten customer's memories be stored again (an operator's decision; logged)."""
        from connector.scope import Scope

        return self.erasures.lift(Scope.of(self.tenant_name(tenant), customer_id))
