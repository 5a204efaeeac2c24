"""Relational side of episodic memory: the raw cases, the index entries and their archive state.

``episodic_entry`` is the authority on what exists: one row per live or archived summary, keyed by
the id its vector has in Chroma (the store of record for vectors), carrying the scope (tenant,
customer) that recall filters on and the ``vector_hash`` its vector must have. ``vector_pending``
is true from the moment a write commits a new or re-embedded row until Chroma has its vector, so a
write interrupted between the two stores is visible (and repaired by ``reindex --check --fix``).
``episodic_case`` keeps every recorded case verbatim (request, resolution, transcript) and points
to the entry it became, so near-duplicates merged into one entry keep their own raw record.
Imports only sqlmodel/sqlalchemy and ``connector.db.types``, so ``connector.schema`` imports it cheaply.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import JSONType, UTCDateTime

LIVE = "live"
ARCHIVED = "archived"


def _utc(nullable: bool = False) -> Any:
    return Field(default=None, sa_column=sa.Column(UTCDateTime(), nullable=nullable))


class EpisodicEntry(SQLModel, table=True):
    """One case summary as indexed (``status`` live) or moved out of the index (archived)."""

    __tablename__ = "episodic_entry"
    __table_args__ = (sa.Index("ix_episodic_entry_scope", "tenant", "customer_id", "status"),)

    id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    case_id: str = Field(max_length=160)
    case_type: str | None = Field(default=None, max_length=64)
    summary: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))
    summary_mode: str = Field(max_length=16)
    documents: list[str] = Field(default_factory=list, sa_column=sa.Column(JSONType, nullable=False))
    doc_keys: list[str] = Field(default_factory=list, sa_column=sa.Column(JSONType, nullable=False))
    occurred_at: datetime = _utc()
    retain_from: datetime = _utc()
    recorded_at: datetime = _utc()
    updated_at: datetime = _utc()
    archived_at: datetime | None = _utc(nullable=True)
    pii: bool = False
    status: str = Field(default=LIVE, max_length=16)
    embedding_model: str = Field(max_length=128)
    merged_count: int = 1
    # Which model and text made the entry's vector in Chroma (connector.recall.vector_index);
    # NULL for rows written before migration 0007 and for entries archived at write (no vector).
    vector_hash: str | None = Field(default=None, max_length=32)
    vector_pending: bool = Field(
        default=False, sa_column=sa.Column(sa.Boolean(), nullable=False, server_default=sa.false())
    )


class EpisodicCase(SQLModel, table=True):
    """A recorded case verbatim; ``case_key`` is the caller's case id or the content hash."""

    __tablename__ = "episodic_case"
    __table_args__ = (
        sa.UniqueConstraint("tenant", "customer_id", "case_key", name="uq_episodic_case_key"),
        sa.Index("ix_episodic_case_entry", "entry_id"),
        sa.Index("ix_episodic_case_hash", "tenant", "customer_id", "content_hash"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    customer_id: str = Field(max_length=128)
    case_key: str = Field(max_length=160)
    entry_id: str = Field(max_length=64)
    case_type: str | None = Field(default=None, max_length=64)
    request: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))
    resolution: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))
    transcript: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    documents: list[str] = Field(default_factory=list, sa_column=sa.Column(JSONType, nullable=False))
    extra: dict[str, Any] = Field(default_factory=dict, sa_column=sa.Column(JSONType, nullable=False))
    occurred_at: datetime = _utc()
    recorded_at: datetime = _utc()
    pii: bool = False
    content_hash: str = Field(max_length=64)


ENTRIES: sa.Table = SQLModel.metadata.tables["episodic_entry"]
CASES: sa.Table = SQLModel.metadata.tables["episodic_case"]
