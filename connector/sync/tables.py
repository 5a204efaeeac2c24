"""Sync bookkeeping tables that are not in the foundation schema.

Only imports sqlmodel/sqlalchemy and ``connector.db.types``, so ``connector.schema`` can import it
without loading the sync job.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import UTCDateTime


class SyncStreamKind(SQLModel, table=True):
    """Which party kinds / document types a stream has delivered.

    The key scan marks missing rows deleted only inside these scopes, so a Customer stream's scan
    can never touch vendors or another stream's documents.
    """

    __tablename__ = "sync_stream_kind"
    __table_args__ = (sa.UniqueConstraint("tenant", "stream", "kind", name="uq_sync_stream_kind"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    stream: str = Field(max_length=64)
    record_type: str = Field(max_length=16)
    kind: str = Field(max_length=32)


class ErpSession(SQLModel, table=True):
    """The ERP session a sync run of a tenant holds, sealed (encrypted), so the next run can close it
    if this one is killed before it logs out (ERPs limit concurrent API sessions per licence)."""

    __tablename__ = "erp_session"

    tenant: str = Field(max_length=64, primary_key=True)
    opened_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    sealed: str = Field(sa_column=sa.Column(sa.Text(), nullable=False))
