"""The adapters map the real-shaped fakes with 0 field mismatches: every stored column equals the
value the fake holds for it, through a real sync on SQLite and PostgreSQL (Acumatica on the
25.200.001 endpoint and on 20.200.001, which lacks CreditLimit, Email and TaxExemptionNumber;
SAP over OData v2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.acumatica import AcumaticaAdapter
from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.db.upsert import case_t, document_t, party_t
from connector.memory import Memory
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.testing import FakeAcumatica
from connector.testing.sap import FakeSAP

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
Expect = Callable[[Mapping[str, Any]], Any]


def _num(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _day(value: Any) -> date | None:
    return value if value is None or type(value) is date else value.date()


def _linked(name: str, field: str) -> Expect:
    return lambda values: (values.get(name) or {}).get(field)


def sync(engine: Engine, tenant: TenantSettings, factory: Callable[[TenantSettings], Any]) -> None:
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=FrozenClock(NOW), engine=engine, llm=None)
    report = memory.sync_runner(adapter_factory=factory).run()
    assert report.ok, [r.error for r in report.results]


def stored(engine: Engine, table: sa.Table, **where: str) -> dict[str, Any]:
    query = sa.select(table).where(*(table.c[k] == v for k, v in where.items()))
    with engine.connect() as conn:
        return {row.external_id: row for row in conn.execute(query)}


def mismatches(
    rows: Mapping[str, Any], source: Mapping[str, Mapping[str, Any]], columns: Mapping[str, Expect]
) -> list[str]:
    """``key.column: stored != expected`` for every difference, and keys missing on either side."""
    found = [f"{key}: not stored" for key in source if key not in rows]
    found += [f"{key}: stored but not in the fake" for key in rows if key not in source]
    for key, values in source.items():
        row = rows.get(key)
        if row is None:
            continue
        for column, expect in columns.items():
            want = expect(values)
            got = row.extra.get(column[6:]) if column.startswith("extra.") else getattr(row, column)
            if isinstance(want, float | Decimal):
                want = Decimal(str(want))
                got = Decimal(got) if isinstance(got, str) else got  # a decimal in extra: its text
            if isinstance(got, datetime) and isinstance(want, datetime):
                want = want.astimezone(UTC).replace(microsecond=want.microsecond // 1000 * 1000)
            if got != want:
                found.append(f"{key}.{column}: stored {got!r}, the fake has {want!r}")
    return found


CUSTOMER: dict[str, Expect] = {
    "name": lambda v: v["CustomerName"],
    "status": lambda v: v["Status"],
    "currency": lambda v: v["CurrencyID"],
    "credit_limit": lambda v: _num(v["CreditLimit"]),
    "terms": lambda v: v["Terms"],
    "tax_zone": lambda v: v["TaxZone"],
    "tax_id": lambda v: v["TaxRegistrationID"],
    "party_class": lambda v: v["CustomerClass"],
    "email": lambda v: v["Email"],
    "phone": _linked("MainContact", "Phone1"),
    "extra.tax_exemption_number": lambda v: v["TaxExemptionNumber"],
    "extra.price_class": lambda v: v["PriceClassID"],
    "extra.parent_account": lambda v: v["ParentRecord"],
    "extra.open_orders_balance": lambda v: _num(v["CreditVerificationRules"]["OpenOrdersBalance"]),
    "source_modified_at": lambda v: v["LastModifiedDateTime"],
}
VENDOR: dict[str, Expect] = {
    "name": lambda v: v["VendorName"],
    "status": lambda v: v["Status"],
    "currency": lambda v: v["CurrencyID"],
    "terms": lambda v: v["Terms"],
    "tax_zone": lambda v: v["TaxZone"],
    "tax_id": lambda v: v["TaxRegistrationID"],
    "party_class": lambda v: v["VendorClass"],
    "email": _linked("MainContact", "Email"),
    "extra.payment_method": lambda v: v["PaymentMethod"],
}
LEDGER: dict[str, Expect] = {
    "status": lambda v: v["Status"],
    "currency": lambda v: v["CurrencyID"],
    "amount": lambda v: _num(v["Amount"]),
    "balance": lambda v: _num(v["Balance"]),
    "doc_date": lambda v: v["Date"],
    "due_date": lambda v: v["DueDate"],
    "description": lambda v: v["Description"],
    "extra.terms": lambda v: v["Terms"],
    "source_modified_at": lambda v: v["LastModifiedDateTime"],
}
INVOICE = {
    **LEDGER,
    "party_external_id": lambda v: v["Customer"],
    "customer_ref": lambda v: v["CustomerOrder"],
}
BILL = {**LEDGER, "party_external_id": lambda v: v["Vendor"], "customer_ref": lambda v: v["VendorRef"]}
ORDER: dict[str, Expect] = {
    "party_external_id": lambda v: v["CustomerID"],
    "status": lambda v: v["Status"],
    "currency": lambda v: v["CurrencyID"],
    "amount": lambda v: _num(v["OrderTotal"]),
    "doc_date": lambda v: v["Date"],
    "due_date": lambda v: v["RequestedOn"],
    "customer_ref": lambda v: v["CustomerOrder"],
    "extra.hold": lambda v: v["Hold"],
    "extra.credit_hold": lambda v: v["CreditHold"],
    "extra.lines": lambda v: [
        {
            "line": str(line["LineNbr"]),
            "item": line["InventoryID"],
            "description": line["LineDescription"],
            "quantity": f"{line['OrderQty']:.6f}",  # the real scale of a quantity
            "unit_price": f"{line['UnitPrice']:.4f}",
            "amount": f"{line['Amount']:.4f}",
        }
        for line in v["Details"]
    ],
    "source_modified_at": lambda v: v["LastModified"],
}
CASE: dict[str, Expect] = {
    "customer_external_id": lambda v: v["BusinessAccount"],
    "subject": lambda v: v["Subject"],
    "status": lambda v: v["Status"],
    "priority": lambda v: v["Priority"],
    "case_class": lambda v: v["ClassID"],
    "reported_at": lambda v: v["DateReported"],
    "closed_at": lambda v: v["ClosingDate"],
    "source_modified_at": lambda v: v["LastModifiedDateTime"],
}


def _source(fake: FakeAcumatica, entity: str, key: Callable[[Mapping[str, Any]], str]) -> dict[str, Any]:
    return {key(row.values): row.values for row in fake.tables[entity].ordered()}


def _two(a: str, b: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda v: f"{v[a]}/{v[b]}"


@pytest.fixture(params=["25.200.001", "20.200.001"])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def acumatica() -> Iterator[FakeAcumatica]:
    # 120 customers: the 100th has the placeholder id <NEW>, as in real tenants
    yield FakeAcumatica(
        seed=13, clock=FrozenClock(NOW), customers=120, vendors=10, invoices=150, sales_orders=60, bills=30,
        cases=30,
    )  # fmt: skip


def test_acumatica_maps_every_field_of_the_real_shapes(
    engine: Engine, acumatica: FakeAcumatica, version: str
) -> None:
    tenant = acumatica.tenant_settings(name="acu", version=version, page_size=50)
    sync(
        engine,
        tenant,
        lambda t: AcumaticaAdapter(
            t, sync=SyncSettings(), clock=FrozenClock(NOW), transport=httpx.MockTransport(acumatica.handle)
        ),
    )
    customer = dict(CUSTOMER)
    if version == "20.200.001":  # the endpoint lacks these: the fallbacks, or empty
        customer["credit_limit"] = lambda v: _num(v["CreditVerificationRules"]["CreditLimit"])
        customer["email"] = _linked("MainContact", "Email")
        customer["extra.tax_exemption_number"] = lambda v: None
    invoices = stored(engine, document_t, tenant="acu", party_kind="customer")
    found = mismatches(
        stored(engine, party_t, tenant="acu", kind="customer"),
        _source(acumatica, "Customer", lambda v: v["CustomerID"]),
        customer,
    )
    found += mismatches(
        stored(engine, party_t, tenant="acu", kind="vendor"),
        _source(acumatica, "Vendor", lambda v: v["VendorID"]),
        VENDOR,
    )
    found += mismatches(
        {k: r for k, r in invoices.items() if r.doc_type != "sales_order"},
        _source(acumatica, "Invoice", _two("Type", "ReferenceNbr")),
        INVOICE,
    )
    found += mismatches(
        {k: r for k, r in invoices.items() if r.doc_type == "sales_order"},
        _source(acumatica, "SalesOrder", _two("OrderType", "OrderNbr")),
        ORDER,
    )
    found += mismatches(
        stored(engine, document_t, tenant="acu", party_kind="vendor"),
        _source(acumatica, "Bill", _two("Type", "ReferenceNbr")),
        BILL,
    )
    found += mismatches(
        stored(engine, case_t, tenant="acu"), _source(acumatica, "Case", lambda v: v["CaseID"]), CASE
    )
    assert found == []
    assert "<NEW>" in stored(engine, party_t, tenant="acu", kind="customer")
    with engine.connect() as conn:
        counts = conn.execute(
            sa.select(sa.func.count()).select_from(document_t).where(document_t.c.tenant == "acu")
        ).scalar_one()
    assert counts == 150 + 60 + 30


def _sap_customer(fake: FakeSAP) -> dict[str, Expect]:
    data = fake.data

    def first_area(v: Mapping[str, Any]) -> Mapping[str, Any]:
        areas = data.customer_sales_areas[v["BusinessPartner"]]
        return min(areas, key=lambda a: (a["SalesOrganization"], a["DistributionChannel"], a["Division"]))

    def default_email(v: Mapping[str, Any]) -> str | None:
        for address in sorted(data.addresses[v["BusinessPartner"]], key=lambda a: a["AddressID"]):
            boxes = sorted(data.emails[address["AddressID"]], key=lambda e: not e["IsDefaultEmailAddress"])
            if boxes:
                return str(boxes[0]["EmailAddress"])
        return None

    return {
        "name": lambda v: v["BusinessPartnerFullName"],
        "currency": lambda v: first_area(v)["Currency"],
        "tax_id": lambda v: data.customers[v["BusinessPartner"]]["VATRegistration"],
        "party_class": lambda v: data.customers[v["BusinessPartner"]]["CustomerAccountGroup"],
        "email": default_email,
        "extra.incoterms": lambda v: first_area(v)["IncotermsClassification"],
    }


SAP_ORDER: dict[str, Expect] = {
    "party_external_id": lambda v: v["SoldToParty"],
    "currency": lambda v: v["TransactionCurrency"],
    "amount": lambda v: v["TotalNetAmount"],
    "doc_date": lambda v: v["SalesOrderDate"],
    "customer_ref": lambda v: v["PurchaseOrderByCustomer"] or None,
    "extra.payment_terms": lambda v: v["CustomerPaymentTerms"],
    "extra.requested_delivery_date": lambda v: v["RequestedDeliveryDate"].isoformat(),
    "source_modified_at": lambda v: v["LastChangeDateTime"],
}


def test_sap_maps_every_field_of_the_real_shapes(engine: Engine) -> None:
    fake = FakeSAP(seed=13, customers=40, suppliers=5, both=0, sales_orders=50, billing_documents=10)
    tenant = fake.tenant_settings(name="s4", page_size=20, streams=["BusinessPartner", "SalesOrder"])
    clock = FrozenClock(NOW)
    sync(
        engine, tenant, lambda t: SAPAdapter(t, sync=SyncSettings(), clock=clock, transport=fake.transport())
    )
    partners = {bp: row for bp, row in fake.data.partners.items() if row["Customer"]}
    found = mismatches(stored(engine, party_t, tenant="s4", kind="customer"), partners, _sap_customer(fake))
    found += mismatches(stored(engine, document_t, tenant="s4"), fake.data.sales_orders, SAP_ORDER)
    assert found == []
