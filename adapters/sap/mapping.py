"""Map decoded SAP entities into the canonical records shared with the other adapters.

A business partner yields one :class:`PartyRecord` per role: a customer (``to_Customer``) and a
supplier (``to_Supplier``, kind ``vendor``); a partner with both roles gives two parties that share
the business partner number as ``external_id``.

Payment terms and currency (the documented, configurable rule): SAP keeps payment terms per company
code (``A_CustomerCompany.PaymentTerms``) and per sales area (``A_CustomerSalesArea.CustomerPaymentTerms``).
``terms_source = "company"`` (default) takes the company code's terms and falls back to the sales
area's; ``"sales_area"`` does the reverse. The company code and sales area used are the configured
``company_code`` / ``sales_organization`` when set, else the lowest key; entries flagged for deletion
are passed over. Currency exists only per sales area, so it always comes from the sales area.

Status is ``deleted`` when the role or chosen company code is flagged for deletion (or the partner is
marked for archiving), ``blocked`` when the partner or any order/delivery/billing/posting/purchasing/
payment block is set, else ``active``; the individual blocks are kept as attributes.

Times: SAP's date (+ time) fields are local to the SAP system and read in the tenant's
``sap_time_zone`` (default UTC, as in S/4HANA Cloud); ``Edm.DateTimeOffset`` fields are UTC already.
Every mapped time is aware UTC; money is ``Decimal``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from decimal import Decimal
from typing import Any, Literal

from connector.adapters.sap.catalog import Cursor, ODataVersion, StreamDef
from connector.adapters.sap.odata import Entity
from connector.adapters.sap.values import combine, jsonable
from connector.erp.records import Address, Contact, DocType, DocumentRecord, PartyRecord
from connector.errors import ERPRecordError

_SD_STATUS = {"A": "open", "B": "in_process", "C": "completed"}
# The names that differ between OData v2 and v4 (SAP's published $metadata of each service); every
# other name the mappers read is the same in both. v4's BillingDocument has no clearing status.
_NAMES: dict[ODataVersion, dict[str, str]] = {
    "v2": {
        "delivery_status": "OverallTotalDeliveryStatus",
        "items": "to_Item",
        "product": "Material",
        "tax": "TaxAmount",
    },
    "v4": {
        "delivery_status": "OverallDeliveryStatus",
        "items": "_Item",
        "product": "Product",
        "tax": "TotalTaxAmount",
    },
}
_CLEARING_STATUS: dict[ODataVersion, str] = {"v2": "InvoiceClearingStatus"}
_CLEARING = {"A": "open", "B": "partially_cleared", "C": "cleared"}
_CREDIT_MEMO_CATEGORIES = frozenset({"O", "6"})  # SD document category: credit memo / credit memo list


BILLING_BALANCE_UNAVAILABLE = "SAP billing documents carry no open amount (the OpenItem stream does)"


class MappingError(ERPRecordError):
    """An entity that cannot become a canonical record (missing key, missing party...)."""


@dataclass(frozen=True, slots=True)
class MappingRules:
    tenant: str
    terms_source: Literal["company", "sales_area"] = "company"
    company_code: str | None = None
    sales_organization: str | None = None
    time_zone: tzinfo = UTC  # of SAP's local date/time fields


def modified_at(entity: Entity, stream: StreamDef, zone: tzinfo = UTC) -> datetime | None:
    """The source modification time: the change stamp, else (never changed) the creation stamp,
    and the latest of that and the stream's further stamps (an item's clearing date).

    Date (+ time) stamps are SAP local time in ``zone``; timestamps are UTC already.
    """
    found = next(
        (s for s in (_stamp(entity, c, zone) for c in (stream.changed, stream.created) if c) if s), None
    )
    for cursor in stream.also_changed:
        extra = _stamp(entity, cursor, zone)
        if extra is not None and (found is None or extra > found):
            found = extra
    return found


def _stamp(entity: Entity, cursor: Cursor, zone: tzinfo) -> datetime | None:
    value = entity.get(cursor.field)
    if cursor.kind == "datetime":
        return value if isinstance(value, datetime) else None
    if value is None:
        return None
    return combine(value, entity.get(cursor.time_field) if cursor.time_field else None, zone)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _rows(value: Any) -> list[Entity]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _pick(rows: list[Entity], key: str, wanted: str | None, order: tuple[str, ...]) -> Entity | None:
    live = sorted(
        (r for r in rows if not r.get("DeletionIndicator")), key=lambda r: tuple(str(r.get(k)) for k in order)
    )
    if wanted is not None:
        return next((r for r in live if r.get(key) == wanted), None)
    return live[0] if live else None


def _company_entry(rows: list[Entity], rules: MappingRules) -> Entity | None:
    return _pick(rows, "CompanyCode", rules.company_code, ("CompanyCode",))


def _sales_area(rows: list[Entity], rules: MappingRules) -> Entity | None:
    order = ("SalesOrganization", "DistributionChannel", "Division")
    return _pick(rows, "SalesOrganization", rules.sales_organization, order)


def _first_default(rows: list[Entity], flag: str, value: str) -> str | None:
    ordered = sorted(rows, key=lambda r: (not r.get(flag), str(r.get("OrdinalNumber"))))
    return next((_text(r.get(value)) for r in ordered if _text(r.get(value))), None)


def _contact_points(bp: Entity) -> tuple[str | None, str | None, str | None, tuple[Address, ...]]:
    """E-mail, landline, mobile number (each the default one of the first address that has one)
    and the addresses."""
    addresses = sorted(_rows(bp.get("to_BusinessPartnerAddress")), key=lambda a: str(a.get("AddressID")))
    email = phone = mobile = None
    mapped = []
    for index, addr in enumerate(addresses):
        email = email or _first_default(
            _rows(addr.get("to_EmailAddress")), "IsDefaultEmailAddress", "EmailAddress"
        )
        phone = phone or _first_default(
            _rows(addr.get("to_PhoneNumber")), "IsDefaultPhoneNumber", "PhoneNumber"
        )
        mobile = mobile or _first_default(
            _rows(addr.get("to_MobilePhoneNumber")), "IsDefaultPhoneNumber", "PhoneNumber"
        )
        street = " ".join(p for p in (_text(addr.get("StreetName")), _text(addr.get("HouseNumber"))) if p)
        mapped.append(
            Address(
                role="main" if index == 0 else "other",
                line1=street or None,
                line2=_text(addr.get("AdditionalStreetPrefixName")),
                city=_text(addr.get("CityName")),
                region=_text(addr.get("Region")),
                postal_code=_text(addr.get("PostalCode")),
                country=_text(addr.get("Country")),
            )
        )
    return email, phone, mobile, tuple(mapped)


def _name(bp: Entity, role: Entity, role_name_field: str) -> str | None:
    person = " ".join(p for p in (_text(bp.get("FirstName")), _text(bp.get("LastName"))) if p)
    return (
        _text(bp.get("BusinessPartnerFullName"))
        or _text(bp.get("OrganizationBPName1"))
        or person
        or _text(role.get(role_name_field))
    )


def _blocks(bp: Entity, role: Entity, names: dict[str, str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    if bp.get("BusinessPartnerIsBlocked"):
        found["bp_block"] = "true"
    for field_name, attribute in names.items():
        value = role.get(field_name)
        if value is True:
            found[attribute] = "true"
        elif isinstance(value, str) and value.strip():
            found[attribute] = value.strip()
    return found


_CUSTOMER_BLOCKS = {
    "OrderIsBlockedForCustomer": "order_block",
    "DeliveryIsBlocked": "delivery_block",
    "BillingIsBlockedForCustomer": "billing_block",
    "PostingIsBlocked": "posting_block",
}
_SUPPLIER_BLOCKS = {
    "PostingIsBlocked": "posting_block",
    "PurchasingIsBlocked": "purchasing_block",
    "PaymentIsBlockedForSupplier": "payment_block",
}


def _company_deleted(rows: list[Entity], rules: MappingRules) -> bool:
    """The configured company code exists for this role but is flagged for deletion."""
    return rules.company_code is not None and any(
        r.get("CompanyCode") == rules.company_code and r.get("DeletionIndicator") for r in rows
    )


def _party(
    bp: Entity,
    role: Entity,
    *,
    kind: Literal["customer", "vendor"],
    rules: MappingRules,
    modified: datetime | None,
) -> PartyRecord:
    is_customer = kind == "customer"
    companies = _rows(role.get("to_CustomerCompany" if is_customer else "to_SupplierCompany"))
    company = _company_entry(companies, rules)
    area = _sales_area(_rows(role.get("to_CustomerSalesArea")), rules) if is_customer else None
    company_terms = _text(company.get("PaymentTerms")) if company else None
    area_terms = _text(area.get("CustomerPaymentTerms")) if area else None
    terms = (
        (company_terms or area_terms) if rules.terms_source == "company" else (area_terms or company_terms)
    )
    blocks = _blocks(bp, role, _CUSTOMER_BLOCKS if is_customer else _SUPPLIER_BLOCKS)
    if company is not None and _text(company.get("PaymentBlockingReason")):
        blocks["company_payment_block"] = _text(company.get("PaymentBlockingReason"))
    if _company_deleted(companies, rules) or role.get("DeletionIndicator") or bp.get("IsMarkedForArchiving"):
        status = "deleted"
    else:
        status = "blocked" if blocks else "active"
    email, landline, mobile, addresses = _contact_points(bp)
    phone = landline or mobile
    name = _name(bp, role, "CustomerName" if is_customer else "SupplierName")
    role_number = _text(role.get("Customer" if is_customer else "Supplier"))
    extra: dict[str, Any] = {
        "business_partner": bp["BusinessPartner"],
        "category": {"1": "person", "2": "organization", "3": "group"}.get(
            str(bp.get("BusinessPartnerCategory"))
        ),
        ("customer" if is_customer else "supplier"): role_number,
        "company_code": company.get("CompanyCode") if company else None,
        "payment_methods": _text(company.get("PaymentMethodsList")) if company else None,
        "mobile_phone": mobile,
    }
    if area is not None:
        extra["sales_area"] = "/".join(
            str(area.get(k) or "") for k in ("SalesOrganization", "DistributionChannel", "Division")
        )
        extra["incoterms"] = _text(area.get("IncotermsClassification"))
        extra["price_group"] = _text(area.get("CustomerPriceGroup"))
    other_role = "to_Supplier" if is_customer else "to_Customer"
    return PartyRecord(
        tenant=rules.tenant,
        kind=kind,
        external_id=str(bp["BusinessPartner"]),
        name=name,
        status=status,
        currency=_text(area.get("Currency")) if area else None,
        terms=terms,
        tax_id=_text(role.get("VATRegistration")),
        party_class=_text(role.get("CustomerAccountGroup" if is_customer else "SupplierAccountGroup")),
        email=email,
        phone=phone,
        contacts=(Contact(role="main", name=name, email=email, phone=phone),) if email or phone else (),
        addresses=addresses,
        attributes=blocks,
        extra={k: v for k, v in extra.items() if v is not None},
        source_modified_at=modified,
        raw=jsonable({k: v for k, v in bp.items() if k != other_role}),
    )


def _role(bp: Entity, nav: str, number_field: str) -> Entity | None:
    """The expanded role entity; a role that was not expanded but is numbered gets an empty one."""
    role = bp.get(nav)
    if isinstance(role, dict):
        return role
    if nav not in bp and _text(bp.get(number_field)):
        return {number_field: bp.get(number_field)}
    return None


def map_business_partner(bp: Entity, stream: StreamDef, rules: MappingRules) -> list[PartyRecord]:
    """One party per role; a partner with neither role maps to no party (it is a contact person...)."""
    if not _text(bp.get("BusinessPartner")):
        raise MappingError("business partner without a BusinessPartner number")
    modified = modified_at(bp, stream, rules.time_zone)
    parties = []
    customer = _role(bp, "to_Customer", "Customer")
    if customer is not None:
        parties.append(_party(bp, customer, kind="customer", rules=rules, modified=modified))
    supplier = _role(bp, "to_Supplier", "Supplier")
    if supplier is not None:
        parties.append(_party(bp, supplier, kind="vendor", rules=rules, modified=modified))
    return parties


def _money(value: Any) -> Decimal | None:
    return value if isinstance(value, Decimal) else None


def _order_lines(so: Entity, names: dict[str, str]) -> list[dict[str, str]]:
    """The expanded items as the order's lines, in item order (the shape Acumatica's lines have)."""
    items = sorted(_rows(so.get(names["items"])), key=lambda i: str(i.get("SalesOrderItem")).zfill(6))
    lines = []
    for item in items:
        quantity, amount = _money(item.get("RequestedQuantity")), _money(item.get("NetAmount"))
        line = {
            "line": _text(item.get("SalesOrderItem")),
            "item": _text(item.get(names["product"])),
            "description": _text(item.get("SalesOrderItemText")),
            "quantity": str(quantity) if quantity is not None else None,
            "unit": _text(item.get("RequestedQuantitySAPUnit")),
            "amount": str(amount) if amount is not None else None,
        }
        lines.append({k: v for k, v in line.items() if v is not None})
    return lines


def map_sales_order(so: Entity, stream: StreamDef, rules: MappingRules) -> DocumentRecord:
    """A sales order; its expanded items (``to_Item`` in v2, ``_Item`` in v4) become ``extra.lines``."""
    names = _NAMES[stream.version]
    number = _text(so.get("SalesOrder"))
    if number is None:
        raise MappingError("sales order without a SalesOrder number")
    party = _text(so.get("SoldToParty"))
    if party is None:
        raise MappingError(f"sales order {number} has no SoldToParty")
    process = _text(so.get("OverallSDProcessStatus"))
    rejected = so.get("OverallSDDocumentRejectionSts") == "C"
    status = "rejected" if rejected else _SD_STATUS.get(process or "", process)
    extra = {
        "order_type": _text(so.get("SalesOrderType")),
        "sales_organization": _text(so.get("SalesOrganization")),
        "delivery_status": _text(so.get(names["delivery_status"])),
        "payment_terms": _text(so.get("CustomerPaymentTerms")),
        "requested_delivery_date": so["RequestedDeliveryDate"].isoformat()
        if so.get("RequestedDeliveryDate")
        else None,
        "billing_block": _text(so.get("HeaderBillingBlockReason")),
        "delivery_block": _text(so.get("DeliveryBlockReason")),
        "lines": _order_lines(so, names) or None,
    }
    return DocumentRecord(
        tenant=rules.tenant,
        doc_type="sales_order",
        external_id=number,
        number=number,
        party_kind="customer",
        party_external_id=party,
        status=status,
        currency=_text(so.get("TransactionCurrency")),
        amount=_money(so.get("TotalNetAmount")),
        doc_date=so.get("SalesOrderDate"),
        customer_ref=_text(so.get("PurchaseOrderByCustomer")),
        is_open=not rejected and process != "C",
        extra={k: v for k, v in extra.items() if v is not None},
        source_modified_at=modified_at(so, stream, rules.time_zone),
        raw=jsonable(so),
    )


def _gross(net: Decimal | None, tax: Decimal | None, gross: Decimal | None) -> Decimal | None:
    """``TotalGrossAmount``; else net + tax; never the net alone (that would understate every invoice)."""
    if gross is not None:
        return gross
    return net + tax if net is not None and tax is not None else None


def map_billing_document(bd: Entity, stream: StreamDef, rules: MappingRules) -> DocumentRecord:
    """An invoice (or credit memo by SD category). Amount is gross: ``TotalGrossAmount``, else net
    plus tax (``TaxAmount`` in v2, ``TotalTaxAmount`` in v4); with neither, no amount.

    The billing document carries no due date or open balance (those live in the AR line items), so
    ``balance`` and ``due_date`` stay empty. ``is_open`` means "not cancelled and not cleared"
    (``InvoiceClearingStatus`` C, v2 only); without a clearing status (always in v4) every
    uncancelled invoice counts as open. A payment is posted in FI and may not move the billing
    document's change stamp, so only a full read is sure to see it.
    """
    names = _NAMES[stream.version]
    number = _text(bd.get("BillingDocument"))
    if number is None:
        raise MappingError("billing document without a BillingDocument number")
    party = _text(bd.get("SoldToParty")) or _text(bd.get("PayerParty"))
    if party is None:
        raise MappingError(f"billing document {number} has neither SoldToParty nor PayerParty")
    net, tax = _money(bd.get("TotalNetAmount")), _money(bd.get(names["tax"]))
    gross = _gross(net, tax, _money(bd.get("TotalGrossAmount")))
    cancelled = bool(bd.get("BillingDocumentIsCancelled"))
    clearing_field = _CLEARING_STATUS.get(stream.version)
    clearing = _text(bd.get(clearing_field)) if clearing_field else None
    doc_type: DocType = (
        "credit_memo" if bd.get("SDDocumentCategory") in _CREDIT_MEMO_CATEGORIES else "ar_invoice"
    )
    extra = {
        "billing_type": _text(bd.get("BillingDocumentType")),
        "payer": _text(bd.get("PayerParty")),
        "net_amount": str(net) if net is not None else None,
        "tax_amount": str(tax) if tax is not None else None,
        "payment_terms": _text(bd.get("CustomerPaymentTerms")),
        "posting_status": _text(bd.get("AccountingPostingStatus")),
        "cancelled_document": _text(bd.get("CancelledBillingDocument")),
        # why ``balance`` is None: the context says so instead of "nothing open"
        "balance_unavailable": BILLING_BALANCE_UNAVAILABLE,
    }
    return DocumentRecord(
        tenant=rules.tenant,
        doc_type=doc_type,
        external_id=number,
        number=number,
        party_kind="customer",
        party_external_id=party,
        status="cancelled" if cancelled else _CLEARING.get(clearing or "", "open"),
        currency=_text(bd.get("TransactionCurrency")),
        amount=gross,
        doc_date=bd.get("BillingDocumentDate"),
        customer_ref=_text(bd.get("PurchaseOrderByCustomer")),
        is_open=not cancelled and clearing != "C",
        extra={k: v for k, v in extra.items() if v is not None},
        source_modified_at=modified_at(bd, stream, rules.time_zone),
        raw=jsonable(bd),
    )


_ACCOUNT_KINDS: dict[str, Literal["customer", "vendor"]] = {"D": "customer", "K": "vendor"}


def map_open_item(item: Entity, stream: StreamDef, rules: MappingRules) -> DocumentRecord:
    """An FI line item of a customer (``D``) or supplier (``K``) account: the open amount SAP's
    billing documents lack.

    ``balance`` is what is open from the party's side: receivable positive for a customer (its
    payments and credit memos are credit items, negative), payable positive for a supplier (its
    invoices are credit items, which SAP signs negative), 0 once cleared. ``amount`` is the item's
    amount on the same side. ``number`` is the billing document the item belongs to, else the
    accounting document; SAP's own signed amounts and FI keys are kept in ``extra``.
    """
    key = stream.key_of(item)
    if key is None:
        raise MappingError(f"accounting item without its key ({', '.join(stream.keys)})")
    account = _text(item.get("FinancialAccountType"))
    kind = _ACCOUNT_KINDS.get(account or "")
    if kind is None:
        raise MappingError(f"accounting item {key} is on account type {account!r}, not D or K")
    party_field = "Customer" if kind == "customer" else "Supplier"
    party = _text(item.get(party_field))
    if party is None:
        raise MappingError(f"accounting item {key} on account type {account} names no {party_field}")
    signed = _money(item.get("AmountInTransactionCurrency"))
    if signed is None:
        raise MappingError(f"accounting item {key} has no AmountInTransactionCurrency")
    amount = signed if kind == "customer" else -signed
    cleared = bool(item.get("IsCleared"))
    extra = {
        "company_code": _text(item.get("CompanyCode")),
        "fiscal_year": _text(item.get("FiscalYear")),
        "accounting_document": _text(item.get("AccountingDocument")),
        "accounting_document_item": _text(item.get("AccountingDocumentItem")),
        "accounting_document_type": _text(item.get("AccountingDocumentType")),
        "debit_credit": _text(item.get("DebitCreditCode")),
        "billing_document": _text(item.get("BillingDocument")),
        "sales_document": _text(item.get("SalesDocument")),
        "invoice_reference": _text(item.get("InvoiceReference")),
        "posting_date": _iso(item.get("PostingDate")),
        "clearing_date": _iso(item.get("ClearingDate")),
        "clearing_document": _text(item.get("ClearingAccountingDocument")),
        "payment_terms": _text(item.get("PaymentTerms")),
        "payment_block": _text(item.get("PaymentBlockingReason")),
        "dunning_level": _text(item.get("DunningLevel")),
        "last_dunning_date": _iso(item.get("LastDunningDate")),
        "sap_amount": str(signed),
        "company_code_amount": _decimal_text(item.get("AmountInCompanyCodeCurrency")),
        "company_code_currency": _text(item.get("CompanyCodeCurrency")),
    }
    return DocumentRecord(
        tenant=rules.tenant,
        doc_type="open_item",
        external_id=key,
        number=_text(item.get("BillingDocument")) or _text(item.get("AccountingDocument")) or key,
        party_kind=kind,
        party_external_id=party,
        status="cleared" if cleared else "open",
        currency=_text(item.get("TransactionCurrency")),
        amount=amount,
        balance=Decimal(0) if cleared else amount,
        doc_date=item.get("DocumentDate") or item.get("PostingDate"),
        due_date=item.get("NetDueDate"),
        customer_ref=_text(item.get("DocumentReferenceID")),
        is_open=not cleared,
        extra={k: v for k, v in extra.items() if v is not None},
        source_modified_at=modified_at(item, stream, rules.time_zone),
        raw=jsonable(item),
    )


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, (date, datetime)) else None


def _decimal_text(value: Any) -> str | None:
    return str(value) if isinstance(value, Decimal) else None
