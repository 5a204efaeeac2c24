"""How fresh the context's ERP facts are: each synced stream's last commit (the party and its
documents are read by :mod:`connector.semantic`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.db.models import SyncState

sync_state_t: sa.Table = SyncState.__table__  # type: ignore[attr-defined]
_TENANT: Any = sa.bindparam("tenant")


_STREAMS = (
    sa.select(sync_state_t.c.stream, sync_state_t.c.updated_at)
    .where(sync_state_t.c.tenant == _TENANT, sync_state_t.c.updated_at.is_not(None))
    .order_by(sync_state_t.c.stream)
)


def stream_freshness(conn: Connection, tenant: str) -> list[tuple[str, datetime]]:
    """(stream, last commit time) of the tenant's synced streams, by stream name."""
    return [(stream, updated_at) for stream, updated_at in conn.execute(_STREAMS, {"tenant": tenant})]
