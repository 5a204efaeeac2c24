"""``lookup_document``: one document of one party, with its lines — the agent's tool for what the
context left out.

The number may be written any way people write it (``INV-004821``, ``inv 4821``, ``004821``; see
:mod:`connector.context.references`). The read is scoped to the (tenant, party) asked for: a
document of another customer answers exactly as one that does not exist, so a lookup can never
confirm what someone else owns.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.context.documents import named_documents
from connector.context.money import money
from connector.context.quote import one_line, quote
from connector.context.references import QueryReferences, document_number
from connector.errors import ConnectorError
from connector.scope import Scope
from connector.semantic.documents import document_t

_LINE_FIELDS = ("line", "item", "description", "quantity", "unit_price", "amount")


class UnknownDocumentError(ConnectorError, LookupError):
    """No document of this party has that number (whether or not another party has one)."""

    def __init__(
        self, number: str, party_kind: str, party_id: str, tenant: str, candidates: list[str]
    ) -> None:
        self.number = number
        self.candidates = candidates
        if candidates:
            detail = f"it matches several: {', '.join(candidates)}; ask for one of them by its full number"
        else:
            detail = "check the number (the context lists the open documents it shows)"
        super().__init__(
            f"no single document {one_line(number, 64)!r} for {party_kind} {party_id!r} in tenant "
            f"{tenant!r}: {detail}"
        )


@dataclass(frozen=True, slots=True)
class DocumentLine:
    line: str | None
    item: str | None
    description: str | None
    quantity: str | None
    unit_price: str | None
    amount: str | None


@dataclass(frozen=True, slots=True)
class DocumentDetail:
    """One document as the store holds it; ``extra`` keeps the ERP's own fields by raw name."""

    tenant: str
    party_kind: str
    party_id: str
    doc_type: str
    external_id: str
    number: str
    status: str | None
    is_open: bool
    currency: str | None
    amount: Decimal | None
    balance: Decimal | None
    doc_date: date | None
    due_date: date | None
    description: str | None
    customer_ref: str | None
    lines: tuple[DocumentLine, ...]
    extra: dict[str, Any]
    synced_at: datetime

    def text(self) -> str:
        """The document for a prompt: trusted facts on one line, its free text quoted."""
        facts = [f"{self.number} ({self.doc_type}, {'open' if self.is_open else 'closed'})"]
        for label, value in (("status", self.status), ("dated", self.doc_date), ("due", self.due_date)):
            if value is not None:
                facts.append(f"{label} {one_line(value, 64)}")
        if self.amount is not None:
            facts.append(f"amount {money(self.amount, self.currency)}")
        if self.balance is not None:
            facts.append(f"balance {money(self.balance, self.currency)}")
        if self.customer_ref:
            facts.append(f"ref {one_line(self.customer_ref, 64)}")
        out = ["; ".join(facts)]
        if self.description:
            out.append(quote(self.description))
        for ln in self.lines:
            cells = [f"line {ln.line or '?'}", *(one_line(v, 64) for v in (ln.item, ln.quantity) if v)]
            if ln.unit_price:
                cells.append(f"at {ln.unit_price}")
            if ln.amount:
                cells.append(f"= {money(Decimal(ln.amount), self.currency)}")
            out.append("- " + " ".join(cells) + (":" if ln.description else ""))
            if ln.description:
                out.append(quote(ln.description))
        return "\n".join(out)


def _lines(extra: dict[str, Any]) -> tuple[DocumentLine, ...]:
    raw = extra.get("lines")
    if not isinstance(raw, list):
        return ()
    return tuple(
        DocumentLine(*(str(row[f]) if row.get(f) is not None else None for f in _LINE_FIELDS))
        for row in raw
        if isinstance(row, dict)
    )


def lookup_document(
    engine: Engine, scope: Scope, number: str, *, party_kind: str = "customer"
) -> DocumentDetail:
    """The party's document numbered ``number``; UnknownDocumentError when it has none (or several
    that the spelling cannot tell apart)."""
    wanted = one_line(number, 128) if isinstance(number, str) else ""
    refs = document_number(wanted)
    owner = (
        document_t.c.tenant == scope.tenant,
        document_t.c.party_kind == party_kind,
        document_t.c.party_external_id == scope.customer_id,
        document_t.c.deleted_at.is_(None),
    )
    with engine.connect() as conn:
        exact = conn.execute(
            sa.select(document_t).where(*owner, sa.func.upper(document_t.c.number) == wanted.upper()).limit(2)
        ).all()
        if len(exact) != 1 and refs.numbers:
            matches = named_documents(
                conn, scope.tenant, party_kind, scope.customer_id, QueryReferences(numbers=refs.numbers[:1])
            )
            if len(matches) > 1:
                candidates = sorted({m.number for m in matches})
                raise UnknownDocumentError(wanted, party_kind, scope.customer_id, scope.tenant, candidates)
            keys = [(m.doc_type, m.external_id) for m in matches]
            exact = (
                conn.execute(
                    sa.select(document_t).where(
                        *owner, document_t.c.doc_type == keys[0][0], document_t.c.external_id == keys[0][1]
                    )
                ).all()
                if keys
                else []
            )
    if len(exact) != 1:
        candidates = sorted({row.number for row in exact})
        raise UnknownDocumentError(wanted, party_kind, scope.customer_id, scope.tenant, candidates)
    row = exact[0]
    extra = dict(row.extra or {})
    return DocumentDetail(
        tenant=row.tenant, party_kind=row.party_kind, party_id=row.party_external_id, doc_type=row.doc_type,
        external_id=row.external_id, number=row.number, status=row.status, is_open=bool(row.is_open),
        currency=row.currency, amount=row.amount, balance=row.balance, doc_date=row.doc_date,
        due_date=row.due_date, description=row.description, customer_ref=row.customer_ref,
        lines=_lines(extra), extra=extra, synced_at=row.synced_at,
    )  # fmt: skip
