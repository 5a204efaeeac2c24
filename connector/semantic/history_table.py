"""The ``erp_change`` table: one row per change of one tracked field of one ERP record.

Only imports sqlmodel/sqlalchemy and ``connector.db.types`` so ``connector.schema`` imports it cheaply.
Values are stored as text in a canonical form (money as a plain decimal, dates ISO) beside their
type, so a read gives back typed values and a value whose shape changed but not its meaning
(``Active`` from a string or from a select value) compares equal and records nothing.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import UTCDateTime


class ErpChange(SQLModel, table=True):
    """A tracked field of a party or document changed (or the record was deleted in the ERP)."""

    __tablename__ = "erp_change"
    __table_args__ = (
        sa.Index("ix_erp_change_party", "tenant", "party_kind", "party_external_id", "erp_changed_at"),
        sa.Index("ix_erp_change_record", "tenant", "entity", "kind", "external_id", "field"),
        sa.Index("ix_erp_change_seen", "seen_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    entity: str = Field(max_length=16)  # "party" or "document"
    kind: str = Field(max_length=16)  # customer / vendor, or the document type
    external_id: str = Field(max_length=160)
    number: str | None = Field(default=None, max_length=128)  # a document's number, for display
    party_kind: str = Field(max_length=16)
    party_external_id: str = Field(max_length=128)
    field: str = Field(max_length=64)
    value_type: str = Field(max_length=16)  # text, money, date, bool
    old_value: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    new_value: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    currency: str | None = Field(default=None, max_length=8)
    # The ERP's own change stamp of the record (its source_modified_at); the sync's clock when the
    # record carried none. History is ordered by it, so late deliveries fall in their place.
    erp_changed_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    seen_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    run_id: int | None = None
