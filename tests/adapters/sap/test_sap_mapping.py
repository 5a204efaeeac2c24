"""Mapping decoded SAP entities into canonical parties and documents."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pytest

from connector.adapters.sap.catalog import StreamDef, load_catalog
from connector.adapters.sap.mapping import (
    MappingError,
    MappingRules,
    map_billing_document,
    map_business_partner,
    map_sales_order,
)
from connector.erp.records import DocumentRecord, PartyRecord

RULES = MappingRules(tenant="s4")


def stream(name: str) -> StreamDef:
    return load_catalog().streams[name]


def partner(**changes: Any) -> dict[str, Any]:
    bp: dict[str, Any] = {
        "BusinessPartner": "1000042",
        "Customer": "1000042",
        "Supplier": "",
        "BusinessPartnerCategory": "2",
        "BusinessPartnerFullName": "O'Brien & Sons GmbH",
        "BusinessPartnerIsBlocked": False,
        "CreationDate": date(2024, 1, 2),
        "CreationTime": time(8, 30),
        "LastChangeDate": date(2024, 5, 1),
        "LastChangeTime": time(17, 49, 5),
        "to_BusinessPartnerAddress": [
            {
                "AddressID": "22",
                "StreetName": "Main Street",
                "HouseNumber": "5",
                "CityName": "Walldorf",
                "PostalCode": "69190",
                "Country": "DE",
                "to_EmailAddress": [
                    {
                        "OrdinalNumber": "2",
                        "IsDefaultEmailAddress": False,
                        "EmailAddress": "info@obrien.example",
                    },
                    {
                        "OrdinalNumber": "1",
                        "IsDefaultEmailAddress": True,
                        "EmailAddress": "ap@obrien.example",
                    },
                ],
                "to_PhoneNumber": [
                    {"OrdinalNumber": "1", "IsDefaultPhoneNumber": True, "PhoneNumber": "+49 1"}
                ],
            }
        ],
        "to_Customer": {
            "Customer": "1000042",
            "CustomerName": "O'Brien",
            "CustomerAccountGroup": "CUST",
            "OrderIsBlockedForCustomer": "",
            "PostingIsBlocked": False,
            "DeletionIndicator": False,
            "VATRegistration": "DE123",
            "to_CustomerCompany": [
                {"CompanyCode": "1710", "PaymentTerms": "NT60", "DeletionIndicator": False},
                {"CompanyCode": "1010", "PaymentTerms": "NT30", "DeletionIndicator": False},
            ],
            "to_CustomerSalesArea": [
                {
                    "SalesOrganization": "1710",
                    "DistributionChannel": "10",
                    "Division": "00",
                    "Currency": "USD",
                    "CustomerPaymentTerms": "0002",
                },
                {
                    "SalesOrganization": "1010",
                    "DistributionChannel": "10",
                    "Division": "00",
                    "Currency": "EUR",
                    "CustomerPaymentTerms": "0001",
                },
            ],
        },
    }
    bp.update(changes)
    return bp


def only(records: list[PartyRecord]) -> PartyRecord:
    assert len(records) == 1
    return records[0]


def test_a_customer_partner_maps_to_one_customer_party() -> None:
    party = only(map_business_partner(partner(), stream("BusinessPartner"), RULES))
    assert party.key == ("s4", "customer", "1000042")
    assert party.name == "O'Brien & Sons GmbH"
    assert party.email == "ap@obrien.example" and party.phone == "+49 1"
    assert party.tax_id == "DE123" and party.party_class == "CUST" and party.status == "active"
    assert party.addresses[0].line1 == "Main Street 5" and party.addresses[0].country == "DE"
    assert party.source_modified_at == datetime(2024, 5, 1, 17, 49, 5, tzinfo=UTC)


def test_a_partner_that_is_customer_and_supplier_becomes_two_parties_sharing_the_key() -> None:
    bp = partner(
        Supplier="1000042",
        to_Supplier={
            "Supplier": "1000042",
            "SupplierAccountGroup": "SUPL",
            "to_SupplierCompany": [{"CompanyCode": "1010", "PaymentTerms": "NT45"}],
        },
    )
    customer, vendor = map_business_partner(bp, stream("BusinessPartner"), RULES)
    assert (customer.kind, vendor.kind) == ("customer", "vendor")
    assert customer.external_id == vendor.external_id == "1000042"
    assert (customer.terms, vendor.terms) == ("NT30", "NT45")
    assert (
        vendor.party_class == "SUPL" and "to_Customer" not in vendor.raw and "to_Supplier" not in customer.raw
    )


def test_a_partner_without_roles_maps_to_no_party() -> None:
    assert (
        map_business_partner(partner(Customer="", to_Customer=None), stream("BusinessPartner"), RULES) == []
    )


def test_company_terms_win_by_default_and_the_lowest_company_code_is_used() -> None:
    party = only(map_business_partner(partner(), stream("BusinessPartner"), RULES))
    assert party.terms == "NT30" and party.currency == "EUR"
    assert party.extra["company_code"] == "1010" and party.extra["sales_area"] == "1010/10/00"


def test_sales_area_terms_win_when_configured() -> None:
    rules = MappingRules(tenant="s4", terms_source="sales_area")
    assert only(map_business_partner(partner(), stream("BusinessPartner"), rules)).terms == "0001"


def test_the_configured_company_code_and_sales_organization_are_used() -> None:
    rules = MappingRules(tenant="s4", company_code="1710", sales_organization="1710")
    party = only(map_business_partner(partner(), stream("BusinessPartner"), rules))
    assert (party.terms, party.currency) == ("NT60", "USD")


def test_terms_fall_back_to_the_other_source_when_one_is_missing() -> None:
    bp = partner()
    bp["to_Customer"]["to_CustomerCompany"] = []
    assert only(map_business_partner(bp, stream("BusinessPartner"), RULES)).terms == "0001"


def test_blocks_make_the_party_blocked_and_are_kept_as_attributes() -> None:
    bp = partner()
    bp["to_Customer"]["OrderIsBlockedForCustomer"] = "01"
    bp["to_Customer"]["PostingIsBlocked"] = True
    party = only(map_business_partner(bp, stream("BusinessPartner"), RULES))
    assert party.status == "blocked"
    assert party.attributes == {"order_block": "01", "posting_block": "true"}


def test_a_blocked_partner_is_blocked() -> None:
    party = only(
        map_business_partner(partner(BusinessPartnerIsBlocked=True), stream("BusinessPartner"), RULES)
    )
    assert party.status == "blocked" and party.attributes["bp_block"] == "true"


def test_a_deletion_flag_wins_over_blocks() -> None:
    bp = partner()
    bp["to_Customer"]["DeletionIndicator"] = True
    bp["to_Customer"]["OrderIsBlockedForCustomer"] = "01"
    assert only(map_business_partner(bp, stream("BusinessPartner"), RULES)).status == "deleted"


def test_a_deleted_configured_company_code_marks_the_party_deleted() -> None:
    bp = partner()
    bp["to_Customer"]["to_CustomerCompany"][1]["DeletionIndicator"] = True
    rules = MappingRules(tenant="s4", company_code="1010")
    assert only(map_business_partner(bp, stream("BusinessPartner"), rules)).status == "deleted"


def test_a_never_changed_partner_is_stamped_with_its_creation() -> None:
    bp = partner(LastChangeDate=None, LastChangeTime=None)
    party = only(map_business_partner(bp, stream("BusinessPartner"), RULES))
    assert party.source_modified_at == datetime(2024, 1, 2, 8, 30, tzinfo=UTC)


def test_a_partner_without_number_is_a_mapping_error() -> None:
    with pytest.raises(MappingError):
        map_business_partner(partner(BusinessPartner=" "), stream("BusinessPartner"), RULES)


def order(**changes: Any) -> dict[str, Any]:
    so: dict[str, Any] = {
        "SalesOrder": "10000007",
        "SoldToParty": "1000042",
        "SalesOrderDate": date(2024, 5, 1),
        "CreationDate": date(2024, 5, 1),
        "LastChangeDateTime": datetime(2024, 5, 2, 9, 0, 1, 123000, tzinfo=UTC),
        "PurchaseOrderByCustomer": "PO-77",
        "TotalNetAmount": Decimal("1234.50"),
        "TransactionCurrency": "EUR",
        "OverallSDProcessStatus": "B",
        "OverallSDDocumentRejectionSts": "A",
    }
    so.update(changes)
    return so


def test_a_sales_order_maps_to_an_open_document() -> None:
    doc = map_sales_order(order(), stream("SalesOrder"), RULES)
    assert isinstance(doc, DocumentRecord)
    assert doc.key == ("s4", "sales_order", "10000007")
    assert (doc.party_kind, doc.party_external_id, doc.customer_ref) == ("customer", "1000042", "PO-77")
    assert doc.amount == Decimal("1234.50") and doc.currency == "EUR" and doc.doc_date == date(2024, 5, 1)
    assert doc.status == "in_process" and doc.is_open
    assert doc.source_modified_at == datetime(2024, 5, 2, 9, 0, 1, 123000, tzinfo=UTC)


def test_a_completed_or_rejected_order_is_closed() -> None:
    assert not map_sales_order(order(OverallSDProcessStatus="C"), stream("SalesOrder"), RULES).is_open
    rejected = map_sales_order(order(OverallSDDocumentRejectionSts="C"), stream("SalesOrder"), RULES)
    assert rejected.status == "rejected" and not rejected.is_open


def test_an_order_without_sold_to_party_is_a_mapping_error() -> None:
    with pytest.raises(MappingError, match="SoldToParty"):
        map_sales_order(order(SoldToParty=None), stream("SalesOrder"), RULES)


def test_a_billing_document_is_an_invoice_with_gross_amount() -> None:
    bd = {
        "BillingDocument": "90000001",
        "SDDocumentCategory": "M",
        "SoldToParty": "1000042",
        "PayerParty": "1000043",
        "BillingDocumentDate": date(2024, 5, 3),
        "TotalNetAmount": Decimal("100.00"),
        "TaxAmount": Decimal("19.00"),
        "TransactionCurrency": "EUR",
        "BillingDocumentIsCancelled": False,
        "LastChangeDateTime": datetime(2024, 5, 3, 10, tzinfo=UTC),
    }
    doc = map_billing_document(bd, stream("BillingDocument"), RULES)
    assert doc.doc_type == "ar_invoice" and doc.amount == Decimal("119.00") and doc.is_open
    gross = {**bd, "TotalGrossAmount": Decimal("119.01")}
    assert map_billing_document(gross, stream("BillingDocument"), RULES).amount == Decimal("119.01")
    net_only = {k: v for k, v in bd.items() if k != "TaxAmount"}
    assert map_billing_document(net_only, stream("BillingDocument"), RULES).amount is None  # never net
    assert doc.extra["payer"] == "1000043" and doc.balance is None
    memo = map_billing_document({**bd, "SDDocumentCategory": "O"}, stream("BillingDocument"), RULES)
    assert memo.doc_type == "credit_memo"
    cancelled = map_billing_document(
        {**bd, "BillingDocumentIsCancelled": True}, stream("BillingDocument"), RULES
    )
    assert cancelled.status == "cancelled" and not cancelled.is_open


@pytest.mark.parametrize(
    ("clearing", "status", "is_open"),
    [("A", "open", True), ("B", "partially_cleared", True), ("C", "cleared", False), (None, "open", True)],
)
def test_the_clearing_status_decides_whether_an_invoice_is_open(
    clearing: str | None, status: str, is_open: bool
) -> None:
    bd = {"BillingDocument": "90000001", "SoldToParty": "1", "InvoiceClearingStatus": clearing}
    doc = map_billing_document(bd, stream("BillingDocument"), RULES)
    assert (doc.status, doc.is_open) == (status, is_open)
