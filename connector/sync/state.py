"""Per (tenant, stream) sync state: the watermark, the last full read and key scan, and the kinds
of records the stream delivers. Writers take a Connection so the caller owns the transaction (the
watermark is committed with the page that carries it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.db.models import SyncState
from connector.erp.records import DocumentRecord, PartyRecord, Record
from connector.sync.tables import SyncStreamKind

state_t: sa.Table = SyncState.__table__  # type: ignore[attr-defined]
kind_t: sa.Table = SyncStreamKind.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class StreamState:
    tenant: str
    stream: str
    watermark: datetime | None = None
    last_full_at: datetime | None = None
    last_key_scan_at: datetime | None = None
    updated_at: datetime | None = None


def load_state(conn: Connection, tenant: str, stream: str) -> StreamState:
    row = conn.execute(
        sa.select(state_t).where(state_t.c.tenant == tenant, state_t.c.stream == stream)
    ).one_or_none()
    if row is None:
        return StreamState(tenant, stream)
    return StreamState(tenant, stream, row.watermark, row.last_full_at, row.last_key_scan_at, row.updated_at)


def all_states(conn: Connection) -> list[StreamState]:
    rows = conn.execute(sa.select(state_t).order_by(state_t.c.tenant, state_t.c.stream))
    return [
        StreamState(r.tenant, r.stream, r.watermark, r.last_full_at, r.last_key_scan_at, r.updated_at)
        for r in rows
    ]


def save_state(conn: Connection, tenant: str, stream: str, now: datetime, **values: datetime | None) -> None:
    """Update the given columns (``watermark``, ``last_full_at``, ``last_key_scan_at``), creating the row."""
    values = {k: v for k, v in values.items()}
    updated = conn.execute(
        state_t.update()
        .where(state_t.c.tenant == tenant, state_t.c.stream == stream)
        .values(updated_at=now, **values)
    ).rowcount
    if not updated:
        conn.execute(state_t.insert().values(tenant=tenant, stream=stream, updated_at=now, **values))


def record_kind(record: Record) -> tuple[str, str]:
    """(record_type, kind): ("party", "customer"), ("document", "ar_invoice") or ("case", "case")."""
    if isinstance(record, PartyRecord):
        return ("party", record.kind)
    if isinstance(record, DocumentRecord):
        return ("document", record.doc_type)
    return ("case", "case")


def remember_kinds(conn: Connection, tenant: str, stream: str, kinds: Iterable[tuple[str, str]]) -> None:
    """Add the (record_type, kind) pairs this stream delivered, if new."""
    wanted = set(kinds)
    if not wanted:
        return
    known = {
        (r.record_type, r.kind)
        for r in conn.execute(
            sa.select(kind_t.c.record_type, kind_t.c.kind).where(
                kind_t.c.tenant == tenant, kind_t.c.stream == stream
            )
        )
    }
    new = sorted(wanted - known)
    if new:
        conn.execute(
            kind_t.insert(),
            [{"tenant": tenant, "stream": stream, "record_type": rt, "kind": k} for rt, k in new],
        )


def stream_kinds(conn: Connection, tenant: str, stream: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        sa.select(kind_t.c.record_type, kind_t.c.kind)
        .where(kind_t.c.tenant == tenant, kind_t.c.stream == stream)
        .order_by(kind_t.c.record_type, kind_t.c.kind)
    )
    return [(r.record_type, r.kind) for r in rows]
