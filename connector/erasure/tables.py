"""The tombstone table: one row per erased (tenant, customer), keyed by a digest of the customer id;
and the erasures whose Chroma part is not known to have finished.

The id itself is not stored, so after ``forget`` no file of the relational store names the customer.
Only imports sqlmodel/sqlalchemy and ``connector.db.types``, so ``connector.schema`` imports it cheaply.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import UTCDateTime


class ErasedCustomer(SQLModel, table=True):
    """A customer whose memories were erased: agent writes and ERP case ingests are refused."""

    __tablename__ = "erased_customer"

    tenant: str = Field(max_length=64, primary_key=True)
    customer_digest: str = Field(max_length=64, primary_key=True)
    erased_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))


class PendingErasure(SQLModel, table=True):
    """An erasure whose vector part (Chroma) has not been seen to finish: written with the
    tombstone, removed once every collection dropped the customer's vectors. While it is there,
    the next ``forget`` of the customer also searches Chroma by metadata for vectors an earlier run
    left (that search scans the collection: 80-150 ms at 100k vectors, so it runs only then).
    Kept when the erasure is lifted: its leftovers are still to be found."""

    __tablename__ = "erasure_pending"

    tenant: str = Field(max_length=64, primary_key=True)
    customer_digest: str = Field(max_length=64, primary_key=True)
    since: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
