"""ERP facts and documents as they stood at a past date, rebuilt from the change history.

The store holds current values; the history holds every tracked change with its old value. Going
back from now, each change made after ``as_of`` is undone (newest first), which leaves the value
that held at ``as_of``. Documents dated after ``as_of`` did not exist yet; documents deleted or
closed since are brought back as they were. Untracked fields show their current value: only
tracked fields (``history.fields``) have a past.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from connector.db.models import SyncRun
from connector.semantic.documents import COLUMNS, KindTotal, OpenDocument, document_t
from connector.semantic.history_reads import ErpChange, party_changes
from connector.semantic.tracking import DELETED

run_t: sa.Table = SyncRun.__table__  # type: ignore[attr-defined]

_DOC_FIELDS = frozenset(OpenDocument.__dataclass_fields__)


def changes_after(
    conn: Connection, tenant: str, kind: str, party_id: str, as_of: datetime
) -> list[ErpChange]:
    """Every change of the party and its documents made after ``as_of``, newest first."""
    return party_changes(conn, tenant, kind, party_id, since=as_of)


def party_as_of(party: Any, changes: Sequence[ErpChange]) -> Any:
    """The party row with each tracked field undone to its value at ``as_of``."""
    values = dict(party._mapping) if hasattr(party, "_mapping") else dict(vars(party))
    for change in changes:  # newest first: the last one undone is the earliest
        if change.entity == "party" and change.field in values:
            values[change.field] = change.old
    return SimpleNamespace(**values)


def documents_as_of(
    conn: Connection, tenant: str, kind: str, party_id: str, as_of: datetime, changes: Sequence[ErpChange]
) -> list[OpenDocument]:
    """The party's documents open at ``as_of``, with their values then, overdue first."""
    undone: dict[str, dict[str, Any]] = {}
    deleted_then: dict[str, bool] = {}
    for change in changes:
        if change.entity != "document":
            continue
        if change.field == DELETED:
            deleted_then[change.external_id] = bool(change.old)
        elif change.field in _DOC_FIELDS:
            undone.setdefault(change.external_id, {})[change.field] = change.old
    stmt = sa.select(*COLUMNS, document_t.c.deleted_at).where(
        document_t.c.tenant == tenant,
        document_t.c.party_kind == kind,
        document_t.c.party_external_id == party_id,
        sa.or_(document_t.c.doc_date.is_(None), document_t.c.doc_date <= as_of.date()),
    )
    out: list[OpenDocument] = []
    for row in conn.execute(stmt):
        doc = OpenDocument(*row[:-1])
        deleted = deleted_then.get(doc.external_id, row[-1] is not None)
        if deleted:
            continue
        then = replace(doc, **undone.get(doc.external_id, {}))
        if then.is_open:
            out.append(then)
    day = as_of.date()
    out.sort(key=lambda d: (d.overdue_days(day) == 0, d.due_date is None, d.due_date or date.min, d.number))
    return out


def totals_of(documents: Sequence[OpenDocument], today: date) -> list[KindTotal]:
    """:func:`~connector.semantic.documents.document_totals` over documents already read."""
    folded: dict[tuple[str, str], list[Any]] = {}
    for d in documents:
        fresh = [0, 0, Decimal(0), Decimal(0), 0, Decimal(0)]
        row = folded.setdefault((d.doc_type.lower(), d.currency or ""), fresh)
        row[0] += 1
        if d.balance is not None:
            row[1] += 1
            row[2] += d.balance
            if d.overdue_days(today) > 0:
                row[4] += 1
                row[5] += d.balance
        else:
            row[3] += d.amount or Decimal(0)
    return [KindTotal(doc_type, currency, *row) for (doc_type, currency), row in sorted(folded.items())]


def first_sync(conn: Connection, tenant: str) -> datetime | None:
    """When the tenant's first sync run started (history begins there)."""
    value: datetime | None = conn.execute(
        sa.select(sa.func.min(run_t.c.started_at)).where(run_t.c.tenant == tenant)
    ).scalar()
    return value


def document_detail_as_of(conn: Connection, detail: Any, as_of: datetime) -> Any:
    """A looked-up document (:class:`~connector.context.lookup.DocumentDetail`) with its tracked
    fields as they stood at ``as_of``; None when it is dated after ``as_of`` (it did not exist)."""
    if detail.doc_date is not None and detail.doc_date > as_of.date():
        return None
    values: dict[str, Any] = {}
    for change in party_changes(conn, detail.tenant, detail.party_kind, detail.party_id, since=as_of):
        mine = change.entity == "document" and change.external_id == detail.external_id
        if mine and change.field in _DOC_FIELDS and change.field != "doc_type":
            values[change.field] = change.old
    return replace(detail, **values)
