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
