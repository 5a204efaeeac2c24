"""SAP over OData v2 and v4 stores what the fake SAP holds, with 0 field mismatches.

Each stream of a fake SAP (built from SAP's published contracts) is synced through the real
adapter and runner into SQLite and PostgreSQL, once with a v2 tenant and once with a v4 one (which
reads business partners and open items over v2: SAP publishes no v4 service for them), and every
stored column is compared with the fake's value: the invoice amount is the gross amount, an order's
items are its lines, a partner's mobile number is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from field_match import Expect, mismatches, stored, sync_sap
from sqlalchemy.engine import Engine

from connector.semantic.upsert import document_t, party_t
from connector.testing.sap import FakeSAP
from connector.testing.sap_data import sales_order_items
from connector.testing.sap_items import item_key

_CLEARING = {"A": "open", "B": "partially_cleared", "C": "cleared"}


def _first_default(rows: list[Mapping[str, Any]], flag: str, value: str) -> str | None:
    ordered = sorted(rows, key=lambda r: (not r[flag], r["OrdinalNumber"]))
    return next((r[value] for r in ordered if r[value]), None)


def _customer(fake: FakeSAP) -> dict[str, Expect]:
    data = fake.data

    def first_area(v: Mapping[str, Any]) -> Mapping[str, Any]:
        areas = data.customer_sales_areas[v["BusinessPartner"]]
        return min(areas, key=lambda a: (a["SalesOrganization"], a["DistributionChannel"], a["Division"]))

    def first(table: dict[str, list[Any]], flag: str, value: str) -> Expect:
        def pick(v: Mapping[str, Any]) -> str | None:
            for address in sorted(data.addresses[v["BusinessPartner"]], key=lambda a: a["AddressID"]):
                found = _first_default(table.get(address["AddressID"], []), flag, value)
                if found:
                    return found
            return None

        return pick

    email = first(data.emails, "IsDefaultEmailAddress", "EmailAddress")
    landline = first(data.phones, "IsDefaultPhoneNumber", "PhoneNumber")
    mobile = first(data.mobiles, "IsDefaultPhoneNumber", "PhoneNumber")
    return {
        "name": lambda v: v["BusinessPartnerFullName"],
        "currency": lambda v: first_area(v)["Currency"],
        "tax_id": lambda v: data.customers[v["BusinessPartner"]]["VATRegistration"],
        "party_class": lambda v: data.customers[v["BusinessPartner"]]["CustomerAccountGroup"],
        "email": email,
        "phone": lambda v: landline(v) or mobile(v),
        "extra.mobile_phone": mobile,
        "extra.incoterms": lambda v: first_area(v)["IncotermsClassification"],
    }


def _lines(order: Mapping[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "line": item["SalesOrderItem"],
            "item": item["Product"],
            "description": item["SalesOrderItemText"],
            "quantity": str(item["RequestedQuantity"]),
            "unit": item["RequestedQuantitySAPUnit"],
            "amount": str(item["NetAmount"]),
        }
        for item in sales_order_items(dict(order))
    ]


ORDER: dict[str, Expect] = {
    "party_external_id": lambda v: v["SoldToParty"],
    "currency": lambda v: v["TransactionCurrency"],
    "amount": lambda v: v["TotalNetAmount"],
    "doc_date": lambda v: v["SalesOrderDate"],
    "customer_ref": lambda v: v["PurchaseOrderByCustomer"] or None,
    "extra.payment_terms": lambda v: v["CustomerPaymentTerms"],
    "extra.requested_delivery_date": lambda v: v["RequestedDeliveryDate"].isoformat(),
    "extra.delivery_status": lambda v: v["OverallDeliveryStatus"] or None,
    "extra.lines": _lines,
    "source_modified_at": lambda v: v["LastChangeDateTime"],
}


def _invoice(version: str) -> dict[str, Expect]:
    def status(v: Mapping[str, Any]) -> str:
        if v["BillingDocumentIsCancelled"]:
            return "cancelled"
        return _CLEARING[v["InvoiceClearingStatus"]] if version == "v2" else "open"  # v4 has no clearing

    return {
        "party_external_id": lambda v: v["SoldToParty"],
        "currency": lambda v: v["TransactionCurrency"],
        "amount": lambda v: v["TotalNetAmount"] + v["TaxAmount"],  # gross, never net
        "status": status,
        "doc_date": lambda v: v["BillingDocumentDate"],
        "extra.net_amount": lambda v: str(v["TotalNetAmount"]),
        "extra.tax_amount": lambda v: str(v["TaxAmount"]),
        "source_modified_at": lambda v: v["LastChangeDateTime"],
    }


OPEN_ITEM: dict[str, Expect] = {
    "party_external_id": lambda v: v["Customer"] or v["Supplier"],
    "currency": lambda v: v["TransactionCurrency"],
    "amount": lambda v: v["AmountInTransactionCurrency"] * (1 if v["FinancialAccountType"] == "D" else -1),
    "due_date": lambda v: v["NetDueDate"],
    "status": lambda v: "cleared" if v["IsCleared"] else "open",
}


@dataclass(frozen=True)
class Case:
    stream: str
    table: sa.Table
    where: Mapping[str, str]
    records: Callable[[FakeSAP], Mapping[str, Mapping[str, Any]]]
    columns: Callable[[FakeSAP, str], Mapping[str, Expect]]


CASES = {
    "BusinessPartner": Case(
        "BusinessPartner",
        party_t,
        {"kind": "customer"},
        lambda f: {bp: row for bp, row in f.data.partners.items() if row["Customer"]},
        lambda f, _: _customer(f),
    ),
    "SalesOrder": Case("SalesOrder", document_t, {}, lambda f: f.data.sales_orders, lambda f, _: ORDER),
    "BillingDocument": Case(
        "BillingDocument", document_t, {}, lambda f: f.data.billing_documents, lambda f, v: _invoice(v)
    ),
    "OpenItem": Case(
        "OpenItem",
        document_t,
        {"doc_type": "open_item"},
        lambda f: {item_key(r): r for r in f.data.open_items.values() if not r["IsCleared"]},
        lambda f, _: OPEN_ITEM,
    ),
}


@pytest.mark.parametrize("version", ["v2", "v4"])
@pytest.mark.parametrize("stream", sorted(CASES))
def test_every_stored_column_equals_the_fakes_value(engine: Engine, version: Any, stream: str) -> None:
    fake = FakeSAP(
        seed=13,
        customers=40,
        suppliers=12,
        both=0,
        sales_orders=50,
        billing_documents=20,
        odata_version=version,
    )
    case = CASES[stream]
    sync_sap(engine, fake, stream)
    rows = stored(engine, case.table, tenant="erp", **case.where)
    source = case.records(fake)
    assert len(source) > 5
    assert mismatches(rows, source, case.columns(fake, version)) == []


def test_the_fake_data_exercises_lines_mobiles_and_gross_amounts() -> None:
    """The comparison above would be hollow without orders of several items, partners with only a
    mobile number and invoices whose tax is not zero."""
    fake = FakeSAP(seed=13, customers=40, suppliers=5, both=0, sales_orders=50, billing_documents=20)
    assert any(len(sales_order_items(o)) > 1 for o in fake.data.sales_orders.values())
    mobiles = {a for a, rows in fake.data.mobiles.items() if rows}
    assert any(not fake.data.phones[a] for a in mobiles) and len(mobiles) > 3
    assert all(bd["TaxAmount"] > 0 for bd in fake.data.billing_documents.values() if bd["TotalNetAmount"])
