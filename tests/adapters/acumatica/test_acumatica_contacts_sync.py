"""Every contact's address and every secondary contact arrive through a real sync (SQLite and
PostgreSQL), on every endpoint version: ``MainContact/Address`` and ``Contacts/Contact/Address``
are expanded, a ``CustomerContact`` line is read one level deeper, and an identical contact or
address under several roles is stored once with its roles joined. Invoices whose response lacks the
document's currency take their customer's, labelled so."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.acumatica import AcumaticaAdapter
from connector.clock import FrozenClock
from connector.memory import Memory
from connector.semantic.upsert import address_t, contact_t
from connector.settings import Settings, SyncSettings
from connector.testing import FakeAcumatica
from connector.testing.acumatica import ALL_VERSIONS

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
Rows = dict[str, list[tuple[Any, ...]]]


def _fake() -> FakeAcumatica:
    return FakeAcumatica(
        seed=21, clock=FrozenClock(NOW), customers=40, vendors=6, invoices=30, sales_orders=2, bills=2,
        cases=2, versions=ALL_VERSIONS,
    )  # fmt: skip


def _sync(engine: Engine, fake: FakeAcumatica, version: str, streams: list[str]) -> None:
    tenant = fake.tenant_settings(name="erp", version=version, page_size=25, streams=streams)
    transport = httpx.MockTransport(fake.handle)
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=FrozenClock(NOW), engine=engine, llm=None)
    report = memory.sync_runner(
        adapter_factory=lambda t: AcumaticaAdapter(
            t, sync=SyncSettings(), clock=FrozenClock(NOW), transport=transport
        )
    ).run()
    assert report.ok, [r.error for r in report.results]


def _grouped(entries: list[tuple[str, tuple[Any, ...] | None]]) -> list[tuple[Any, ...]]:
    """(roles joined, *values) per distinct value, in first-seen order."""
    roles: dict[tuple[Any, ...], list[str]] = {}
    for role, values in entries:
        if values is not None and any(values):
            roles.setdefault(values, [])
            if role not in roles[values]:
                roles[values].append(role)
    return [(", ".join(names), *values) for values, names in roles.items()]


def _contact(entity: Mapping[str, Any] | None, contact_id: Any = None) -> tuple[Any, ...] | None:
    if not entity:
        return None
    found = entity.get("ContactID", contact_id)
    return (entity.get("DisplayName"), entity.get("Email"), entity.get("Phone1"), found and str(found))


def _address(entity: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    place = (entity or {}).get("Address")
    if not place:
        return None
    fields = ("AddressLine1", "AddressLine2", "City", "State", "PostalCode", "Country")
    return tuple(place.get(name) for name in fields)


def expected(fake: FakeAcumatica) -> tuple[Rows, Rows]:
    contacts: Rows = {}
    addresses: Rows = {}
    for row in fake.tables["Customer"].ordered():
        values = row.values
        linked = [("main", values["MainContact"]), ("billing", values["BillingContact"])]
        linked.append(("primary", values["PrimaryContact"]))
        lines = [("contact", line["Contact"], line["ContactID"]) for line in values["Contacts"]]
        contacts[values["CustomerID"]] = _grouped(
            [(role, _contact(entity)) for role, entity in linked]
            + [(role, _contact(entity, number)) for role, entity, number in lines]
        )
        addresses[values["CustomerID"]] = _grouped(
            [(role, _address(entity)) for role, entity in linked]
            + [(role, _address(entity)) for role, entity, _ in lines]
        )
    return contacts, addresses


def stored(engine: Engine, table: sa.Table, columns: list[str]) -> Rows:
    query = (
        sa.select(table.c.party_external_id, *(table.c[name] for name in columns))
        .where(table.c.tenant == "erp", table.c.party_kind == "customer")
        .order_by(table.c.party_external_id, table.c.ordinal)
    )
    result: Rows = {}
    with engine.connect() as conn:
        for party, *values in conn.execute(query):
            result.setdefault(party, []).append(tuple(values))
    return result


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_every_contact_and_every_contacts_address_is_stored(engine: Engine, version: str) -> None:
    fake = _fake()
    _sync(engine, fake, version, ["Customer"])
    contacts, addresses = expected(fake)
    assert stored(engine, contact_t, ["role", "name", "email", "phone", "external_id"]) == contacts
    columns = ["role", "line1", "line2", "city", "region", "postal_code", "country"]
    assert stored(engine, address_t, columns) == addresses
    # the secondary contacts (CustomerContact lines) are there, with their addresses
    assert any("contact" in row[0] for rows in addresses.values() for row in rows)
    assert sum(1 for rows in contacts.values() for row in rows if "contact" in row[0]) >= 40


def test_an_invoice_without_its_documents_currency_takes_the_customers(engine: Engine) -> None:
    fake = _fake()
    customer = fake.keys("Customer")[3]
    currency = fake.record("Customer", customer)["CurrencyID"]
    values = {"Type": "Invoice", "ReferenceNbr": "AR900001", "Customer": customer, "Amount": 10.0}
    fake.add("Invoice", values)  # no Document.CuryID in its $custom answer
    fake.add("Invoice", {**values, "ReferenceNbr": "AR900002"})
    _sync(engine, fake, "25.200.001", ["Invoice"])
    query = sa.text("SELECT external_id, currency, extra FROM document WHERE tenant = 'erp'")
    with engine.connect() as conn:
        rows = {row.external_id: row for row in conn.execute(query)}
    assert all(row.currency for row in rows.values())  # never an empty currency
    for number in ("AR900001", "AR900002"):
        row = rows[f"Invoice/{number}"]
        extra = row.extra if isinstance(row.extra, dict) else json.loads(row.extra)
        assert (row.currency, extra.get("currency_source")) == (currency, "customer")
    others = [row for key, row in rows.items() if not key.endswith(("AR900001", "AR900002"))]
    assert others and all("currency_source" not in str(row.extra) for row in others)
    customer_reads = [r for r in fake.requests if r.target == "Customer" and r.kind == "record"]
    assert len(customer_reads) == 1  # once per customer and run
