"""PostgreSQL COPY text built by the upsert itself: escaping, NULLs, types; same rows on SQLite."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.erp.records import Address, CaseRecord, Contact, DocumentRecord, PartyRecord
from connector.semantic.copy_format import (
    copy_bool,
    copy_date,
    copy_json,
    copy_money,
    copy_text,
    copy_timestamp,
)
from connector.semantic.upsert import (
    address_t,
    attribute_t,
    case_t,
    contact_t,
    document_t,
    party_t,
    upsert_records,
)

NOW = datetime(2026, 3, 13, 12, 0, tzinfo=UTC)
NASTY = "tab\there\nnew line\r\\back\\slash \\N é 中文 \u2028 end"


def test_text_escapes_copy_specials_and_keeps_null_apart_from_empty() -> None:
    assert copy_text(None) == "\\N"
    assert copy_text("") == ""
    assert copy_text("plain é 中文") == "plain é 中文"
    assert copy_text("a\tb\nc\rd\\e") == "a\\tb\\nc\\rd\\\\e"
    assert copy_text("\\N") == "\\\\N"  # the literal text, not NULL
    assert copy_text("line\u2028sep") == "line\u2028sep"  # not printable, but nothing to escape


def test_typed_values_render_as_postgres_reads_them() -> None:
    assert copy_money(Decimal("123456789012.345678")) == "123456789012.345678"
    assert copy_money(Decimal("-0.10")) == "-0.10"
    assert copy_money(7) == "7"
    assert copy_money(None) == "\\N"
    with pytest.raises(TypeError, match="Decimal"):
        copy_money(1.5)  # type: ignore[arg-type]
    plus3 = timezone(timedelta(hours=3))
    assert (
        copy_timestamp(datetime(2026, 3, 13, 15, 0, 0, 5, tzinfo=plus3)) == "2026-03-13T12:00:00.000005+00:00"
    )
    with pytest.raises(ValueError, match="naive"):
        copy_timestamp(datetime(2026, 3, 13))
    assert copy_date(date(2026, 2, 28)) == "2026-02-28"
    assert (copy_bool(True), copy_bool(False), copy_bool(None)) == ("t", "f", "\\N")
    assert copy_json({"q": 'say "hi"\n'}) == '{"q":"say \\\\"hi\\\\"\\\\n"}'
    assert copy_json(None) == "null"


def _party(ext: str, **kw: Any) -> PartyRecord:
    base: dict[str, Any] = {
        "name": NASTY,
        "status": "",
        "currency": None,
        "credit_limit": Decimal("999999999999999999.999999"),
        "email": "\\N",
        "contacts": (Contact(role="main", name="Tab\tby", email=None, phone="", external_id="\\"),),
        "addresses": (Address(role="billing", line1="1\n2", city="München", country=""),),
        "attributes": {"cf:View.Field": "a\tb", "EMPTY": "", "NONE": None},
        "extra": {"nested": {"list": [1, "two\\", None, True]}, "quote": '"', "ctl": "\x01\x7f"},
        "source_modified_at": datetime(2026, 3, 13, 23, 30, tzinfo=timezone(timedelta(hours=-5))),
        "raw": {"CustomerID": {"value": ext}, "Note": {"value": NASTY}, "Empty": {}},
    }
    base.update(kw)
    return PartyRecord(tenant="acme", kind="customer", external_id=ext, **base)


def _document(ext: str) -> DocumentRecord:
    return DocumentRecord(
        tenant="acme", doc_type="ar_invoice", external_id=ext, number="AR\t1", party_kind="customer",
        party_external_id="C\\1", status=None, currency="EUR", amount=Decimal("0.000001"),
        balance=Decimal("-12.50"), doc_date=date(2026, 1, 31), due_date=None, description=NASTY,
        customer_ref="", is_open=False, extra={}, source_modified_at=NOW, raw={"x": "\\\t"},
    )  # fmt: skip


def _case(ext: str) -> CaseRecord:
    return CaseRecord(
        tenant="acme", external_id=ext, customer_external_id=None, subject=NASTY, status="Closed",
        reported_at=datetime(2026, 1, 1, tzinfo=UTC), closed_at=NOW, description="", resolution=None,
        is_closed=True, source_modified_at=NOW, raw={},
    )  # fmt: skip


def _stored(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    tables = (party_t, contact_t, address_t, attribute_t, document_t, case_t)
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for table in tables:
            cols = [c for c in table.c if c.name != "id"]
            out[table.name] = sorted(
                (tuple(row) for row in conn.execute(sa.select(*cols))), key=lambda r: repr(r)
            )
    return out


@pytest.mark.parametrize("presume_new", [False, True])
def test_special_values_round_trip_exactly(engine: Engine, presume_new: bool) -> None:
    records = [_party("P\t1"), _party("P2", name=None, extra={}), _document("INV/1"), _case("CASE\n1")]
    with engine.begin() as conn:
        counts = upsert_records(conn, records, NOW, presume_new=presume_new)
    assert (counts.inserted, counts.updated, counts.presumption_failed) == (4, 0, False)
    stored = _stored(engine)
    with engine.connect() as conn:
        party = conn.execute(sa.select(party_t).where(party_t.c.external_id == "P\t1")).one()
        doc = conn.execute(sa.select(document_t)).one()
        case = conn.execute(sa.select(case_t)).one()
    assert party.name == NASTY and party.status == "" and party.currency is None and party.email == "\\N"
    assert party.credit_limit == Decimal("999999999999999999.999999")
    assert party.source_modified_at == datetime(2026, 3, 14, 4, 30, tzinfo=UTC)
    assert party.extra == records[0].extra and party.raw == records[0].raw  # type: ignore[union-attr]
    assert (doc.number, doc.party_external_id, doc.description, doc.customer_ref) == (
        "AR\t1", "C\\1", NASTY, ""
    )  # fmt: skip
    assert (doc.amount, doc.balance, doc.doc_date, doc.due_date, doc.is_open) == (
        Decimal("0.000001"), Decimal("-12.50"), date(2026, 1, 31), None, False
    )  # fmt: skip
    assert doc.raw == {"x": "\\\t"}
    assert (case.external_id, case.subject, case.description, case.resolution, case.is_closed) == (
        "CASE\n1", NASTY, "", None, True
    )  # fmt: skip
    assert case.closed_at == NOW
    assert stored["party_contact"][0][3:] == (0, "main", "Tab\tby", None, "", "\\")
    assert sorted(r[3:] for r in stored["party_attribute"]) == sorted(
        [("cf:View.Field", "a\tb"), ("EMPTY", ""), ("NONE", None)] * 2
    )
    assert {r[3:6] for r in stored["party_address"]} == {(0, "billing", "1\n2")}


def test_changed_rows_take_the_stage_path_with_the_same_escaping(engine: Engine) -> None:
    with engine.begin() as conn:
        upsert_records(conn, [_party("P1", name="old"), _document("INV/1")], NOW)
    later = NOW + timedelta(hours=1)
    with engine.begin() as conn:
        counts = upsert_records(conn, [_party("P1"), _party("P2")], later)
    assert (counts.inserted, counts.updated, counts.unchanged) == (1, 1, 0)
    with engine.connect() as conn:
        names = dict(conn.execute(sa.select(party_t.c.external_id, party_t.c.name)).all())
        contacts = conn.execute(sa.select(sa.func.count()).select_from(contact_t)).scalar()
    assert names == {"P1": NASTY, "P2": NASTY}
    assert contacts == 2  # P1's old contact replaced, not duplicated


def test_a_wrong_presumption_is_undone_and_the_page_classified(engine: Engine) -> None:
    with engine.begin() as conn:
        upsert_records(conn, [_party("P1")], NOW)
    with engine.begin() as conn:
        counts = upsert_records(conn, [_party("P1"), _party("P2")], NOW, presume_new=True)
    assert (counts.inserted, counts.updated, counts.unchanged) == (1, 0, 1)
    assert counts.presumption_failed is (engine.dialect.name == "postgresql")
    with engine.connect() as conn:
        parties = conn.execute(sa.select(sa.func.count()).select_from(party_t)).scalar()
        contacts = conn.execute(sa.select(sa.func.count()).select_from(contact_t)).scalar()
    assert (parties, contacts) == (2, 2)


def test_a_value_the_column_refuses_fails_before_anything_is_written(engine: Engine) -> None:
    with pytest.raises(sa.exc.StatementError, match="Decimal"), engine.begin() as conn:
        upsert_records(conn, [_party("P1"), _party("P2", credit_limit=2.5)], NOW, presume_new=True)
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(party_t)).scalar() == 0


def test_hashes_computed_ahead_are_stored_and_compared(engine: Engine) -> None:
    from connector.erp.records import content_hash

    records = [_party("P1"), _document("INV/1")]
    hashes = [content_hash(r) for r in records]
    with engine.begin() as conn:
        first = upsert_records(conn, records, NOW, hashes=hashes)
    with engine.begin() as conn:
        again = upsert_records(conn, records, NOW)  # hashed here: the same values
    assert (first.inserted, again.unchanged) == (2, 2)
    with engine.connect() as conn:
        assert conn.execute(sa.select(party_t.c.content_hash)).scalar() == hashes[0]
    with pytest.raises(ValueError), engine.begin() as conn:
        upsert_records(conn, records, NOW, hashes=hashes[:1])  # one hash per record or none
