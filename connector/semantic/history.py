"""The ERP change history as a memory: read a party's changes, apply retention, erase a customer.

Writes happen in the sync's page transactions (:mod:`connector.semantic.tracking`); this is the
read and upkeep side a ``Memory`` exposes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine

from connector.clock import Clock
from connector.db.reads import read_connection
from connector.scope import Scope
from connector.semantic.history_reads import ErpChange, party_changes
from connector.semantic.tracking import CONTACT_FIELDS, change_t
from connector.settings import HistorySettings


@dataclass(frozen=True, slots=True)
class HistoryRetention:
    """What one retention pass removed."""

    removed: int  # changes older than history.retention_days
    contact_removed: int  # contact-field changes older than retention.pii_days


class ErpHistory:
    """Reads and upkeep of the ``erp_change`` table."""

    def __init__(self, engine: Engine, *, clock: Clock, settings: HistorySettings, pii_days: int) -> None:
        self.engine = engine
        self.clock = clock
        self.settings = settings
        self.pii_days = pii_days

    def changes(
        self,
        scope: Scope,
        *,
        party_kind: str = "customer",
        fields: list[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[ErpChange]:
        """The party's changes (its own and its documents'), newest first."""
        with read_connection(self.engine) as conn:
            return party_changes(
                conn, scope.tenant, party_kind, scope.customer_id,
                since=since, until=until, fields=fields, limit=limit,
            )  # fmt: skip

    def apply_retention(self) -> HistoryRetention:
        """Delete changes seen before the retention window; contact fields before the PII window."""
        now = self.clock.now()
        with self.engine.begin() as conn:
            removed = conn.execute(
                change_t.delete().where(
                    change_t.c.seen_at < now - timedelta(days=self.settings.retention_days)
                )
            ).rowcount
            contact = conn.execute(
                change_t.delete().where(
                    change_t.c.field.in_(CONTACT_FIELDS),
                    change_t.c.seen_at < now - timedelta(days=self.pii_days),
                )
            ).rowcount
        return HistoryRetention(removed=removed or 0, contact_removed=contact or 0)

    def forget(self, customer_id: str, *, tenant: str) -> dict[str, int]:
        """Erase the customer's change history (its own fields and its documents')."""
        with self.engine.begin() as conn:
            removed = conn.execute(
                change_t.delete().where(
                    change_t.c.tenant == tenant,
                    change_t.c.party_kind == "customer",
                    change_t.c.party_external_id == customer_id,
                )
            ).rowcount
        return {"erp_changes": removed or 0}
