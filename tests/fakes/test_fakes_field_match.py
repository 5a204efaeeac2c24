"""The adapters map the real-shaped fakes with 0 field mismatches: every stored column equals the
value the fake holds for it, through a real sync on SQLite and PostgreSQL, one case per ERP,
endpoint and stream (Acumatica on every endpoint version from 20.200.001 to 26.200.001, each
serving what its published contract defines: the fields a version lacks are read from their
fallback or stay empty; SAP over OData v2), and all Acumatica streams synced together keep every
record."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from field_match import NOW, Expect, mismatches, stored, sync, sync_sap
from sqlalchemy.engine import Engine

from connector.adapters.acumatica import AcumaticaAdapter, contract
from connector.clock import FrozenClock
from connector.semantic.upsert import case_t, document_t, party_t
from connector.settings import SyncSettings
from connector.testing import FakeAcumatica
from connector.testing.acumatica import ALL_VERSIONS
from connector.testing.acumatica_schema import ENTITIES as ENTITY_DEFS
from connector.testing.acumatica_schema import view
from connector.testing.sap import FakeSAP


def _num(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _day(value: Any) -> date | None:
    return value if value is None or type(value) is date else value.date()


def _linked(name: str, field: str) -> Expect:
    return lambda values: (values.get(name) or {}).get(field)


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
    "currency": lambda v: v["custom"]["Document.CuryID"],  # no Invoice field: the DAC's, via $custom
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
    # ClosureNotes from 26.200.001, the description's "Resolution:" paragraph before: the same text
    "resolution": lambda v: v["ClosureNotes"],
    "source_modified_at": lambda v: v["LastModifiedDateTime"],
}


def _two(a: str, b: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda v: f"{v[a]}/{v[b]}"


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


@dataclass(frozen=True)
class Entity:
    """One stream of one fake ERP: which stored rows hold its records, the fake's records by the
    ``external_id`` each must be stored under, and what every stored column must equal."""

    erp: str
    version: str  # the Acumatica endpoint; "v2" for SAP
    stream: str
    table: sa.Table
    where: Mapping[str, str]
    records: Callable[[Any], Mapping[str, Mapping[str, Any]]]  # the fake -> {external id: values}
    columns: Callable[[Any], Mapping[str, Expect]]  # the fake -> {column: expected value}

    @property
    def id(self) -> str:
        return f"{self.erp}-{self.version}-{self.stream}"


def _defines(version: str, entity: str, field: str) -> bool:
    return contract.field_type(version, entity, field) is not None


def _acumatica_customer(version: str) -> dict[str, Expect]:
    """What a version's contract lacks is read from its fallback, or empty."""
    customer = dict(CUSTOMER)
    if not _defines(version, "Customer", "CreditLimit"):
        customer["credit_limit"] = lambda v: _num(v["CreditVerificationRules"]["CreditLimit"])
    if not _defines(version, "Customer", "Email"):
        customer["email"] = _linked("MainContact", "Email")
    if not _defines(version, "Customer", "TaxExemptionNumber"):
        customer["extra.tax_exemption_number"] = lambda v: None
    return customer


def _key(version: str, entity: str, *fields: str) -> Callable[[Mapping[str, Any]], str]:
    """The external id: the key values joined by "/" as versions before 26.200.001 send them (a select
    value's description, not its ID), the same on every version."""
    return lambda v: "/".join(str(v[field]) for field in fields)


def _acumatica(
    version: str,
    stream: str,
    table: sa.Table,
    where: Mapping[str, str],
    key: Callable[[Mapping[str, Any]], str],
    columns: Mapping[str, Expect],
) -> Entity:
    """An Acumatica stream: its records are the fake's entity table of the same name (with the
    row's ``$custom`` fields under ``custom``)."""

    def records(fake: FakeAcumatica) -> dict[str, Any]:
        rows = fake.tables[stream].ordered()
        return {key(row.values): {**row.values, "custom": row.custom or {}} for row in rows}

    return Entity("acumatica", version, stream, table, where, records, lambda _: columns)


def _acumatica_entities(version: str) -> list[Entity]:
    customer, vendor = {"kind": "customer"}, {"kind": "vendor"}
    sold, bought = {"party_kind": "customer"}, {"party_kind": "vendor"}
    streams = [
        ("Customer", party_t, customer, ("CustomerID",), _acumatica_customer(version)),
        ("Vendor", party_t, vendor, ("VendorID",), VENDOR),
        ("Invoice", document_t, sold, ("Type", "ReferenceNbr"), INVOICE),
        ("SalesOrder", document_t, sold, ("OrderType", "OrderNbr"), ORDER),
        ("Bill", document_t, bought, ("Type", "ReferenceNbr"), BILL),
        ("Case", case_t, {}, ("CaseID",), CASE),
    ]
    return [
        _acumatica(
            version, stream, table, where, _key(version, stream, *keys), _with_codes(version, stream, columns)
        )
        for stream, table, where, keys, columns in streams
    ]


def _with_codes(version: str, stream: str, columns: Mapping[str, Expect]) -> dict[str, Expect]:
    """From 26.200.001 a select value's ID is kept beside its description (``extra.status_code``)."""
    wire = view(ENTITY_DEFS[stream], version)
    if "Status" not in wire.selects:
        return {**columns, "extra.status_code": lambda v: None}
    return {**columns, "extra.status_code": lambda v: wire.code_of("Status", v["Status"])}


def _sap_customers(fake: FakeSAP) -> dict[str, Mapping[str, Any]]:
    return {bp: row for bp, row in fake.data.partners.items() if row["Customer"]}


ENTITIES = [
    *(entity for version in ALL_VERSIONS for entity in _acumatica_entities(version)),
    Entity("sap", "v2", "BusinessPartner", party_t, {"kind": "customer"}, _sap_customers, _sap_customer),
    Entity("sap", "v2", "SalesOrder", document_t, {}, lambda f: f.data.sales_orders, lambda _: SAP_ORDER),
]


def _acumatica_fake() -> FakeAcumatica:
    # 120 customers: the 100th has the placeholder id <NEW>, as in real tenants
    return FakeAcumatica(
        seed=13, clock=FrozenClock(NOW), customers=120, vendors=10, invoices=150, sales_orders=60, bills=30,
        cases=30, versions=ALL_VERSIONS,
    )  # fmt: skip


def sync_acumatica(engine: Engine, fake: FakeAcumatica, version: str, streams: list[str] | None) -> None:
    tenant = fake.tenant_settings(name="erp", version=version, page_size=50, streams=streams)
    transport = httpx.MockTransport(fake.handle)
    sync(
        engine,
        tenant,
        lambda t: AcumaticaAdapter(t, sync=SyncSettings(), clock=FrozenClock(NOW), transport=transport),
    )


@pytest.mark.parametrize("entity", ENTITIES, ids=lambda e: e.id)
def test_every_stored_column_equals_the_fakes_value(engine: Engine, entity: Entity) -> None:
    """Each stream synced on its own, so a failure names the ERP, endpoint and stream."""
    fake: FakeAcumatica | FakeSAP
    if entity.erp == "acumatica":
        fake = _acumatica_fake()
        sync_acumatica(engine, fake, entity.version, [entity.stream])
    else:
        fake = FakeSAP(seed=13, customers=40, suppliers=5, both=0, sales_orders=50, billing_documents=10)
        sync_sap(engine, fake, entity.stream)
    rows = stored(engine, entity.table, tenant="erp", **entity.where)
    assert mismatches(rows, entity.records(fake), entity.columns(fake)) == []


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_acumatica_streams_synced_together_keep_every_record(engine: Engine, version: str) -> None:
    """All streams in one sync: none overwrites another's records, and the placeholder customer id
    ``<NEW>`` of real tenants is stored like any other."""
    sync_acumatica(engine, _acumatica_fake(), version, None)
    assert "<NEW>" in stored(engine, party_t, tenant="erp", kind="customer")
    with engine.connect() as conn:
        counts = {
            table.name: conn.execute(
                sa.select(sa.func.count()).select_from(table).where(table.c.tenant == "erp")
            ).scalar_one()
            for table in (party_t, document_t, case_t)
        }
    assert counts == {party_t.name: 120 + 10, document_t.name: 150 + 60 + 30, case_t.name: 30}
