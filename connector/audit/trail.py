"""Writing, reading, pruning and erasing audit events.

Transactions: :func:`record` writes in the connection it is given (the caller's transaction: the
event commits or rolls back with the write) or, given an engine, in its own. The library's
shortcuts (``Memory.record_turn``, ``pin``, ``record_case``, ``learn``, ``lift_erasure``,
``forget``'s tombstone) write their event in the write's own transaction
(:mod:`connector.audit.pending`): a write whose event cannot be stored fails and is rolled back.
Only an import, which commits session by session, records its one event afterwards through
:func:`record_quietly` (a failure is a WARNING naming action and tenant, never ids or content).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connector.audit.table import audit_t
from connector.ids import canonical_id, id_problem
from connector.settings import MAX_TENANT_NAME

log = logging.getLogger(__name__)

#: The action an erasure leaves behind (its customer id is not kept).
ERASE = "customer.erase"


@dataclass(frozen=True, slots=True)
class Event:
    """One audit event as read back (what the CLI and the console show)."""

    id: int
    at: datetime
    who: str
    action: str
    tenant: str | None
    customer_id: str | None
    outcome: str
    remote: str | None = None  # a refused sign-in's client address
    repeats: int = 1  # how many refused sign-ins the event stands for


def _storable_id(value: str | None) -> str | None:
    """The canonical id, or None when it breaks the id rule (too long, control characters):
    such an id reached no store, and the event keeps what was done without it."""
    if value is None:
        return None
    canonical = canonical_id(value)
    return None if id_problem(canonical) else canonical


def event_values(
    who: str,
    action: str,
    tenant: str | None,
    customer_id: str | None,
    outcome: str,
    at: datetime | None,
    *,
    remote: str | None = None,
    repeats: int = 1,
) -> dict[str, object]:
    """The row of one event: ids in their canonical form, or None when not storable."""
    return {
        "at": at or datetime.now(UTC),
        "who": who[:64],
        "action": action[:64],
        "tenant": tenant if tenant is None or len(tenant) <= MAX_TENANT_NAME else None,
        "customer_id": _storable_id(customer_id),
        "outcome": outcome[:16],
        "remote": None if remote is None else remote[:64],
        "repeats": max(1, repeats),
    }


def record(
    target: Engine | Connection,
    principal_name: str,
    action: str,
    tenant: str | None,
    customer_id: str | None,
    *,
    outcome: str = "ok",
    at: datetime | None = None,
) -> None:
    """Record one event; in ``target``'s transaction when it is a connection, else in its own."""
    values = event_values(principal_name, action, tenant, customer_id, outcome, at)
    if isinstance(target, Connection):
        target.execute(audit_t.insert().values(**values))
        return
    with target.begin() as conn:
        conn.execute(audit_t.insert().values(**values))


def record_quietly(
    engine: Engine,
    principal_name: str,
    action: str,
    tenant: str | None,
    customer_id: str | None,
    *,
    outcome: str = "ok",
    at: datetime | None = None,
) -> bool:
    """:func:`record` for a write that already committed: a failure is a WARNING, not an error."""
    try:
        record(engine, principal_name, action, tenant, customer_id, outcome=outcome, at=at)
    except Exception as exc:  # the write stands; its event is what is lost, and the log says so
        log.warning("audit event %s (tenant %s) not recorded: %s", action, tenant, type(exc).__name__)
        return False
    return True


def list_events(
    engine: Engine | Connection,
    *,
    who: str | None = None,
    action: str | None = None,
    tenant: str | None = None,
    customer_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    tenants: frozenset[str] | None = None,
    customers: frozenset[str] | None = None,
    limit: int = 100,
) -> list[Event]:
    """Events newest first. ``action`` matches itself and its sub-actions (``mcp`` matches
    ``mcp.get_context``); ``since`` is inclusive, ``until`` exclusive; ``tenants`` limits the
    result to those tenants and ``customers`` (canonical ids) to those customers (a scoped caller's
    view: None = all)."""
    query = sa.select(audit_t).order_by(audit_t.c.at.desc(), audit_t.c.id.desc()).limit(max(1, limit))
    if who is not None:
        query = query.where(audit_t.c.who == who)
    if action is not None:
        query = query.where(sa.or_(audit_t.c.action == action, audit_t.c.action.startswith(action + ".")))
    if tenant is not None:
        query = query.where(audit_t.c.tenant == tenant)
    if customer_id is not None:
        query = query.where(audit_t.c.customer_id == canonical_id(customer_id))
    if since is not None:
        query = query.where(audit_t.c.at >= since)
    if until is not None:
        query = query.where(audit_t.c.at < until)
    if tenants is not None:
        query = query.where(audit_t.c.tenant.in_(sorted(tenants)))
    if customers is not None:
        query = query.where(audit_t.c.customer_id.in_(sorted(customers)))
    if isinstance(engine, Connection):
        rows = engine.execute(query).all()
    else:
        with engine.connect() as conn:
            rows = conn.execute(query).all()
    return [
        Event(r.id, r.at, r.who, r.action, r.tenant, r.customer_id, r.outcome, r.remote, r.repeats)
        for r in rows
    ]


def forget_customer(
    engine: Engine, principal_name: str, tenant: str, customer_id: str, *, at: datetime | None = None
) -> int:
    """An erasure: the customer's earlier events lose its id, and one tombstone event says an
    erasure happened (who, when, tenant; no customer id). Returns how many events were scrubbed."""
    with engine.begin() as conn:
        scrubbed = scrub_customer(conn, tenant, customer_id)
        record(conn, principal_name, ERASE, tenant, None, at=at)
    return scrubbed


def scrub_customer(target: Engine | Connection, tenant: str, customer_id: str) -> int:
    """Remove the customer's id from its events of ``tenant``; returns how many were changed."""
    query = (
        audit_t.update()
        .where(audit_t.c.tenant == tenant, audit_t.c.customer_id == canonical_id(customer_id))
        .values(customer_id=None)
    )
    if isinstance(target, Connection):
        return target.execute(query).rowcount or 0
    with target.begin() as conn:
        return conn.execute(query).rowcount or 0


def apply_retention(engine: Engine, *, now: datetime, days: int) -> int:
    """Delete events older than ``days``; returns how many went."""
    with engine.begin() as conn:
        removed = conn.execute(audit_t.delete().where(audit_t.c.at < now - timedelta(days=days))).rowcount
    return removed or 0
