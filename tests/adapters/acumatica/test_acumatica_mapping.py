"""Acumatica wire records -> canonical records: unwrapping, types, names, malformed values."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from connector.adapters.acumatica import mapping
from connector.adapters.acumatica import values as v
from connector.adapters.acumatica.streams import STREAMS


def w(value: Any) -> dict[str, Any]:
    return {"value": value}


CUSTOMER: dict[str, Any] = {
    "id": "b94067ed-fe17-4330-a11d-459a2f978d87",
    "rowNumber": 1,
    "note": w(""),
    "CustomerID": w("ABARTENDE"),
    "CustomerName": w("USA Bartending School"),
    "Status": w("Active"),
    "CustomerClass": w("DEFAULT"),
    "CurrencyID": w("USD"),
    "CreditLimit": w(900000.1),
    "Terms": w("30D"),
    "TaxZone": {},
    "TaxRegistrationID": w("  12-3456789 "),
    "Email": {},
    "LastModifiedDateTime": w("2026-03-13T12:12:50.4+03:00"),
    "MainContact": {
        "DisplayName": w("USA Bartending School"),
        "Email": w("ap@usabartending.com"),
        "Phone1": w("+1 206-555-0100"),
        "Address": {
            "AddressLine1": w("201 Lower Notch Rd"),
            "City": w("Little Falls"),
            "State": w("NJ"),
            "PostalCode": w("07424"),
            "Country": w("US"),
            "AddressLine2": {},
        },
    },
    "BillingContact": {},
    "Contacts": [  # CustomerContact lines: the contact sits one level deeper
        {
            "ContactID": w(101),
            "Contact": {
                "DisplayName": w("Ann Lee"),
                "Email": w("ann@usabartending.com"),
                "Address": {"AddressLine1": w("9 Side St"), "City": w("Totowa"), "Country": w("US")},
            },
            "rowNumber": 1,
        },
        {"ContactID": w(102), "Contact": {"FirstName": w("Bob"), "LastName": w("O'Neill")}, "rowNumber": 2},
    ],
    "Attributes": [{"AttributeID": w("POREQ"), "Value": w("Y")}, {"AttributeID": w("VIP"), "Value": {}}],
    "CreditVerificationRules": {"RemainingCreditLimit": w(1500.5), "CreditDaysPastDue": w(15)},
    "custom": {"Document": {"AttrPOREQ": {"type": "CustomStringField", "value": "Y"}}},
    "_links": {"self": "/entity/Default/24.200.001/Customer/b94067ed"},
}


def test_customer_fields_are_unwrapped_typed_and_named() -> None:
    record = mapping.map_customer(CUSTOMER, "t1")
    assert record.key == ("t1", "customer", "ABARTENDE")
    assert record.name == "USA Bartending School"
    assert record.credit_limit == Decimal("900000.1")
    assert record.tax_zone is None  # {} is missing, not ""
    assert record.tax_id == "12-3456789"
    assert record.email == "ap@usabartending.com"  # falls back to the main contact
    assert record.phone == "+1 206-555-0100"
    assert record.source_modified_at == datetime(2026, 3, 13, 9, 12, 50, 400000, tzinfo=UTC)
    assert record.raw is not CUSTOMER and record.raw == CUSTOMER


def test_customer_contacts_addresses_attributes_and_custom_fields_are_kept() -> None:
    record = mapping.map_customer(CUSTOMER, "t1")
    assert [(c.role, c.name, c.email) for c in record.contacts] == [
        ("main", "USA Bartending School", "ap@usabartending.com"),
        ("contact", "Ann Lee", "ann@usabartending.com"),
        ("contact", "Bob O'Neill", None),
    ]
    assert [c.external_id for c in record.contacts[1:]] == ["101", "102"]
    address, secondary = record.addresses
    assert (address.role, address.city, address.postal_code, address.line2) == (
        "main",
        "Little Falls",
        "07424",
        None,
    )
    assert (secondary.role, secondary.line1, secondary.city) == ("contact", "9 Side St", "Totowa")


def test_one_address_under_several_roles_is_kept_once_with_its_roles_joined() -> None:
    main = CUSTOMER["MainContact"]
    record = mapping.map_customer({**CUSTOMER, "BillingContact": main, "PrimaryContact": main}, "t1")
    assert (record.contacts[0].role, record.contacts[0].name) == (
        "main, billing, primary",
        "USA Bartending School",
    )
    assert [(a.role, a.city) for a in record.addresses] == [
        ("main, billing, primary", "Little Falls"),
        ("contact", "Totowa"),
    ]
    assert record.attributes == {"POREQ": "Y", "VIP": None, "Document.AttrPOREQ": "Y"}
    assert record.extra == {"remaining_credit_limit": "1500.5", "credit_days_past_due": "15"}


def test_credit_limit_comes_from_the_credit_rules_when_the_top_field_is_empty() -> None:
    record = mapping.map_customer(
        {**CUSTOMER, "CreditLimit": {}, "CreditVerificationRules": {"CreditLimit": w(250.0)}}, "t1"
    )
    assert record.credit_limit == Decimal("250.0")


def test_invoice_reads_customer_and_credit_memos_are_their_own_type() -> None:
    raw = {
        "Type": w("Credit Memo"),
        "ReferenceNbr": w("AR004821"),
        "Customer": w("ABARTENDE"),
        "Date": w("2025-06-17T00:00:00+03:00"),
        "DueDate": {},
        "Status": w("Closed"),
        "Amount": w(1250.1),
        "Balance": w(0),
        "LastModifiedDateTime": w("2025-06-18T08:00:00+00:00"),
    }
    record = mapping.map_invoice(raw, "t1")
    assert (record.doc_type, record.external_id, record.number) == (
        "credit_memo",
        "Credit Memo/AR004821",
        "AR004821",
    )
    assert record.party_external_id == "ABARTENDE"
    assert record.doc_date == date(2025, 6, 17)  # the date as written, not shifted to UTC
    assert (record.amount, record.balance, record.is_open) == (Decimal("1250.1"), Decimal("0"), False)
    invoice = mapping.map_invoice({**raw, "Type": w("Invoice"), "Customer": w("X1")}, "t1")
    assert (invoice.doc_type, invoice.party_external_id) == ("ar_invoice", "X1")
    assert record.currency is None  # no field holds it: see the adapter's fallback


def test_invoice_currency_is_read_from_the_documents_dac_through_custom() -> None:
    raw = {
        "Type": w("Invoice"),
        "ReferenceNbr": w("AR1"),
        "Customer": w("C1"),
        "custom": {"Document": {"CuryID": {"type": "CustomStringField", "value": "EUR"}}},
    }
    assert mapping.map_invoice(raw, "t1").currency == "EUR"


def test_26_select_values_and_date_only_values_are_read() -> None:
    raw = {
        "Type": w({"ID": "CRM", "Description": "Credit Memo"}),
        "ReferenceNbr": w("AR9"),
        "Customer": w("C1"),
        "Status": w({"ID": "C", "Description": "Closed"}),
        "Date": w("2026-02-03"),
        "DueDate": w("2026-03-05"),
    }
    record = mapping.map_invoice(raw, "t1")
    assert (record.doc_type, record.external_id, record.status, record.is_open) == (
        "credit_memo",
        "Credit Memo/AR9",
        "Closed",
        False,
    )
    assert (record.doc_date, record.due_date) == (date(2026, 2, 3), date(2026, 3, 5))
    assert (record.extra["type"], record.extra["type_code"], record.extra["status_code"]) == (
        "Credit Memo",
        "CRM",
        "C",
    )
    # the id is the one older versions give (``Credit Memo/AR9``): an upgrade to 26 re-keys nothing
    assert STREAMS["Invoice"].external_id(raw) == "Credit Memo/AR9"


def test_sales_order_uses_last_modified_and_keeps_its_lines() -> None:
    raw = {
        "OrderType": w("SO"),
        "OrderNbr": w("000123"),
        "CustomerID": w("ABARTENDE"),
        "CustomerOrder": w("PO-77"),
        "Status": w("Open"),
        "OrderTotal": w(99.9),
        "Hold": w(False),
        "LastModified": w("2025-06-18T08:00:00.123+00:00"),
        "Details": [
            {"LineNbr": w(1), "InventoryID": w("CONGRILL"), "OrderQty": w(2.0), "UnitPrice": w(49.95)}
        ],
    }
    record = mapping.map_sales_order(raw, "t1")
    assert (record.external_id, record.customer_ref, record.is_open) == ("SO/000123", "PO-77", True)
    assert record.source_modified_at == datetime(2025, 6, 18, 8, 0, 0, 123000, tzinfo=UTC)
    assert record.extra["hold"] is False
    assert record.extra["lines"] == [
        {"line": "1", "item": "CONGRILL", "quantity": "2.0", "unit_price": "49.95"}
    ]


def test_bill_adjustments_stay_ap_bills_with_their_type() -> None:
    raw = {
        "Type": w("Debit Adj."),
        "ReferenceNbr": w("000042"),
        "Vendor": w("VACME"),
        "VendorRef": w("INV-9"),
    }
    record = mapping.map_bill(raw, "t1")
    assert (record.doc_type, record.external_id, record.party_kind) == (
        "ap_bill",
        "Debit Adj./000042",
        "vendor",
    )
    assert (record.customer_ref, record.extra["type"]) == ("INV-9", "Debit Adj.")


def test_case_resolution_and_description_come_from_the_rich_text() -> None:
    raw = {
        "CaseID": w("000007"),
        "Status": w("Closed"),
        "BusinessAccount": w("ABARTENDE"),
        "DateReported": w("2025-06-01T09:30:00-04:00"),
        "Description": w(
            "<p>PO number missing on invoice AR1.</p><p>Resolution: Reissued AR1 &amp; noted PO.</p>"
        ),
    }
    record = mapping.map_case(raw, "t1")
    assert record.is_closed
    assert record.description == "PO number missing on invoice AR1."
    assert record.resolution == "Reissued AR1 & noted PO."
    assert record.reported_at == datetime(2025, 6, 1, 13, 30, tzinfo=UTC)
    open_case = mapping.map_case({**raw, "Status": w("Open"), "Description": w("Plain text.")}, "t1")
    assert (open_case.is_closed, open_case.description, open_case.resolution) == (False, "Plain text.", None)
    resolved = mapping.map_case(  # 26.200.001: a select status and ClosureNotes
        {**raw, "Status": w({"ID": "R", "Description": "Resolved"}), "ClosureNotes": w("Refunded.")}, "t1"
    )
    assert (resolved.is_closed, resolved.status, resolved.resolution) == (True, "Resolved", "Refunded.")


@pytest.mark.parametrize(
    ("field", "wire", "reason"),
    [
        ("CreditLimit", w("lots"), "expected a number"),
        ("CreditLimit", w(True), "expected a number"),
        ("CreditLimit", w("NaN"), "finite"),
        ("LastModifiedDateTime", w("2026-03-13T12:12:50"), "UTC offset"),
        ("LastModifiedDateTime", w("yesterday"), "ISO 8601"),
        ("CustomerName", w({"nested": 1}), "expected text"),
        ("CustomerID", {}, "non-empty"),
        ("CustomerID", w("   "), "non-empty"),
        ("Contacts", {"oops": 1}, "list of objects"),
        ("TaxZone", {"error": "Field is invalid"}, "an error"),
    ],
)
def test_malformed_values_raise_a_field_error_naming_the_field(field: str, wire: Any, reason: str) -> None:
    with pytest.raises(v.FieldError, match=reason) as info:
        mapping.map_customer({**CUSTOMER, field: wire}, "t1")
    assert info.value.field == field


def test_external_ids_and_their_inverse() -> None:
    invoice = STREAMS["Invoice"]
    raw = {"Type": w("Invoice"), "ReferenceNbr": w("AR000001")}
    assert invoice.external_id(raw) == "Invoice/AR000001"
    assert invoice.split_external_id("Invoice/AR000001") == ("Invoice", "AR000001")
    assert STREAMS["Customer"].split_external_id("A/B") == ("A/B",)
    assert invoice.key_text({"Type": w("Invoice")}) is None
    with pytest.raises(ValueError, match="Type/ReferenceNbr"):
        invoice.split_external_id("AR000001")


def test_plain_text_leaves_text_alone_and_strips_markup() -> None:
    assert v.plain_text("a < b") == "a < b"
    assert v.plain_text("<div>One<br/>Two &lt;3</div>") == "One\nTwo <3"
    assert v.plain_text("<p> </p>") is None
