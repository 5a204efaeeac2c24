"""Money sums in SQL are exact on SQLite (money held as text) and PostgreSQL, small and huge."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.db.aggregates import money_sum
from connector.semantic.tables import Document

document_t: sa.Table = Document.__table__  # type: ignore[attr-defined]
VALUES = [
    "0.1", "0.2", "-0.5", "999999999.999999", "1000000000.000001", "-123456789012.345678", "12",
    "250000.75", "0.000001", "7",
]  # fmt: skip


def test_money_sum_is_exact_for_small_huge_and_negative_amounts(engine: Engine) -> None:
    rows = [
        {"tenant": "t", "doc_type": "ar_invoice", "external_id": f"D{i}", "number": f"D{i}",
         "party_kind": "customer", "party_external_id": "C", "balance": Decimal(v),
         "doc_date": date(2026, 1, 1), "is_open": True, "extra": {}, "raw": {}, "content_hash": "x",
         "synced_at": sa.func.now()}
        for i, v in enumerate(VALUES)
    ]  # fmt: skip
    with engine.begin() as conn:
        for row in rows:
            conn.execute(sa.insert(document_t).values(**row))
        total = conn.execute(sa.select(money_sum(document_t.c.balance))).scalar_one()
        empty = conn.execute(
            sa.select(money_sum(document_t.c.balance)).where(document_t.c.tenant == "no")
        ).scalar()
    assert total == sum((Decimal(v) for v in VALUES), Decimal(0))
    assert empty is None
