"""The audit trail's table: one row per write, erasure or access, with who, what, scope and when.

No content is ever stored: not a turn's text, a case, a fact or a query. An erased customer's
rows lose their customer id (see :mod:`connector.audit.trail`). Only imports sqlmodel/sqlalchemy
and ``connector.db.types``, so ``connector.schema`` imports it cheaply.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import UTCDateTime


class AuditEvent(SQLModel, table=True):
    """One recorded event: ``who`` (a token's name, ``cli`` or ``loopback``) did ``action``."""

    __tablename__ = "audit_event"
    __table_args__ = (
        sa.Index("ix_audit_event_at", "at"),
        sa.Index("ix_audit_event_scope", "tenant", "customer_id", "at"),
        sa.Index("ix_audit_event_who", "who", "at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    who: str = Field(max_length=64)
    action: str = Field(max_length=64)
    tenant: str | None = Field(default=None, max_length=64)
    customer_id: str | None = Field(default=None, max_length=128)
    outcome: str = Field(default="ok", max_length=16)  # "ok", "refused" or "error"
    remote: str | None = Field(default=None, max_length=64)  # a refused sign-in's client address
    repeats: int = Field(default=1, sa_column_kwargs={"server_default": "1"})  # coalesced refusals


audit_t: sa.Table = AuditEvent.__table__  # type: ignore[attr-defined]
