"""The Customer pages' reads: search by id or name over every tenant, then one customer's memory.

Each read is of one (tenant, customer) on its indexes; the search scans the tenants' customers
by name (a substring of it) or id (a prefix), at most :data:`SEARCH_LIMIT` found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connector.db.reads import read_connection
from connector.episodic.tables import ENTRIES as entry_t
from connector.erasure.tombstones import customer_digest, erased_t, pending_t
from connector.facts.tables import fact_t
from connector.scope import Scope
from connector.semantic.documents import document_t
from connector.semantic.history_reads import ErpChange, describe, party_changes
from connector.semantic.parties import CustomerFacts, load_party, party_t
from connector.settings import FactSettings
from connector.working.store import pin_t, session_t, turn_t

SEARCH_LIMIT = 50
DOCUMENTS_SHOWN = 50
CASES_SHOWN = 50
SESSIONS_SHOWN = 10
TURNS_SHOWN = 40  # the latest of each session
CHANGES_SHOWN = 50


@dataclass(frozen=True, slots=True)
class Found:
    tenant: str
    external_id: str
    name: str | None
    status: str | None
    synced_at: datetime | None


def search(
    engine: Engine, text: str, tenants: frozenset[str] | None, customers: frozenset[str] | None
) -> list[Found]:
    """Customers whose id is ``text`` or starts with it, or whose name contains it (any case),
    exact ids first, in the given tenants (None: all) and customers (None: any)."""
    wanted = text.strip()
    lowered = wanted.lower()
    p = party_t.c
    match = sa.or_(
        p.external_id == wanted,
        sa.func.lower(p.external_id).startswith(lowered, autoescape=True),
        sa.func.lower(p.name).contains(lowered, autoescape=True),
    )
    stmt = sa.select(p.tenant, p.external_id, p.name, p.status, p.synced_at).where(
        p.kind == "customer", p.deleted_at.is_(None), match
    )
    if tenants is not None:
        stmt = stmt.where(p.tenant.in_(sorted(tenants)))
    if customers is not None:
        stmt = stmt.where(p.external_id.in_(sorted(customers)))
    exact = sa.case((p.external_id == wanted, 0), else_=1)
    stmt = stmt.order_by(exact, p.name, p.tenant, p.external_id).limit(SEARCH_LIMIT)
    with read_connection(engine) as conn:
        return [Found(*row) for row in conn.execute(stmt)]


@dataclass(frozen=True, slots=True)
class Session:
    row: Any
    turns: tuple[Any, ...]  # the latest TURNS_SHOWN, in order
    pins: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Fact:
    row: Any
    days_left: int | None  # whole days of decay until it falls below facts.decay_threshold


@dataclass(frozen=True, slots=True)
class Change:
    change: ErpChange
    text: str


@dataclass(frozen=True, slots=True)
class CustomerMemory:
    scope: Scope
    erp: CustomerFacts | None
    open_documents: tuple[Any, ...]
    open_count: int
    cases: tuple[Any, ...]
    sessions: tuple[Session, ...]
    facts: tuple[Fact, ...]
    changes: tuple[Change, ...]
    erased: bool
    erasure_pending: bool

    @property
    def exists(self) -> bool:
        """Known to the ERP copy or to any memory (an erased customer's ERP facts stay)."""
        return bool(self.erp or self.cases or self.sessions or self.facts or self.erased)


def customer_memory(engine: Engine, scope: Scope, facts: FactSettings) -> CustomerMemory:
    with read_connection(engine) as conn:
        erp = load_party(conn, scope.tenant, "customer", scope.customer_id)
        documents, open_count = _open_documents(conn, scope)
        digest = customer_digest(scope.tenant, scope.customer_id)
        erased = _has(conn, erased_t, scope.tenant, digest)
        pending = _has(conn, pending_t, scope.tenant, digest)
        return CustomerMemory(
            scope=scope,
            erp=erp,
            open_documents=documents,
            open_count=open_count,
            cases=_cases(conn, scope),
            sessions=_sessions(conn, scope),
            facts=_facts(conn, scope, facts),
            changes=tuple(
                Change(c, describe(c))
                for c in party_changes(conn, scope.tenant, "customer", scope.customer_id, limit=CHANGES_SHOWN)
            ),
            erased=erased,
            erasure_pending=pending,
        )


def _has(conn: Connection, table: sa.Table, tenant: str, digest: str) -> bool:
    found = conn.execute(
        sa.select(sa.literal(1)).where(table.c.tenant == tenant, table.c.customer_digest == digest).limit(1)
    ).first()
    return found is not None


def _open_documents(conn: Connection, scope: Scope) -> tuple[tuple[Any, ...], int]:
    d = document_t.c
    owner = (
        d.tenant == scope.tenant,
        d.party_kind == "customer",
        d.party_external_id == scope.customer_id,
        d.is_open,
        d.deleted_at.is_(None),
    )
    count = conn.execute(sa.select(sa.func.count()).where(*owner)).scalar_one()
    rows = conn.execute(
        sa.select(
            d.doc_type, d.number, d.status, d.currency, d.amount, d.balance, d.doc_date, d.due_date,
            d.description, d.source_modified_at, d.synced_at, d.external_id,
        )
        .where(*owner)
        .order_by(d.due_date.is_(None), d.due_date, d.number)
        .limit(DOCUMENTS_SHOWN)
    ).all()  # fmt: skip
    return tuple(rows), int(count)


def _cases(conn: Connection, scope: Scope) -> tuple[Any, ...]:
    e = entry_t.c
    return tuple(
        conn.execute(
            sa.select(
                e.case_id, e.case_type, e.summary, e.summary_mode, e.documents, e.occurred_at,
                e.recorded_at, e.archived_at, e.status, e.pii, e.merged_count,
            )
            .where(e.tenant == scope.tenant, e.customer_id == scope.customer_id)
            .order_by(e.occurred_at.desc(), e.id)
            .limit(CASES_SHOWN)
        ).all()
    )  # fmt: skip


def _sessions(conn: Connection, scope: Scope) -> tuple[Session, ...]:
    s = session_t.c
    rows = conn.execute(
        sa.select(session_t)
        .where(s.tenant == scope.tenant, s.customer_id == scope.customer_id)
        .order_by(s.updated_at.desc(), s.session_id)
        .limit(SESSIONS_SHOWN)
    ).all()
    out = []
    for row in rows:
        turns = conn.execute(
            sa.select(turn_t)
            .where(turn_t.c.session_id == row.session_id)
            .order_by(turn_t.c.seq.desc())
            .limit(TURNS_SHOWN)
        ).all()
        pins = conn.execute(
            sa.select(pin_t).where(pin_t.c.session_id == row.session_id).order_by(pin_t.c.name)
        ).all()
        out.append(Session(row, tuple(reversed(turns)), tuple(pins)))
    return tuple(out)


def _facts(conn: Connection, scope: Scope, settings: FactSettings) -> tuple[Fact, ...]:
    f = fact_t.c
    rows = conn.execute(
        sa.select(fact_t)
        .where(f.tenant == scope.tenant, f.customer_id == scope.customer_id)
        .order_by(f.importance.desc(), f.id)
    ).all()
    return tuple(Fact(r, days_left(r.importance, settings)) for r in rows)


def days_left(importance: float, settings: FactSettings) -> int | None:
    """Whole days of decay (importance x factor per day) until the fact falls below the threshold
    and is removed; None when it never decays."""
    factor, threshold = settings.decay_factor, settings.decay_threshold
    if factor >= 1 or importance <= 0:
        return None
    if importance < threshold:
        return 0
    if threshold <= 0:
        return None
    return max(0, math.floor(math.log(threshold / importance) / math.log(factor)) + 1)
