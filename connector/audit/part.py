"""The audit trail as a part of a ``Memory``: events of its writes, erasures and retention.

Each write's event is written in the write's own transaction (:mod:`connector.audit.pending`).

``who`` is the caller of the running request (:func:`connector.access.current_principal`): the
MCP server and the console set it per request; the CLI and the Python API are ``cli``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from connector.access import current_principal
from connector.audit import trail
from connector.audit.pending import PendingEvent, announced
from connector.clock import Clock
from connector.settings import AuditSettings


@dataclass(frozen=True, slots=True)
class AuditRetention:
    removed: int  # events older than audit.retention_days


class AuditTrail:
    """Records the events of one deployment's writes, in the write's own transaction."""

    def __init__(self, engine: Engine, *, clock: Clock, settings: AuditSettings) -> None:
        self.engine = engine
        self.clock = clock
        self.settings = settings

    @contextmanager
    def writing(self, action: str, tenant: str | None, customer_id: str | None) -> Iterator[None]:
        """Run a write whose transaction records its event; a failing insert fails the write.
        A write that committed without writing it (an import: many transactions) records it
        afterwards, or logs a WARNING when it cannot be stored."""
        if not self.settings.enabled:
            yield
            return
        event = PendingEvent(current_principal().name, action, tenant, customer_id, self.clock.now())
        with announced(event):
            yield
        if not event.written:
            trail.record_quietly(self.engine, event.who, action, event.tenant, event.customer_id, at=event.at)

    @contextmanager
    def erasing(self, tenant: str, customer_id: str) -> Iterator[PendingEvent]:
        """Run the write of an erasure's tombstone: in its transaction, the customer's earlier
        events lose its id and a tombstone event without it is added (also with audit disabled)."""
        who = current_principal().name
        event = PendingEvent(who, trail.ERASE, tenant, customer_id, self.clock.now(), erases=True)
        with announced(event):
            yield event

    def erased(self, erasure: PendingEvent) -> int:
        """After an erasure's stores are emptied: events that still name the customer (written
        while it ran) lose its id too; the tombstone event if the erasure's write left none.
        Returns how many events were scrubbed. Raises on failure (the erasure is not complete
        while events still name the customer)."""
        tenant, customer_id = erasure.tenant or "", erasure.customer_id or ""
        if not erasure.written:
            return trail.forget_customer(self.engine, erasure.who, tenant, customer_id, at=erasure.at)
        return erasure.scrubbed + trail.scrub_customer(self.engine, tenant, customer_id)

    def apply_retention(self) -> AuditRetention:
        """Delete events older than ``audit.retention_days``."""
        days = self.settings.retention_days
        return AuditRetention(trail.apply_retention(self.engine, now=self.clock.now(), days=days))
