"""Semantic store: round trips and bulk upsert on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.erp.records import Address, Contact, DocumentRecord, PartyRecord
from connector.semantic.upsert import (
    attribute_t,
    contact_t,
    document_t,
    mark_missing_deleted,
    party_t,
    upsert_records,
)

NOW = datetime(2026, 3, 13, 12, 12, 50, 400000, tzinfo=UTC)


def party(tenant: str = "acme", ext: str = "ABARTENDE", **kw: object) -> PartyRecord:
    base: dict[str, object] = {
        "name": "Bartender Supplies",
        "status": "Active",
        "currency": "USD",
        "credit_limit": Decimal("123456789012.345678"),
        "terms": "30D",
        "contacts": (Contact(role="main", name="Ann", email="ann@example.com"),),
        "addresses": (Address(role="main", city="Seattle", country="US"),),
        "attributes": {"PO_REQUIRED": "Y", "cf:Document.AttrPOREQ": "Y"},
        "source_modified_at": datetime(2026, 3, 13, 15, 12, 50, tzinfo=timezone(timedelta(hours=3))),
        "raw": {"CustomerID": {"value": ext}, "TaxZone": {}},
    }
    base.update(kw)
    return PartyRecord(tenant=tenant, kind="customer", external_id=ext, **base)  # type: ignore[arg-type]


def test_party_round_trip_keeps_decimal_aware_time_and_raw_json(engine: Engine) -> None:
    with engine.begin() as conn:
        upsert_records(conn, [party()], NOW)
    with engine.connect() as conn:
        row = conn.execute(sa.select(party_t)).one()
    assert row.credit_limit == Decimal("123456789012.345678")
    assert isinstance(row.credit_limit, Decimal)
    assert row.source_modified_at == datetime(2026, 3, 13, 12, 12, 50, tzinfo=UTC)
    assert row.source_modified_at.tzinfo is not None
    assert row.synced_at == NOW
    assert row.raw == {"CustomerID": {"value": "ABARTENDE"}, "TaxZone": {}}
    assert len(row.content_hash) == 64


def test_children_are_stored_by_party_key(engine: Engine) -> None:
    with engine.begin() as conn:
        upsert_records(conn, [party()], NOW)
    with engine.connect() as conn:
        contacts = conn.execute(sa.select(contact_t.c.email)).scalars().all()
        attrs = dict(conn.execute(sa.select(attribute_t.c.name, attribute_t.c.value)).all())
    assert contacts == ["ann@example.com"]
    assert attrs == {"PO_REQUIRED": "Y", "cf:Document.AttrPOREQ": "Y"}


def test_same_erp_key_in_two_tenants_is_two_parties(engine: Engine) -> None:
    with engine.begin() as conn:
        counts = upsert_records(conn, [party("acme"), party("globex")], NOW)
    assert counts.inserted == 2
    with engine.connect() as conn:
        tenants = conn.execute(sa.select(party_t.c.tenant).order_by(party_t.c.tenant)).scalars().all()
    assert tenants == ["acme", "globex"]


def test_unique_key_is_enforced_by_the_database(engine: Engine) -> None:
    row = {
        "tenant": "acme",
        "kind": "customer",
        "external_id": "X",
        "content_hash": "h",
        "synced_at": NOW,
        "raw": {},
        "extra": {},
    }
    with engine.begin() as conn:
        conn.execute(party_t.insert().values(row))
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.execute(party_t.insert().values(row))


def test_same_batch_twice_is_idempotent_and_reported_unchanged(engine: Engine) -> None:
    batch = [party(ext=f"C{i:05d}") for i in range(250)]
    with engine.begin() as conn:
        first = upsert_records(conn, batch, NOW)
    with engine.begin() as conn:
        second = upsert_records(conn, batch, NOW + timedelta(hours=1))
    assert (first.inserted, first.updated, first.unchanged) == (250, 0, 0)
    assert (second.inserted, second.updated, second.unchanged) == (0, 0, 250)
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(party_t)).scalar_one() == 250
        assert conn.execute(sa.select(sa.func.count()).select_from(contact_t)).scalar_one() == 250
        synced = conn.execute(sa.select(sa.func.max(party_t.c.synced_at))).scalar_one()
    assert synced == NOW  # unchanged rows are not rewritten


def test_changed_content_is_updated_and_children_replaced(engine: Engine) -> None:
    with engine.begin() as conn:
        upsert_records(conn, [party()], NOW)
    changed = party(
        credit_limit=Decimal("5000.10"), contacts=(Contact(role="main", email="bob@example.com"),)
    )
    with engine.begin() as conn:
        counts = upsert_records(conn, [changed], NOW)
    assert (counts.inserted, counts.updated, counts.unchanged) == (0, 1, 0)
    with engine.connect() as conn:
        assert conn.execute(sa.select(party_t.c.credit_limit)).scalar_one() == Decimal("5000.10")
        assert conn.execute(sa.select(contact_t.c.email)).scalars().all() == ["bob@example.com"]


def test_documents_round_trip_dates_and_money(engine: Engine) -> None:
    doc = DocumentRecord(
        tenant="acme",
        doc_type="ar_invoice",
        external_id="INV/AR004821",
        number="AR004821",
        party_kind="customer",
        party_external_id="ABARTENDE",
        amount=Decimal("1049.99"),
        balance=Decimal("0.01"),
        doc_date=date(2026, 2, 1),
        due_date=date(2026, 3, 3),
        source_modified_at=NOW,
    )
    with engine.begin() as conn:
        upsert_records(conn, [doc], NOW)
    with engine.connect() as conn:
        row = conn.execute(sa.select(document_t)).one()
    assert (row.amount, row.balance) == (Decimal("1049.99"), Decimal("0.01"))
    assert row.due_date == date(2026, 3, 3)


def test_key_scan_marks_missing_rows_deleted_without_removing_them(engine: Engine) -> None:
    with engine.begin() as conn:
        upsert_records(conn, [party(ext="A"), party(ext="B")], NOW)
        gone = mark_missing_deleted(conn, party_t, "acme", "customer", {"A"}, NOW)
    assert gone == 1
    with engine.connect() as conn:
        rows = dict(conn.execute(sa.select(party_t.c.external_id, party_t.c.deleted_at)).all())
    assert rows == {"A": None, "B": NOW}
    # A record that comes back is live again.
    with engine.begin() as conn:
        counts = upsert_records(conn, [party(ext="B")], NOW)
    assert counts.updated == 1


def test_naive_datetime_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        party(source_modified_at=datetime(2026, 1, 1))


def test_float_money_is_refused(engine: Engine) -> None:
    with pytest.raises(sa.exc.StatementError, match="Decimal"), engine.begin() as conn:
        upsert_records(conn, [party(credit_limit=1.5)], NOW)


def test_a_key_written_after_the_classify_is_upserted_not_refused(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent writer may add a key the classify saw absent: PostgreSQL's direct COPY of new
    rows then falls back to the upsert (SQLite's INSERT .. ON CONFLICT covers it already)."""
    bare: dict[str, object] = {"contacts": (), "addresses": (), "attributes": {}}  # the party row alone
    with engine.begin() as conn:
        upsert_records(conn, [party(name="Old name", **bare)], NOW)
    monkeypatch.setattr("connector.semantic.upsert._existing_hashes", lambda *_args: {})
    with engine.begin() as conn:
        counts = upsert_records(conn, [party(name="New name", **bare)], NOW + timedelta(hours=1))
    assert counts.inserted == 1  # as the classify saw it
    with engine.connect() as conn:
        assert conn.execute(sa.select(party_t.c.name)).scalars().all() == ["New name"]
