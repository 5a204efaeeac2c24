"""An audit event written inside the transaction of the write it records.

``Memory``'s shortcuts announce their event (:func:`announced`) around the store call; the store's
write transaction writes it (:func:`write_announced`) before it commits. A failing insert fails the
write and rolls it back, so a committed turn, case, pin, fact or tombstone always has its event.
Outside an announcement (a store used directly, a sync) :func:`write_announced` does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection

from connector.audit.trail import ERASE, record, scrub_customer


@dataclass(slots=True)
class PendingEvent:
    """The event of the running write; ``erases``: an erasure (scrub the customer's earlier
    events, then a tombstone event without its id)."""

    who: str
    action: str
    tenant: str | None
    customer_id: str | None
    at: datetime
    erases: bool = False
    written: bool = False  # by a transaction that committed, unless the write raised
    scrubbed: int = 0


_announced: ContextVar[PendingEvent | None] = ContextVar("connector_pending_audit", default=None)


@contextmanager
def announced(event: PendingEvent) -> Iterator[PendingEvent]:
    """Run a write whose transaction records ``event`` (see :func:`write_announced`)."""
    token = _announced.set(event)
    try:
        yield event
    finally:
        _announced.reset(token)


def write_announced(conn: Connection, *, tenant: str | None = None, customer_id: str | None = None) -> None:
    """Write the announced event in ``conn``'s transaction (nothing when none is announced).
    ``tenant``/``customer_id``: the scope the write found (a pin knows only its session)."""
    event = _announced.get()
    if event is None:
        return
    if tenant is not None:
        event.tenant, event.customer_id = tenant, customer_id
    if event.erases and event.tenant is not None and event.customer_id is not None:
        event.scrubbed = scrub_customer(conn, event.tenant, event.customer_id)
        record(conn, event.who, ERASE, event.tenant, None, at=event.at)
    else:
        record(conn, event.who, event.action, event.tenant, event.customer_id, at=event.at)
    event.written = True
