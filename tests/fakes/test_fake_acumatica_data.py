"""Seeded data of the fake Acumatica, the helpers that change it, and its speed."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest

from connector.clock import FrozenClock
from connector.testing import DataGen, FakeAcumatica
from connector.testing.acumatica_render import parse_shape

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def make(seed: int = 0, **sizes: int) -> FakeAcumatica:
    return FakeAcumatica(seed=seed, clock=FrozenClock(NOW), **sizes)


def test_the_same_seed_gives_the_same_data() -> None:
    a, b, c = make(11), make(11), make(12)
    for entity in ("Customer", "Invoice", "Case"):
        assert a.keys(entity) == b.keys(entity)
        assert [r.values for r in a.tables[entity].ordered()] == [
            r.values for r in b.tables[entity].ordered()
        ]
    assert a.keys("Customer") != c.keys("Customer")


def test_generated_records_look_real_and_refer_to_each_other() -> None:
    fake = make(2)
    customers = {r.values["CustomerID"]: r.values for r in fake.tables["Customer"].ordered()}
    vendors = set(fake.keys("Vendor"))
    assert len(customers) == 200 and len(vendors) == 50
    for values in customers.values():
        assert re.fullmatch(r"[A-Z0-9]{1,10}|<NEW>", values["CustomerID"])  # <NEW>: as in real tenants
        assert re.fullmatch(r"[^@\s]+@[a-z0-9]+\.[a-z]+", values["MainContact"]["Email"])
        assert values["CurrencyID"] in {"USD", "EUR", "CAD", "GBP"}
        assert NOW - timedelta(days=731) <= values["LastModifiedDateTime"] <= NOW
    assert list(customers)[99] == "<NEW>"  # one placeholder id, the 100th customer
    invoices = [r.values for r in fake.tables["Invoice"].ordered()]
    assert all(inv["Customer"] in customers for inv in invoices)
    assert all(isinstance(inv["Date"], date) and inv["DueDate"] >= inv["Date"] for inv in invoices)
    assert all(inv["Balance"] == 0 for inv in invoices if inv["Status"] in ("Closed", "Voided"))
    assert all(b.values["Vendor"] in vendors for b in fake.tables["Bill"].ordered())
    cases = [r.values for r in fake.tables["Case"].ordered()]
    assert all(case["BusinessAccount"] in customers for case in cases)
    closed = [case for case in cases if case["Status"] in ("Closed", "Resolved")]
    assert closed and all("Resolution:" in case["Description"] for case in closed)
    assert any("AR0" in case["Subject"] for case in cases)  # cases quote real document numbers


def test_some_records_share_a_modification_time_like_a_bulk_update() -> None:
    times = [r.values["LastModifiedDateTime"] for r in make(3, customers=1000).tables["Customer"].ordered()]
    assert len(set(times)) < len(times)


def test_datagen_is_seeded_and_makes_unique_codes() -> None:
    a, b = DataGen(9), DataGen(9)
    assert [a.company_name() for _ in range(5)] == [b.company_name() for _ in range(5)]
    gen = DataGen(1)
    codes = [gen.code("North Star Tools Inc.") for _ in range(30)] + [gen.code("North Star Motors")]
    assert len(set(codes)) == 31 and all(len(code) <= 10 for code in codes)
    amount = gen.amount(10, 1000)
    assert 10 <= amount <= 1000 and amount == amount.quantize(amount.__class__("0.01"))
    moment = gen.timestamp(NOW - timedelta(days=1), NOW)
    assert NOW - timedelta(days=1) <= moment <= NOW and moment.tzinfo is UTC
    assert gen.weighted([("a", 0.0), ("b", 1.0)]) == "b"


def test_add_modify_stamp_delete_and_record() -> None:
    fake = make(4, customers=5)
    key = fake.add("Customer", {"CustomerID": "O'BRIEN", "CustomerName": "O'Brien"}, modified_at=NOW)
    assert key == "O'BRIEN" and fake.count("Customer") == 6
    fake.modify("Customer", "o'brien", {"CreditLimit": 10.0}, custom={"Document.AttrPOREQ": "Y"})
    assert fake.record("Customer", "O'BRIEN")["CreditLimit"] == 10.0
    assert fake.record("Customer", "O'BRIEN")["LastModifiedDateTime"] == NOW  # the clock's now
    later = NOW + timedelta(hours=1)
    stamped = fake.stamp("Invoice", 3, later)
    assert stamped == fake.keys("Invoice")[:3]
    assert all(fake.record("Invoice", k)["LastModifiedDateTime"] == later for k in stamped)
    fake.delete("Customer", "O'BRIEN")
    assert "O'BRIEN" not in fake.keys("Customer")
    with pytest.raises(KeyError):
        fake.record("Customer", "O'BRIEN")
    with pytest.raises(ValueError, match="key fields cannot change"):
        fake.modify("Customer", fake.keys("Customer")[0], {"CustomerID": "NEW"})
    with pytest.raises(KeyError, match="already exists"):
        fake.add("Invoice", {"Type": "Invoice", "ReferenceNbr": "AR000001"})
    with pytest.raises(KeyError, match="no entity"):
        fake.count("Planet")


def test_filtered_lists_follow_changes() -> None:
    fake = make(5, customers=50)
    table = fake.tables["Customer"]
    text = "LastModifiedDateTime ge datetimeoffset'2026-01-15T12:00:00Z'"
    assert table.select(text) == []
    fake.modify("Customer", fake.keys("Customer")[10])
    assert [row.values["CustomerID"] for row in table.select(text)] == [fake.keys("Customer")[10]]


@pytest.mark.slow
def test_a_generated_tenant_at_scale_serves_a_full_page_of_1000() -> None:
    """Scale works; its speed is measured by scripts/bench_fake_acumatica.py, not asserted here."""
    fake = make(6, customers=5000, vendors=100, invoices=5000, sales_orders=1000, bills=1000, cases=1000)
    table = fake.tables["Customer"]
    shape = parse_shape(table.definition, None, "MainContact,Contacts,Attributes", None)
    renderer = fake._renderer("Customer", "25.200.001")
    body = renderer.page(table.ordered()[2000:3000], shape, 2001)
    assert len(body) > 500_000
    assert body.count(b'"CustomerID"') == 1000
