"""Learned facts in the relational store: learn, read the top ones, merge repeats, forget.

A repeated fact (same normalised text in the same scope) is not copied: it is *confirmed* — its
importance is restored to the highest it has had (or the new statement's, if higher) plus a small
boost, and its confirmation time and decay reference move to now, so decay starts over.

Repeats are matched on normalised text only, not on embedding similarity: with the offline MiniLM
model, contradictions score higher than paraphrases ("always wants" vs "never wants the PO number":
0.97; "AP processes invoices on Tuesdays" vs "... Fridays": 0.93; a true paraphrase: 0.77), so a
similarity merge would fold opposite facts together. The consolidation prompt instead shows the
known facts and asks the LLM to repeat a confirmed one verbatim.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connector.audit.pending import write_announced
from connector.clock import Clock
from connector.db.reads import read_connection
from connector.erasure import Erasures
from connector.facts.decay import day_number
from connector.facts.erp_fields import erp_field_reason
from connector.facts.models import FactError, LearnedFact
from connector.facts.normalise import MAX_FACT_CHARS, clean_content, content_key
from connector.facts.scope import FactScope
from connector.facts.tables import fact_t, job_t
from connector.llm import LLMClient
from connector.scope import Scope, tenant_or_default
from connector.settings import FactSettings
from connector.storable import storable_text

if TYPE_CHECKING:
    from connector.facts.consolidate import SessionSource
    from connector.facts.models import ConsolidationReport, DecayReport


CONFIRM_BOOST = 0.1
MAX_SOURCES = 20
MAX_SOURCE_CHARS = 200
EXPLICIT_CATEGORY = "explicit"


@dataclass(frozen=True, slots=True)
class FactInput:
    """A validated fact about to be stored or merged."""

    content: str
    importance: float
    category: str


def check_importance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FactError(f"importance must be a number between 0 and 1, got {type(value).__name__}")
    if not 0.0 <= float(value) <= 1.0:
        raise FactError(f"importance must be between 0 and 1, got {value}")
    return float(value)


def check_content(value: object) -> str:
    if not isinstance(value, str):
        raise FactError(f"fact content must be a string, got {type(value).__name__}")
    content = clean_content(storable_text(value, nul=" "))
    if not content:
        raise FactError("fact content is blank: say what was learned")
    if len(content) > MAX_FACT_CHARS:
        raise FactError(f"fact content is {len(content)} characters; at most {MAX_FACT_CHARS} are allowed")
    return content


def check_source(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_SOURCE_CHARS:
        raise FactError(f"source must be a non-blank string of at most {MAX_SOURCE_CHARS} characters")
    return value.strip()


def _merged_sources(existing: Sequence[str], new: Sequence[str]) -> list[str]:
    sources = list(existing)
    sources.extend(label for label in dict.fromkeys(new) if label not in sources)
    if len(sources) > MAX_SOURCES:  # keep where it was first learned and the latest confirmations
        sources = [sources[0], *sources[-(MAX_SOURCES - 1) :]]
    return sources


def store_fact(
    conn: Connection, scope: FactScope, fact: FactInput, sources: Sequence[str], now: datetime
) -> tuple[int, bool]:
    """Insert ``fact`` or confirm the stored one with the same normalised text; (id, created)."""
    key = content_key(fact.content)
    existing = conn.execute(
        sa.select(fact_t.c.id, fact_t.c.peak_importance, fact_t.c.sources, fact_t.c.confirmations).where(
            fact_t.c.scope_key == scope.key, fact_t.c.content_key == key
        )
    ).first()
    if existing is not None:
        restored = min(1.0, max(existing.peak_importance, fact.importance) + CONFIRM_BOOST)
        conn.execute(
            fact_t.update()
            .where(fact_t.c.id == existing.id)
            .values(
                importance=restored,
                peak_importance=restored,
                confirmations=existing.confirmations + 1,
                sources=_merged_sources(existing.sources, sources),
                updated_at=now,
                last_confirmed_at=now,
                decay_day=day_number(now),
            )
        )
        return int(existing.id), False
    inserted = conn.execute(
        fact_t.insert()
        .values(
            scope_key=scope.key,
            tenant=scope.tenant,
            customer_id=scope.customer_id,
            agent_id=scope.agent_id,
            workflow_id=scope.workflow_id,
            content=fact.content,
            content_key=key,
            category=fact.category,
            importance=fact.importance,
            peak_importance=fact.importance,
            confirmations=0,
            sources=_merged_sources([], sources),
            created_at=now,
            updated_at=now,
            last_confirmed_at=now,
            decay_day=day_number(now),
        )
        .returning(fact_t.c.id)
    ).scalar_one()
    return int(inserted), True


# Built once (every context reads it); each read binds the scope and the limit.
_TOP = (
    sa.select(fact_t)
    .where(fact_t.c.scope_key == sa.bindparam("scope_key"))
    .order_by(fact_t.c.importance.desc(), fact_t.c.id)
    .limit(sa.bindparam("limit"))
)


def to_fact(row: Any) -> LearnedFact:
    sources = tuple(row.sources or ())
    return LearnedFact(
        id=row.id,
        tenant=row.tenant,
        customer_id=row.customer_id,
        agent_id=row.agent_id,
        workflow_id=row.workflow_id,
        content=row.content,
        category=row.category,
        importance=row.importance,
        source=sources[0] if sources else None,
        sources=sources,
        confirmations=row.confirmations,
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_confirmed_at=row.last_confirmed_at,
    )


class FactStore:
    """Learned facts of every scope: explicit ``learn``, ``top`` for the context, and the
    ``consolidate`` / ``decay`` maintenance jobs."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock,
        settings: FactSettings,
        llm: LLMClient | None,
        sessions: SessionSource,
        erasures: Erasures,
        default_tenant: str,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.settings = settings
        self.llm = llm
        self.sessions = sessions  # working memory, read by consolidation
        self.erasures = erasures
        self.default_tenant = default_tenant

    def _scope(
        self, customer_id: object, tenant: str | None, agent_id: object, workflow_id: object
    ) -> FactScope:
        return FactScope.of(
            tenant_or_default(tenant, self.default_tenant), customer_id, agent_id, workflow_id
        )

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
        """Store a fact (or confirm the same one). Refuses facts about values the ERP holds."""
        scope = self._scope(customer_id, tenant, agent_id, workflow_id)
        self.erasures.require_writable(Scope.of(scope.tenant, scope.customer_id))
        fact = FactInput(check_content(content), check_importance(importance), EXPLICIT_CATEGORY)
        label = check_source(source)
        reason = erp_field_reason(fact.content, None)
        if reason is not None:
            raise FactError(f"not stored: the fact {reason}; update the ERP instead")
        with self.engine.begin() as conn:
            fact_id, _ = store_fact(conn, scope, fact, [label] if label else [], self.clock.now())
            row = conn.execute(sa.select(fact_t).where(fact_t.c.id == fact_id)).one()
            write_announced(conn)  # Memory.learn's event: commits with the fact
        return to_fact(row)

    def top(
        self,
        customer_id: str,
        *,
        tenant: str | None = None,
        limit: int = 8,
        agent_id: str | None = None,
        workflow_id: str | None = None,
    ) -> list[LearnedFact]:
        """The scope's most important facts, highest first, ties broken by id (deterministic)."""
        scope = self._scope(customer_id, tenant, agent_id, workflow_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise FactError(f"limit must be a non-negative integer, got {limit!r}")
        if limit == 0:
            return []
        with read_connection(self.engine) as conn:
            return [to_fact(row) for row in conn.execute(_TOP, {"scope_key": scope.key, "limit": limit})]

    def consolidate(self, *, max_sessions: int = 500) -> ConsolidationReport:
        """Learn facts from unconsolidated sessions, one LLM call per scope (see ``consolidate``)."""
        from connector.facts.consolidate import consolidate

        return consolidate(self, max_sessions=max_sessions)

    def decay(self) -> DecayReport:
        """Lower importance by the elapsed whole days; remove facts below the threshold."""
        from connector.facts.decay import decay

        return decay(self.engine, self.clock, self.settings)

    def forget(self, customer_id: str, *, tenant: str) -> dict[str, int]:
        """Remove the customer's facts in every agent/workflow scope, and the jobs that name them."""
        scope = FactScope.of(tenant, customer_id)
        with self.engine.begin() as conn:
            facts = conn.execute(
                fact_t.delete().where(
                    fact_t.c.tenant == scope.tenant, fact_t.c.customer_id == scope.customer_id
                )
            ).rowcount
            jobs = conn.execute(
                job_t.delete().where(job_t.c.tenant == scope.tenant, job_t.c.customer_id == scope.customer_id)
            ).rowcount
        return {"learned_facts": facts, "consolidation_jobs": jobs}
