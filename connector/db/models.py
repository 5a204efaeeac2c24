"""Relational tables of sync bookkeeping, and the shared metadata registry (SQLModel).

The ERP's facts (parties, their children, documents, CRM cases) are semantic memory's and live in
:mod:`connector.semantic.tables`; each other area declares its own tables beside its code.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from connector.db.types import UTCDateTime


def _utc(**kw: Any) -> Any:
    return Field(default=None, sa_column=sa.Column(UTCDateTime(), **kw))


class SyncState(SQLModel, table=True):
    """Per (tenant, stream) watermark, committed in the same transaction as the page it covers."""

    __tablename__ = "sync_state"
    __table_args__ = (sa.UniqueConstraint("tenant", "stream", name="uq_sync_state"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    stream: str = Field(max_length=64)
    watermark: datetime | None = _utc()
    last_full_at: datetime | None = _utc()
    last_key_scan_at: datetime | None = _utc()
    updated_at: datetime | None = _utc()


class SyncRun(SQLModel, table=True):
    """One row per sync run of one (tenant, stream)."""

    __tablename__ = "sync_run"
    __table_args__ = (
        sa.Index("ix_sync_run_stream", "tenant", "stream", "started_at"),
        # ``sync status``: each stream's latest run, its latest successful ones, failures since.
        sa.Index("ix_sync_run_latest", "tenant", "stream", "id"),
        sa.Index("ix_sync_run_outcome", "tenant", "stream", "status", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=64)
    stream: str = Field(max_length=64)
    mode: str = Field(default="incremental", max_length=16)
    status: str = Field(default="running", max_length=16)
    started_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False))
    finished_at: datetime | None = _utc()
    window_start: datetime | None = _utc()
    window_end: datetime | None = _utc()
    pages: int = 0
    records_read: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    requests: int = 0
    retries: int = 0
    duration_s: float | None = None
    error: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    # records skipped or cleaned, one line each naming the record's key (migration 0016)
    problems: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    # the newest ERP stamp the run read (may be ahead of the connector's clock) and whether the
    # run left the watermark where it was although it read newer records (migration 0032)
    latest_stamp: datetime | None = _utc()
    watermark_held: bool | None = None


#: SQLModel's shared registry: it holds every table whose module has been imported so far. Each area
#: declares its tables beside its code; :mod:`connector.schema` imports them all when the whole schema
#: is needed (migration autogenerate, truncating every table).
metadata = SQLModel.metadata
