"""Reading the ERP change history: one party's changes (its own and its documents'), newest first.

Rows come back typed (money as Decimal with its currency, dates as dates) and ordered by the
ERP's change stamp, so a late delivery reads in its place. :func:`describe` gives the one line a
context or a CLI shows for a change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.semantic.tracking import DELETED, change_t, typed

FIELD_LABELS = {
    "credit_limit": "credit limit",
    "tax_zone": "tax zone",
    "tax_id": "tax id",
    "party_class": "class",
    "due_date": "due date",
    "is_open": "open",
    "doc_date": "date",
    "customer_ref": "customer reference",
}


@dataclass(frozen=True, slots=True)
class ErpChange:
    """One change of one tracked field of a party or one of its documents, as the sync saw it."""

    tenant: str
    entity: str  # "party" or "document"
    kind: str  # customer / vendor, or the document type
    external_id: str
    number: str | None  # a document's number
    field: str
    old: Any  # typed: Decimal for money, date for dates, bool, str; None when unset
    new: Any
    currency: str | None
    changed_at: datetime  # the ERP's change stamp (the sync's clock when the ERP gave none)
    seen_at: datetime  # when the sync saw it
    run_id: int | None = None

    @property
    def label(self) -> str:
        return FIELD_LABELS.get(self.field, self.field.replace("_", " "))


# Statements are built once; each read only binds its parameters (building and keying a select per
# read cost more than running it: the context reads the section on every build).
_FAR_PAST = datetime(1, 1, 2, tzinfo=UTC)
_FAR_FUTURE = datetime(9999, 12, 30, tzinfo=UTC)
_NO_LIMIT = 2**62


def _changes_statement(by_field: bool) -> Any:
    t = change_t
    stmt = sa.select(t).where(
        t.c.tenant == sa.bindparam("tenant"),
        t.c.party_kind == sa.bindparam("party_kind"),
        t.c.party_external_id == sa.bindparam("party_id"),
        t.c.erp_changed_at > sa.bindparam("since"),
        t.c.erp_changed_at <= sa.bindparam("until"),
    )
    if by_field:
        stmt = stmt.where(t.c.field.in_(sa.bindparam("fields", expanding=True)))
    return stmt.order_by(t.c.erp_changed_at.desc(), t.c.id.desc()).limit(sa.bindparam("limit"))


_CHANGES, _FIELD_CHANGES = _changes_statement(False), _changes_statement(True)


def party_changes(
    conn: Connection,
    tenant: str,
    party_kind: str,
    party_id: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    fields: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[ErpChange]:
    """The changes of a party and its documents with ``since < changed_at <= until``, newest first."""
    params: dict[str, Any] = {
        "tenant": tenant,
        "party_kind": party_kind,
        "party_id": party_id,
        "since": since or _FAR_PAST,
        "until": until or _FAR_FUTURE,
        "limit": _NO_LIMIT if limit is None else limit,
    }
    if fields:
        params["fields"] = list(fields)
    return [_change(row._mapping) for row in conn.execute(_FIELD_CHANGES if fields else _CHANGES, params)]


def _change(row: Any) -> ErpChange:
    kind = row["value_type"]
    return ErpChange(
        tenant=row["tenant"],
        entity=row["entity"],
        kind=row["kind"],
        external_id=row["external_id"],
        number=row["number"],
        field=row["field"],
        old=typed(row["old_value"], kind),
        new=typed(row["new_value"], kind),
        currency=row["currency"],
        changed_at=row["erp_changed_at"],
        seen_at=row["seen_at"],
        run_id=row["run_id"],
    )


def shown(value: Any, currency: str | None = None) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Decimal):
        return f"{value:,.2f}"
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def describe(change: ErpChange) -> str:
    """``credit limit 50,000.00 → 80,000.00 USD (ERP change 2026-03-03)``; a document's change
    names the document (``INV-004821 paid in full: balance 1,250.00 → 0.00 USD``)."""
    when = f"(ERP change {change.changed_at:%Y-%m-%d})"
    subject = "" if change.entity == "party" else f"{change.number or change.external_id} "
    if change.field == DELETED:
        what = "deleted in the ERP" if change.new else "restored in the ERP"
        return f"{subject or 'record '}{what} {when}"
    if change.field == "is_open":
        return f"{subject}{'reopened' if change.new else 'closed'} {when}"
    note = ""
    if change.field == "balance" and change.new == 0 and change.old:
        note = "paid in full: "
    currency = (
        f" {change.currency}" if change.currency and isinstance(change.new or change.old, Decimal) else ""
    )
    return f"{subject}{note}{change.label} {shown(change.old)} → {shown(change.new)}{currency} {when}"
