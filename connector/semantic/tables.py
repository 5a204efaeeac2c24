"""Semantic memory's tables: the ERP's facts as of the last sync (SQLModel).

Every ERP-sourced row is keyed by (tenant, kind, external_id), keeps its raw source JSON, the
source modification time, the time we synced it and a content hash; ERP deletions set
``deleted_at`` and never remove history. Child rows (contacts, addresses, attributes) hang off
the party's natural key so bulk upserts need no id round trip.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import JSONType, Money, UTCDateTime


def _utc(**kw: Any) -> Any:
    return Field(default=None, sa_column=sa.Column(UTCDateTime(), **kw))


def _money() -> Any:
    return Field(default=None, sa_column=sa.Column(Money()))


def _json() -> Any:
    return Field(default_factory=dict, sa_column=sa.Column(JSONType, nullable=False))


class Party(SQLModel, table=True):
    """A customer or vendor as the ERP knows it."""

    __tablename__ = "party"
    __table_args__ = (
        sa.UniqueConstraint("tenant", "kind", "external_id", name="uq_party_key"),
        sa.Index("ix_party_tenant_name", "tenant", "name"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    kind: str = Field(max_length=16)
    external_id: str = Field(max_length=128)
    name: str | None = Field(default=None, max_length=255)
    status: str | None = Field(default=None, max_length=64)
    currency: str | None = Field(default=None, max_length=8)
    credit_limit: Decimal | None = _money()
    terms: str | None = Field(default=None, max_length=64)
    tax_zone: str | None = Field(default=None, max_length=64)
    tax_id: str | None = Field(default=None, max_length=64)
    party_class: str | None = Field(default=None, max_length=64)
    email: str | None = Field(default=None, max_length=255)
    phone: str | None = Field(default=None, max_length=64)
    extra: dict[str, Any] = _json()
    raw: dict[str, Any] = _json()
    content_hash: str = Field(max_length=64)
    source_modified_at: datetime | None = _utc()
    synced_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    deleted_at: datetime | None = _utc()


class PartyContact(SQLModel, table=True):
    __tablename__ = "party_contact"
    __table_args__ = (sa.Index("ix_party_contact_party", "tenant", "party_kind", "party_external_id"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    party_kind: str = Field(max_length=16)
    party_external_id: str = Field(max_length=128)
    ordinal: int
    role: str = Field(max_length=32)
    name: str | None = Field(default=None, max_length=255)
    email: str | None = Field(default=None, max_length=255)
    phone: str | None = Field(default=None, max_length=64)
    external_id: str | None = Field(default=None, max_length=128)


class PartyAddress(SQLModel, table=True):
    __tablename__ = "party_address"
    __table_args__ = (sa.Index("ix_party_address_party", "tenant", "party_kind", "party_external_id"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    party_kind: str = Field(max_length=16)
    party_external_id: str = Field(max_length=128)
    ordinal: int
    role: str = Field(max_length=32)
    line1: str | None = Field(default=None, max_length=255)
    line2: str | None = Field(default=None, max_length=255)
    city: str | None = Field(default=None, max_length=128)
    region: str | None = Field(default=None, max_length=64)
    postal_code: str | None = Field(default=None, max_length=32)
    country: str | None = Field(default=None, max_length=64)


class PartyAttribute(SQLModel, table=True):
    """ERP attributes and custom fields (``cf:View.Field``), one row per name."""

    __tablename__ = "party_attribute"
    __table_args__ = (
        sa.UniqueConstraint("tenant", "party_kind", "party_external_id", "name", name="uq_party_attribute"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    party_kind: str = Field(max_length=16)
    party_external_id: str = Field(max_length=128)
    name: str = Field(max_length=128)
    value: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))


class Document(SQLModel, table=True):
    """AR invoices, AP bills, sales orders and credit memos."""

    __tablename__ = "document"
    __table_args__ = (
        sa.UniqueConstraint("tenant", "doc_type", "external_id", name="uq_document_key"),
        sa.Index("ix_document_party", "tenant", "party_kind", "party_external_id", "is_open"),
        sa.Index("ix_document_number", "tenant", "number"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    doc_type: str = Field(max_length=16)
    external_id: str = Field(max_length=160)
    number: str = Field(max_length=128)
    party_kind: str = Field(max_length=16)
    party_external_id: str = Field(max_length=128)
    status: str | None = Field(default=None, max_length=64)
    currency: str | None = Field(default=None, max_length=8)
    amount: Decimal | None = _money()
    balance: Decimal | None = _money()
    doc_date: date | None = None
    due_date: date | None = None
    description: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    customer_ref: str | None = Field(default=None, max_length=128)
    is_open: bool = True
    extra: dict[str, Any] = _json()
    raw: dict[str, Any] = _json()
    content_hash: str = Field(max_length=64)
    source_modified_at: datetime | None = _utc()
    synced_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    deleted_at: datetime | None = _utc()


class CrmCase(SQLModel, table=True):
    """CRM cases as the ERP holds them (closed ones also become episodic entries)."""

    __tablename__ = "crm_case"
    __table_args__ = (
        sa.UniqueConstraint("tenant", "external_id", name="uq_crm_case_key"),
        sa.Index("ix_crm_case_customer", "tenant", "customer_external_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    external_id: str = Field(max_length=128)
    customer_external_id: str | None = Field(default=None, max_length=128)
    subject: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    status: str | None = Field(default=None, max_length=64)
    priority: str | None = Field(default=None, max_length=32)
    case_class: str | None = Field(default=None, max_length=64)
    reported_at: datetime | None = _utc()
    closed_at: datetime | None = _utc()
    description: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    resolution: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    is_closed: bool = False
    extra: dict[str, Any] = _json()
    raw: dict[str, Any] = _json()
    content_hash: str = Field(max_length=64)
    source_modified_at: datetime | None = _utc()
    synced_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    deleted_at: datetime | None = _utc()
    episodic_hash: str | None = Field(default=None, max_length=64)  # content recorded into episodic memory
