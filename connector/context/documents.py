"""The documents a query names, among one party's: matched by number key (see
:mod:`connector.context.references`), amount or date; the rows come from
:mod:`connector.semantic.documents`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from sqlalchemy.engine import Connection

from connector.context.references import NumberRef, QueryReferences, number_key, number_prefix
from connector.semantic.documents import OpenDocument, documents_numbered, open_documents_valued

MAX_NAMED_DOCUMENTS = 20  # documents a query can bring in ahead of the ranking
_AMBIGUOUS = 3  # an amount or date that matches more documents than this identifies none


def _fits(doc: OpenDocument, ref: NumberRef) -> bool:
    """The hint fits: same kind (an SAP open item carries an invoice's or bill's balance) or prefix."""
    if ref.kind is not None and (ref.kind == doc.doc_type or doc.doc_type == "open_item"):
        return True
    return ref.prefix is not None and number_prefix(doc.number) == ref.prefix


def named_documents(
    conn: Connection, tenant: str, kind: str, party_id: str, refs: QueryReferences
) -> list[OpenDocument]:
    """The party's documents the query names, in the order the query names them (open or not).

    A number names the documents whose number (or customer reference) has its key; when its
    kind or prefix hint fits some of them, only those. An amount or date names the open documents
    with that amount, balance, document date or due date when at most a few match.
    """
    if not refs:
        return []
    found: list[OpenDocument] = []
    if refs.numbers:
        rows = documents_numbered(conn, tenant, kind, party_id, sorted({r.key for r in refs.numbers}))
        for ref in refs.numbers:
            by_number = [d for d in rows if number_key(d.number) == ref.key]
            matches = by_number or [
                d for d in rows if d.customer_ref and number_key(d.customer_ref) == ref.key
            ]
            fitting = [d for d in matches if _fits(d, ref)]
            found.extend(fitting or matches)
    found.extend(_by_value(conn, tenant, kind, party_id, refs.amounts, refs.dates))
    return list(dict.fromkeys(found))[:MAX_NAMED_DOCUMENTS]


def _by_value(
    conn: Connection, tenant: str, kind: str, party_id: str, amounts: Sequence[Decimal], dates: Sequence[date]
) -> list[OpenDocument]:
    if not amounts and not dates:
        return []
    rows = open_documents_valued(conn, tenant, kind, party_id, amounts, dates)
    out: list[OpenDocument] = []
    for amount in amounts:
        hits = [d for d in rows if amount in (d.amount, d.balance)]
        out.extend(hits if len(hits) <= _AMBIGUOUS else [])
    for day in dates:
        hits = [d for d in rows if day in (d.doc_date, d.due_date)]
        out.extend(hits if len(hits) <= _AMBIGUOUS else [])
    return out
