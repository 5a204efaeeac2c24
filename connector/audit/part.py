"""The audit trail as a part of a ``Memory``: events of its writes, erasures and retention.

``who`` is the caller of the running request (:func:`connector.access.current_principal`): the
MCP server and the console set it per request; the CLI and the Python API are ``cli``.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.access import current_principal
from connector.audit import trail
from connector.clock import Clock
from connector.settings import AuditSettings


@dataclass(frozen=True, slots=True)
class AuditRetention:
    removed: int  # events older than audit.retention_days


class AuditTrail:
    """Records the events of one deployment's writes (best-effort after the write commits)."""

    def __init__(self, engine: Engine, *, clock: Clock, settings: AuditSettings) -> None:
        self.engine = engine
        self.clock = clock
        self.settings = settings

    def wrote(self, action: str, tenant: str | None, customer_id: str | None) -> None:
        """A write that committed: its event, or a WARNING when it cannot be stored."""
        if self.settings.enabled:
            trail.record_quietly(
                self.engine, current_principal().name, action, tenant, customer_id, at=self.clock.now()
            )

    def pinned(self, session_id: str) -> None:
        """A pin names only its session: the event takes the session's tenant and customer."""
        if not self.settings.enabled:
            return
        from connector.working.tables import WorkSession

        session_t: sa.Table = WorkSession.__table__  # type: ignore[attr-defined]
        try:
            with self.engine.connect() as conn:
                row = conn.execute(
                    sa.select(session_t.c.tenant, session_t.c.customer_id).where(
                        session_t.c.session_id == session_id.strip()
                    )
                ).first()
        except Exception:
            row = None
        self.wrote("pin", row.tenant if row else None, row.customer_id if row else None)

    def erased(self, tenant: str, customer_id: str) -> int:
        """An erasure: earlier events lose the customer id; a tombstone without it is added.
        Raises on failure (the erasure is not complete while events still name the customer)."""
        who = current_principal().name
        return trail.forget_customer(self.engine, who, tenant, customer_id, at=self.clock.now())

    def apply_retention(self) -> AuditRetention:
        """Delete events older than ``audit.retention_days``."""
        days = self.settings.retention_days
        return AuditRetention(trail.apply_retention(self.engine, now=self.clock.now(), days=days))
