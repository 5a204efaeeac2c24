"""Tables of learned facts and consolidation jobs (SQLModel).

A fact's scope is (tenant, customer, agent, workflow); agent and workflow may be NULL. ``scope_key``
encodes all four parts with NULL distinct from every string, so one indexed equality gives
"a missing part matches only a missing part" on SQLite and PostgreSQL alike, and a unique index on
(scope_key, content_key) enforces one row per normalised fact — which a unique constraint over
nullable columns cannot do on PostgreSQL, where NULLs are distinct.

Only imports ``connector.db.types`` and sqlmodel/sqlalchemy, so ``connector.schema`` can list it
with every other area's tables cheaply.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import JSONType, UTCDateTime


def _utc(*, nullable: bool) -> Any:
    return Field(default=None, sa_column=sa.Column(UTCDateTime(), nullable=nullable))


class LearnedFactRow(SQLModel, table=True):
    """One fact with no home in the ERP, its importance and where it came from."""

    __tablename__ = "learned_fact"
    __table_args__ = (
        sa.UniqueConstraint("scope_key", "content_key", name="uq_learned_fact_content"),
        sa.Index("ix_learned_fact_top", "scope_key", sa.text("importance DESC"), "id"),
        sa.Index("ix_learned_fact_customer", "tenant", "customer_id"),
        sa.Index("ix_learned_fact_decay_day", "decay_day"),
    )

    id: int | None = Field(default=None, primary_key=True)
    scope_key: str = Field(max_length=64)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    workflow_id: str | None = Field(default=None, max_length=128)
    content: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))
    content_key: str = Field(max_length=64)
    category: str = Field(max_length=32)
    importance: float
    peak_importance: float
    confirmations: int = 0
    sources: list[str] = Field(default_factory=list, sa_column=sa.Column(JSONType, nullable=False))
    created_at: datetime = _utc(nullable=False)
    updated_at: datetime = _utc(nullable=False)
    last_confirmed_at: datetime = _utc(nullable=False)
    decay_day: int  # UTC day number (days since 1970-01-01) up to which importance is decayed


class ConsolidationJob(SQLModel, table=True):
    """One consolidation attempt for one scope: what went in, what came out, or why it failed."""

    __tablename__ = "consolidation_job"
    __table_args__ = (
        sa.Index("ix_consolidation_job_scope", "scope_key", "status", "checksum"),
        sa.Index("ix_consolidation_job_customer", "tenant", "customer_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    scope_key: str = Field(max_length=64)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    workflow_id: str | None = Field(default=None, max_length=128)
    status: str = Field(max_length=16)
    checksum: str = Field(max_length=64)
    sessions: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=sa.Column(JSONType, nullable=False)
    )
    sessions_processed: int = 0
    facts_created: int = 0
    facts_confirmed: int = 0
    facts_dropped: int = 0
    dropped: list[dict[str, Any]] = Field(default_factory=list, sa_column=sa.Column(JSONType, nullable=False))
    model: str | None = Field(default=None, max_length=128)
    error: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    started_at: datetime = _utc(nullable=False)
    finished_at: datetime | None = _utc(nullable=True)


fact_t: sa.Table = LearnedFactRow.__table__  # type: ignore[attr-defined]
job_t: sa.Table = ConsolidationJob.__table__  # type: ignore[attr-defined]
