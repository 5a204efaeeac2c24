"""Acumatica records -> canonical records.

One function per entity. Each reads the wrapped fields through :mod:`connector.adapters.acumatica.values`
and raises :class:`~connector.adapters.acumatica.values.FieldError` when the record cannot be mapped
faithfully; the adapter turns that into a :class:`~connector.erp.protocol.RecordProblem`.
Inconsistent names are absorbed here (``Customer`` on Invoice vs ``CustomerID`` elsewhere).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from connector.adapters.acumatica import values as v
from connector.erp.records import (
    Address,
    CaseRecord,
    Contact,
    DocType,
    DocumentRecord,
    PartyKind,
    PartyRecord,
)

AR_CLOSED_STATUSES = frozenset({"closed", "voided", "canceled", "cancelled", "rejected", "reversed"})
SO_CLOSED_STATUSES = frozenset({"completed", "cancelled", "canceled", "closed", "invoiced"})
CASE_CLOSED_STATUSES = frozenset({"closed", "resolved"})
_RESOLUTION_MARKER = re.compile(r"(?im)^\s*resolution\s*:\s*")


def _first_text(record: Mapping[str, Any], *names: str) -> str | None:
    for name in names:
        value = v.text(record, name)
        if value is not None:
            return value
    return None


def _contact(role: str, entity: Mapping[str, Any] | None, contact_id: str | None = None) -> Contact | None:
    if entity is None:
        return None
    name = _first_text(entity, "DisplayName", "FullName", "Attention", "CompanyName")
    if name is None:
        first, last = v.text(entity, "FirstName"), v.text(entity, "LastName")
        name = " ".join(part for part in (first, last) if part) or None
    contact = Contact(
        role=role,
        name=name,
        email=v.text(entity, "Email"),
        phone=_first_text(entity, "Phone1", "Phone2"),
        external_id=v.text(entity, "ContactID") or contact_id,
    )
    return contact if any((contact.name, contact.email, contact.phone, contact.external_id)) else None


def _address(role: str, entity: Mapping[str, Any] | None) -> Address | None:
    if entity is None:
        return None
    source = v.linked(entity, "Address")
    if source is None:
        return None
    address = Address(
        role=role,
        line1=v.text(source, "AddressLine1"),
        line2=v.text(source, "AddressLine2"),
        city=v.text(source, "City"),
        region=v.text(source, "State"),
        postal_code=v.text(source, "PostalCode"),
        country=v.text(source, "Country"),
    )
    return address if any((address.line1, address.city, address.postal_code, address.country)) else None


_ROLE_LENGTH = 32  # the stored role column


def _roles(names: list[str]) -> str:
    """Several roles of one contact or address as one text (``main, billing``), within the column."""
    text = names[0]
    for name in names[1:]:
        if name not in text.split(", ") and len(text) + 2 + len(name) <= _ROLE_LENGTH:
            text = f"{text}, {name}"
    return text


def _contacts_and_addresses(
    record: Mapping[str, Any], linked_roles: Mapping[str, str]
) -> tuple[tuple[Contact, ...], tuple[Address, ...]]:
    """The linked contacts (``MainContact``...) and the secondary ones (``Contacts[]``, each a
    ``CustomerContact`` holding its ``Contact``), with every contact's address. An identical contact
    or address under several roles is kept once, its roles joined (``main, billing``)."""
    contacts: dict[Contact, list[str]] = {}
    addresses: dict[Address, list[str]] = {}

    def add(role: str, entity: Mapping[str, Any] | None, contact_id: str | None = None) -> None:
        contact = _contact("", entity, contact_id)
        if contact is not None:
            contacts.setdefault(contact, []).append(role)
        address = _address("", entity)
        if address is not None:
            addresses.setdefault(address, []).append(role)

    for field, role in linked_roles.items():
        add(role, v.linked(record, field))
    for item in v.details(record, "Contacts"):
        add("contact", v.linked(item, "Contact"), v.text(item, "ContactID"))
    return (
        tuple(replace(contact, role=_roles(roles)) for contact, roles in contacts.items()),
        tuple(replace(address, role=_roles(roles)) for address, roles in addresses.items()),
    )


def _attributes(record: Mapping[str, Any]) -> dict[str, str | None]:
    """ERP attributes by AttributeID, then custom fields by ``View.Field``."""
    result: dict[str, str | None] = {}
    for item in v.details(record, "Attributes"):
        attribute = v.required_text(item, "AttributeID")
        result[attribute] = _first_text(item, "Value", "ValueDescription")
    result.update(v.custom_fields(record))
    return result


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _as_str(value: object) -> str | None:
    return None if value is None else str(value)


def map_customer(record: Mapping[str, Any], tenant: str) -> PartyRecord:
    contacts, addresses = _contacts_and_addresses(
        record, {"MainContact": "main", "BillingContact": "billing", "PrimaryContact": "primary"}
    )
    credit = v.linked(record, "CreditVerificationRules") or {}
    main = v.linked(record, "MainContact") or {}
    return PartyRecord(
        tenant=tenant,
        kind="customer",
        external_id=v.required_text(record, "CustomerID"),
        name=v.text(record, "CustomerName"),
        status=v.label(record, "Status"),
        currency=v.text(record, "CurrencyID"),
        credit_limit=v.money(record, "CreditLimit")
        if v.unwrap(record, "CreditLimit") is not None
        else v.money(credit, "CreditLimit"),
        terms=v.text(record, "Terms"),
        tax_zone=v.text(record, "TaxZone"),
        tax_id=v.text(record, "TaxRegistrationID"),
        party_class=v.text(record, "CustomerClass"),
        email=v.text(record, "Email") or v.text(main, "Email"),
        phone=_first_text(main, "Phone1", "Phone2"),
        contacts=contacts,
        addresses=addresses,
        attributes=_attributes(record),
        extra=_drop_none(
            {
                "remaining_credit_limit": _as_str(v.money(credit, "RemainingCreditLimit")),
                "open_orders_balance": _as_str(v.money(credit, "OpenOrdersBalance")),
                "credit_days_past_due": _as_str(v.unwrap(credit, "CreditDaysPastDue")),
                "status_code": _code_if_select(record, "Status"),
                "tax_exemption_number": v.text(record, "TaxExemptionNumber"),
                "price_class": v.text(record, "PriceClassID"),
                "parent_account": v.text(record, "ParentRecord"),
            }
        ),
        source_modified_at=v.timestamp(record, "LastModifiedDateTime"),
        raw=dict(record),
    )


def map_vendor(record: Mapping[str, Any], tenant: str) -> PartyRecord:
    contacts, addresses = _contacts_and_addresses(
        record, {"MainContact": "main", "RemittanceContact": "remittance"}
    )
    main = v.linked(record, "MainContact") or {}
    return PartyRecord(
        tenant=tenant,
        kind="vendor",
        external_id=v.required_text(record, "VendorID"),
        name=v.text(record, "VendorName") or v.text(record, "LegalName"),
        status=v.label(record, "Status"),
        currency=v.text(record, "CurrencyID"),
        terms=v.text(record, "Terms"),
        tax_zone=v.text(record, "TaxZone"),
        tax_id=v.text(record, "TaxRegistrationID"),
        party_class=v.text(record, "VendorClass"),
        email=v.text(main, "Email"),
        phone=_first_text(main, "Phone1", "Phone2"),
        contacts=contacts,
        addresses=addresses,
        attributes=_attributes(record),
        extra=_drop_none(
            {
                "legal_name": v.text(record, "LegalName"),
                "payment_method": v.text(record, "PaymentMethod"),
                "status_code": _code_if_select(record, "Status"),
            }
        ),
        source_modified_at=v.timestamp(record, "LastModifiedDateTime"),
        raw=dict(record),
    )


def _is_open(status: str | None, closed: frozenset[str]) -> bool:
    return status is None or status.lower() not in closed


def _ledger_document(
    record: Mapping[str, Any],
    tenant: str,
    *,
    doc_type: DocType,
    party_kind: PartyKind,
    party_field: str,
    reference_field: str,
    currency: str | None,
    erp_type: str,
    type_label: str | None,
) -> DocumentRecord:
    """AR invoices and AP bills share one shape: Type/ReferenceNbr keyed, amount and balance."""
    number = v.required_text(record, "ReferenceNbr")
    status = v.label(record, "Status")
    return DocumentRecord(
        tenant=tenant,
        doc_type=doc_type,
        external_id=f"{type_label or erp_type}/{number}",  # the same on every endpoint version
        number=number,
        party_kind=party_kind,
        party_external_id=v.required_text(record, party_field),
        status=status,
        currency=currency,
        amount=v.money(record, "Amount"),
        balance=v.money(record, "Balance"),
        doc_date=v.calendar_date(record, "Date"),
        due_date=v.calendar_date(record, "DueDate"),
        description=v.text(record, "Description"),
        customer_ref=v.text(record, reference_field),
        is_open=_is_open(status, AR_CLOSED_STATUSES),
        extra=_drop_none(
            {
                "type": type_label,
                "type_code": erp_type if erp_type != type_label else None,
                "status_code": _code_if_select(record, "Status"),
                "terms": v.text(record, "Terms"),
            }
        ),
        source_modified_at=v.timestamp(record, "LastModifiedDateTime"),
        raw=dict(record),
    )


#: Where an Invoice's currency is read: its DAC field through ``$custom`` (no endpoint version defines
#: a currency field on Invoice). When a response lacks it, the adapter takes the customer's currency.
INVOICE_CURRENCY = "Document.CuryID"


def map_invoice(record: Mapping[str, Any], tenant: str) -> DocumentRecord:
    """AR invoices; a Credit Memo type (``CRM`` on 26.200.001) becomes ``credit_memo``."""
    erp_type, type_label = v.required_code(record, "Type"), v.label(record, "Type")
    is_credit = (type_label or "").lower() == "credit memo" or erp_type == "CRM"
    return _ledger_document(
        record, tenant, doc_type="credit_memo" if is_credit else "ar_invoice", party_kind="customer",
        party_field="Customer", reference_field="CustomerOrder",
        currency=v.custom_text(record, INVOICE_CURRENCY), erp_type=erp_type, type_label=type_label,
    )  # fmt: skip


def _order_lines(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    lines = []
    for item in v.details(record, "Details"):
        lines.append(
            _drop_none(
                {
                    "line": _as_str(v.unwrap(item, "LineNbr")),
                    "item": v.text(item, "InventoryID"),
                    "description": v.text(item, "LineDescription"),
                    "quantity": _as_str(v.money(item, "OrderQty")),
                    "unit_price": _as_str(v.money(item, "UnitPrice")),
                    "amount": _as_str(v.money(item, "Amount") or v.money(item, "ExtendedPrice")),
                }
            )
        )
    return lines


def map_sales_order(record: Mapping[str, Any], tenant: str) -> DocumentRecord:
    order_type = v.required_code(record, "OrderType")
    number = v.required_text(record, "OrderNbr")
    status = v.label(record, "Status")
    lines = _order_lines(record)
    return DocumentRecord(
        tenant=tenant,
        doc_type="sales_order",
        external_id=f"{order_type}/{number}",
        number=number,
        party_kind="customer",
        party_external_id=v.required_text(record, "CustomerID"),
        status=status,
        currency=v.text(record, "CurrencyID"),
        amount=v.money(record, "OrderTotal"),
        doc_date=v.calendar_date(record, "Date"),
        due_date=v.calendar_date(record, "RequestedOn"),
        description=v.text(record, "Description"),
        customer_ref=v.text(record, "CustomerOrder"),
        is_open=_is_open(status, SO_CLOSED_STATUSES),
        extra=_drop_none(
            {
                "order_type": order_type,
                "status_code": _code_if_select(record, "Status"),
                "hold": v.boolean(record, "Hold"),
                "credit_hold": v.boolean(record, "CreditHold"),
                "lines": lines or None,
            }
        ),
        # LastModified up to 25.200.001, LastModifiedDateTime from 26.200.001
        source_modified_at=v.timestamp(record, "LastModified") or v.timestamp(record, "LastModifiedDateTime"),
        raw=dict(record),
    )


def map_bill(record: Mapping[str, Any], tenant: str) -> DocumentRecord:
    """AP documents: bills and their adjustments (Debit Adj./Credit Adj./Prepayment) are all
    ``ap_bill``; the Acumatica type stays in the external id and in ``extra["type"]``."""
    return _ledger_document(
        record, tenant, doc_type="ap_bill", party_kind="vendor", party_field="Vendor",
        reference_field="VendorRef", currency=v.text(record, "CurrencyID"),
        erp_type=v.required_code(record, "Type"), type_label=v.label(record, "Type"),
    )  # fmt: skip


def split_resolution(description: str | None) -> tuple[str | None, str | None]:
    """A case description with a trailing "Resolution:" paragraph -> (description, resolution)."""
    if description is None:
        return None, None
    match = _RESOLUTION_MARKER.search(description)
    if match is None:
        return description, None
    before = description[: match.start()].strip() or None
    after = description[match.end() :].strip() or None
    return before, after


def map_case(record: Mapping[str, Any], tenant: str) -> CaseRecord:
    status = v.label(record, "Status")
    description, resolution = split_resolution(v.plain_text(v.text(record, "Description")))
    explicit = v.plain_text(v.text(record, "ClosureNotes"))  # 26.200.001; before, only the description
    is_closed = status is not None and status.lower() in CASE_CLOSED_STATUSES
    return CaseRecord(
        tenant=tenant,
        external_id=v.required_text(record, "CaseID"),
        customer_external_id=v.text(record, "BusinessAccount"),
        subject=v.text(record, "Subject"),
        status=status,
        priority=v.text(record, "Priority"),
        case_class=v.text(record, "ClassID"),
        reported_at=v.timestamp(record, "DateReported"),
        closed_at=v.timestamp(record, "ClosingDate"),
        description=description,
        resolution=explicit or resolution,
        is_closed=is_closed,
        extra=_drop_none(
            {
                "status_code": _code_if_select(record, "Status"),
                "severity": v.text(record, "Severity"),
                "reason": v.text(record, "Reason"),
                "contact_id": v.text(record, "ContactID"),
                "owner": v.text(record, "Owner"),
            }
        ),
        source_modified_at=v.timestamp(record, "LastModifiedDateTime"),
        raw=dict(record),
    )


def _code_if_select(record: Mapping[str, Any], name: str) -> str | None:
    """A select value's ID (``N`` for Open on 26.200.001), kept beside its label; None before 26."""
    code = v.select_code(record, name)
    return code if code is not None and code != v.label(record, name) else None
