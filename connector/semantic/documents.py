"""Reads of one party's documents: totals, the overdue ranking, and lookups by number or value.

Totals are SQL aggregates over every open document, so the header and the "not shown" line are
right however many documents the section shows. The ranking reads only the rows it shows. The
lookups serve the documents a query names (matched by :mod:`connector.context.documents`), always
inside the one (tenant, party) the context is for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.db.aggregates import money_in, money_sum
from connector.semantic.tables import Document

document_t: sa.Table = Document.__table__  # type: ignore[attr-defined]

PAYABLE_TYPES = frozenset({"ar_invoice", "ap_bill", "open_item"})  # open_item: SAP's FI items
LOOKUP_ROWS = 500  # rows a lookup by number or value reads at most


@dataclass(frozen=True, slots=True)
class OpenDocument:
    doc_type: str
    external_id: str
    number: str
    status: str | None
    currency: str | None
    amount: Decimal | None
    balance: Decimal | None
    doc_date: date | None
    due_date: date | None
    description: str | None
    customer_ref: str | None
    is_open: bool = True

    def overdue_days(self, today: date) -> int:
        """Days past due for open invoices and bills; orders, credit memos and credit items (a
        payment or credit on account, balance at or below zero) are never overdue."""
        if (
            not self.is_open
            or self.doc_type not in PAYABLE_TYPES
            or not self.due_date
            or self.due_date >= today
            or (self.balance is not None and self.balance <= 0)
        ):
            return 0
        return (today - self.due_date).days


@dataclass(frozen=True, slots=True)
class KindTotal:
    """Open documents of one kind in one currency, summed in SQL."""

    doc_type: str
    currency: str
    count: int
    with_balance: int
    balance: Decimal  # over the documents that have a balance
    amount_without_balance: Decimal  # amount of those that have none (orders; SAP invoices)
    overdue: int
    overdue_balance: Decimal


_TENANT: Any = sa.bindparam("tenant")
_KIND: Any = sa.bindparam("kind")
_PARTY_ID: Any = sa.bindparam("party")
_TODAY: Any = sa.bindparam("today", type_=sa.Date())
_OWNER = (
    document_t.c.tenant == _TENANT,
    document_t.c.party_kind == _KIND,
    document_t.c.party_external_id == _PARTY_ID,
    document_t.c.deleted_at.is_(None),
)
_OPEN = (*_OWNER, document_t.c.is_open.is_(True))
COLUMNS = (
    document_t.c.doc_type, document_t.c.external_id, document_t.c.number, document_t.c.status,
    document_t.c.currency, document_t.c.amount, document_t.c.balance, document_t.c.doc_date,
    document_t.c.due_date, document_t.c.description, document_t.c.customer_ref, document_t.c.is_open,
)  # fmt: skip
# A credit item (a payment or credit on account, balance at or below zero) is never overdue. The
# sign of a decimal survives the cast to float exactly (SQLite holds money as text).
_IS_OVERDUE = sa.and_(
    document_t.c.doc_type.in_(sorted(PAYABLE_TYPES)),
    document_t.c.due_date < _TODAY,
    sa.or_(document_t.c.balance.is_(None), sa.cast(document_t.c.balance, sa.Float) > 0),
)
_HAS_BALANCE = document_t.c.balance.is_not(None)
# Grouped and ordered by an expression, not the bare column: with the bare column SQLite prefers
# the (tenant, doc_type, external_id) key index, which reads every document of the tenant.
_KIND_OF = sa.func.lower(document_t.c.doc_type)

_LATE = sa.case((_IS_OVERDUE, 1), else_=0)
_HELD = sa.case((_HAS_BALANCE, 1), else_=0)
# One money sum per row (its balance, or its amount where it has none) grouped by kind, currency,
# overdue and has-a-balance; the totals are folded from these few groups.
_TOTALS = (
    sa.select(
        _KIND_OF,
        document_t.c.currency,
        _LATE,
        _HELD,
        sa.func.count(),
        money_sum(sa.func.coalesce(document_t.c.balance, document_t.c.amount)),
    )
    .where(*_OPEN)
    .group_by(_KIND_OF, document_t.c.currency, _LATE, _HELD)
)
# Overdue first (most overdue first), then by due date: the order the section shows.
_RANKED = (
    sa.select(*COLUMNS)
    .where(*_OPEN)
    .order_by(
        sa.case((_IS_OVERDUE, 0), else_=1),
        document_t.c.due_date.is_(None),
        document_t.c.due_date,
        document_t.c.number,
        document_t.c.doc_type,
        document_t.c.external_id,
    )
    .limit(sa.bindparam("limit"))
)


def _zero(value: Decimal | None) -> Decimal:
    return value if value is not None else Decimal(0)


def document_totals(conn: Connection, tenant: str, kind: str, party_id: str, today: date) -> list[KindTotal]:
    """Open documents per (kind, currency), every one of them counted."""
    params = {"tenant": tenant, "kind": kind, "party": party_id, "today": today}
    folded: dict[tuple[str, str], list[Any]] = {}
    for doc_type, currency, late, held, n, summed in conn.execute(_TOTALS, params):
        row = folded.setdefault((doc_type, currency or ""), [0, 0, Decimal(0), Decimal(0), 0, Decimal(0)])
        value, n = _zero(summed), int(n)
        row[0] += n
        if held:
            row[1] += n
            row[2] += value
            if late:
                row[4] += n
                row[5] += value
        else:
            row[3] += value
    return [KindTotal(doc_type, currency, *row) for (doc_type, currency), row in sorted(folded.items())]


def ranked_documents(
    conn: Connection, tenant: str, kind: str, party_id: str, today: date, limit: int
) -> list[OpenDocument]:
    """The ``limit`` open documents the section shows first: overdue first, then by due date."""
    if limit <= 0:
        return []
    params = {"tenant": tenant, "kind": kind, "party": party_id, "today": today, "limit": limit}
    return [OpenDocument(*row) for row in conn.execute(_RANKED, params)]


def documents_numbered(
    conn: Connection, tenant: str, kind: str, party_id: str, keys: Sequence[str]
) -> list[OpenDocument]:
    """The party's documents (open or not) whose number or customer reference ends in one of
    ``keys`` (number keys), at most :data:`LOOKUP_ROWS`, by kind and id."""
    if not keys:
        return []
    like = [document_t.c.number.like(f"%{key}") for key in keys]
    like += [document_t.c.customer_ref.like(f"%{key}") for key in keys]
    stmt = (
        sa.select(*COLUMNS)
        .where(*_OWNER, sa.or_(*like))
        .order_by(_KIND_OF, document_t.c.external_id)
        .limit(LOOKUP_ROWS)
    )
    params = {"tenant": tenant, "kind": kind, "party": party_id}
    return [OpenDocument(*row) for row in conn.execute(stmt, params)]


def open_documents_valued(
    conn: Connection, tenant: str, kind: str, party_id: str, amounts: Sequence[Decimal], dates: Sequence[date]
) -> list[OpenDocument]:
    """The party's open documents with one of ``amounts`` as amount or balance, or one of ``dates`` as
    document or due date, at most :data:`LOOKUP_ROWS`, by kind and id."""
    conditions: list[Any] = []
    if amounts:
        dialect = conn.dialect.name
        values = list(amounts)
        conditions += [
            money_in(document_t.c.amount, values, dialect),
            money_in(document_t.c.balance, values, dialect),
        ]
    if dates:
        conditions += [
            document_t.c.doc_date.in_(sorted(set(dates))),
            document_t.c.due_date.in_(sorted(set(dates))),
        ]
    if not conditions:
        return []
    stmt = (
        sa.select(*COLUMNS)
        .where(*_OPEN, sa.or_(*conditions))
        .order_by(_KIND_OF, document_t.c.external_id)
        .limit(LOOKUP_ROWS)
    )
    params = {"tenant": tenant, "kind": kind, "party": party_id}
    return [OpenDocument(*row) for row in conn.execute(stmt, params)]
