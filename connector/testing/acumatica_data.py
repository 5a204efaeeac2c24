"""Seeded, realistic records for the fake Acumatica (customers, vendors, AR/AP documents, cases).

Documents and cases refer to generated customers and vendors; cases quote real document
numbers and closed ones end with a "Resolution:" paragraph. About one record in 250 shares its
modification time with the one before it, like a bulk update would. Values are plain Python
(floats for money, aware UTC datetimes, dates); the renderer wraps them for the wire.

Shaped like 103 recorded real customers: TaxZone is empty on about 95% of them and ParentRecord
on all; one customer of a large enough tenant has the CustomerID ``<NEW>`` (the numbering
placeholder, saved as the id), as real tenants show.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from connector.testing.datagen import DataGen

GeneratedRow = tuple[dict[str, Any], str, dict[str, Any] | None]

_TERMS = (("30D", 30), ("15D", 15), ("60D", 60), ("COD", 0), ("EOM", 30), ("NET45", 45))
_CURRENCIES = (("USD", 80.0), ("EUR", 8.0), ("CAD", 6.0), ("GBP", 6.0))
_CUSTOMER_STATUS = (
    ("Active", 85.0),
    ("On Hold", 4.0),
    ("Credit Hold", 4.0),
    ("Inactive", 5.0),
    ("One-Time", 2.0),
)
_CUSTOMER_CLASS = ("DEFAULT", "LOCAL", "INTL", "WHOLESALE", "RETAIL")
_TAX_ZONES = ("CA", "NY", "TX", "WA", "IL", "EXEMPT", "EU", "CANADA")
_TAX_ZONE_SHARE = 0.05  # real: TaxZone set on 5 of 103 customers
#: The CustomerID real tenants show for a record saved with the numbering placeholder.
PLACEHOLDER_ID = "<NEW>"
_CREDIT_LIMITS = (0.0, 5000.0, 10000.0, 25000.0, 50000.0, 100000.0, 250000.0)
_JOB_TITLES = ("Accounts Payable", "Purchasing Manager", "Controller", "Owner", "Office Manager", "Buyer")
_INVOICE_TYPES = (("Invoice", 88.0), ("Credit Memo", 8.0), ("Debit Memo", 4.0))
_BILL_TYPES = (("Bill", 90.0), ("Debit Adj.", 5.0), ("Credit Adj.", 3.0), ("Prepayment", 2.0))
_ORDER_STATUS = (
    ("Completed", 50.0),
    ("Open", 25.0),
    ("Shipping", 5.0),
    ("Back Order", 5.0),
    ("On Hold", 5.0),
    ("Credit Hold", 3.0),
    ("Cancelled", 7.0),
)
_ITEMS = (
    ("AALEGO500", "Lego 500 piece set", 49.0),
    ("CONGRILL", "Contact grill", 120.0),
    ("ELECTRICAL", "Electrical installation hours", 85.0),
    ("COFFEEMKR", "Coffee maker, commercial", 640.0),
    ("BARSTOOL", "Bar stool, oak", 89.5),
    ("PAPER500", "Copy paper, 500 sheets", 6.25),
    ("TONER-BK", "Toner cartridge, black", 72.0),
    ("SHELF-STL", "Steel shelving unit", 215.0),
    ("GLOVES-NT", "Nitrile gloves, box of 100", 11.4),
    ("CONSULT", "Consulting hours", 150.0),
)
_VENDOR_CLASS = ("DEFAULT", "SERVICES", "MATERIALS", "FREIGHT", "UTILITIES")
_PAYMENT_METHODS = ("CHECK", "ACH", "WIRE", "CREDITCARD")
_CASE_STATUS = (
    ("Closed", 50.0),
    ("Resolved", 10.0),
    ("Open", 22.0),
    ("New", 10.0),
    ("Pending Customer", 8.0),
)
_ISSUES = (
    (
        "BILLING",
        "Invoice {doc} total does not match the PO",
        "The customer says invoice {doc} was billed at list price instead of the contract price.",
        "Issued a credit memo for the price difference on {doc}; the customer confirmed the new balance.",
    ),
    (
        "BILLING",
        "Duplicate charge on invoice {doc}",
        "The customer was charged twice for invoice {doc} on their card.",
        "Voided the duplicate payment and refunded it to the card; {doc} is settled once.",
    ),
    (
        "BILLING",
        "PO number missing on invoice {doc}",
        "Their accounts payable rejects invoices without a purchase order number; {doc} had none.",
        "Reissued {doc} with the PO number. The customer requires a PO number on every invoice.",
    ),
    (
        "SHIPPING",
        "Late delivery for the order billed on {doc}",
        "Part of the goods billed on {doc} arrived two weeks late.",
        "Expedited the back-ordered items at no charge and noted the delay on {doc}.",
    ),
    (
        "CREDIT",
        "Credit limit increase request",
        "The customer asks for a higher credit limit ahead of the season; last invoice {doc}.",
        "Raised the credit limit after reviewing twelve months of on-time payments.",
    ),
    (
        "BILLING",
        "Payment applied to the wrong invoice ({doc})",
        "A payment meant for {doc} was applied to an older invoice.",
        "Reapplied the payment to {doc} and sent an updated statement.",
    ),
    (
        "SUPPORT",
        "Tax exemption certificate on file",
        "The customer sent a new tax exemption certificate and asks us to stop charging sales tax.",
        "Attached the certificate and set the tax zone to EXEMPT; {doc} was re-billed without tax.",
    ),
    (
        "SUPPORT",
        "Update the billing contact",
        "Invoices such as {doc} should go to the new accounts payable mailbox.",
        "Updated the billing contact and e-mail; future invoices go to the AP mailbox.",
    ),
)


def _attributes(po_required: str, delivery_window: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"AttributeID": "POREQ", "AttributeDescription": "PO Required", "Value": po_required}
    ]
    if delivery_window:
        rows.append(
            {"AttributeID": "DELIVWIN", "AttributeDescription": "Delivery window", "Value": "08:00-12:00"}
        )
    return rows


# Shared by every customer with the same answers: nested values are replaced, never mutated.
_CUSTOMER_ATTRIBUTES = {
    (po, window): _attributes(po, window) for po in ("Y", "N") for window in (False, True)
}


@dataclass(frozen=True, slots=True)
class PartyRef:
    key: str
    currency: str
    terms: str
    due_days: int


def _money(gen: DataGen, low: float, high: float) -> float:
    factor: float = (high / low) ** gen.random()
    return round(low * factor, 2)


class Stamper:
    """Modification times in a window; every ``share_every``-th one repeats its predecessor."""

    def __init__(self, gen: DataGen, start: datetime, end: datetime, share_every: int = 250) -> None:
        self.gen, self.start, self.end, self.share_every = gen, start, end, share_every
        self.count = 0
        self.last: datetime | None = None

    def next(self) -> datetime:
        self.count += 1
        if self.last is not None and self.count % self.share_every == 0:
            return self.last
        self.last = self.gen.timestamp(self.start, self.end)
        return self.last


def _contact(gen: DataGen, company: str, domain: str, first: str, last: str) -> dict[str, Any]:
    place = gen.place()
    return {
        "DisplayName": company,
        "Attention": f"{first} {last}",
        "Email": gen.email(first, last, domain),
        "Phone1": gen.phone(),
        "Address": {
            "AddressLine1": place.line1,
            "AddressLine2": place.line2,
            "City": place.city,
            "State": place.region,
            "PostalCode": place.postal_code,
            "Country": place.country,
        },
    }


def _sparse_pick(gen: DataGen, options: tuple[str, ...], share: float) -> str | None:
    """One of ``options`` on ``share`` of the draws, else None; one random draw, as ``pick`` takes
    (so everything drawn after it stays as it was)."""
    scaled = gen.random() * len(options)
    index = int(scaled)
    return options[index] if scaled - index < share else None


def customers(
    gen: DataGen,
    count: int,
    stamps: Stamper,
    refs: list[PartyRef],
    placeholder_at: int | None = None,
) -> Iterator[GeneratedRow]:
    """``placeholder_at``: the 1-based position of the customer whose id is ``<NEW>`` (or none)."""
    contact_id = 100
    for position in range(1, count + 1):
        name = gen.company_name()
        key = gen.code(name)
        if position == placeholder_at:
            key = PLACEHOLDER_ID
        domain = gen.domain(name)
        first, last = gen.person()
        main = _contact(gen, name, domain, first, last)
        billing = main if gen.chance(0.8) else _contact(gen, name, domain, *gen.person())
        people = []  # CustomerContact lines: ContactID and the Contact, whose address is the account's
        for _ in range(1 + int(gen.chance(0.4))):
            contact_id += 1
            p_first, p_last = gen.person()
            person = {
                "ContactID": contact_id,
                "DisplayName": f"{p_first} {p_last}",
                "Email": gen.email(p_first, p_last, domain),
                "Phone1": gen.phone(),
                "JobTitle": gen.pick(_JOB_TITLES),
                "Address": main["Address"],
            }
            people.append({"ContactID": contact_id, "Contact": person})
        currency = gen.weighted(_CURRENCIES)
        terms, due_days = gen.pick(_TERMS)
        credit_limit = gen.pick(_CREDIT_LIMITS)
        open_orders = round(credit_limit * gen.random() * 0.5, 2)
        po_required = "Y" if gen.chance(0.3) else "N"
        attributes = _CUSTOMER_ATTRIBUTES[(po_required, gen.chance(0.15))]
        modified = stamps.next()
        refs.append(PartyRef(key, currency, terms, due_days))
        values = {
            "CustomerID": key,
            "CustomerName": name,
            "Status": gen.weighted(_CUSTOMER_STATUS),
            "CustomerClass": gen.pick(_CUSTOMER_CLASS),
            "CurrencyID": currency,
            "CreditLimit": credit_limit,
            "Terms": terms,
            "TaxZone": _sparse_pick(gen, _TAX_ZONES, _TAX_ZONE_SHARE),
            "TaxRegistrationID": f"{gen.digits(2)}-{gen.digits(7)}" if gen.chance(0.7) else None,
            "TaxExemptionNumber": f"EX{gen.digits(6)}" if gen.chance(0.1) else None,
            "PriceClassID": gen.pick(("RETAIL", "WHOLESALE", None)),
            "ParentRecord": None,
            "Email": main["Email"],
            "CreatedDateTime": modified - timedelta(days=gen.below(900)),
            "LastModifiedDateTime": modified,
            "MainContact": main,
            "BillingContact": billing,
            "PrimaryContact": people[0]["Contact"],
            "CreditVerificationRules": {
                "CreditVerification": "Limit" if credit_limit else "Disabled",
                "CreditLimit": credit_limit,
                "RemainingCreditLimit": round(credit_limit - open_orders, 2),
                "OpenOrdersBalance": open_orders,
                "CreditDaysPastDue": gen.pick((0, 0, 0, 15, 30)),
            },
            "Contacts": people,
            "Attributes": attributes,
        }
        custom = {"Document.AttrPOREQ": po_required, "Document.UsrAccountManager": " ".join(gen.person())}
        yield values, gen.guid(), custom


def vendors(gen: DataGen, count: int, stamps: Stamper, refs: list[PartyRef]) -> Iterator[GeneratedRow]:
    for _ in range(count):
        name = gen.company_name()
        key = "V" + gen.code(name, 9)
        domain = gen.domain(name)
        main = _contact(gen, name, domain, *gen.person())
        remittance = main if gen.chance(0.7) else _contact(gen, name, domain, *gen.person())
        currency = gen.weighted(_CURRENCIES)
        terms, due_days = gen.pick(_TERMS)
        modified = stamps.next()
        refs.append(PartyRef(key, currency, terms, due_days))
        values = {
            "VendorID": key,
            "VendorName": name,
            "LegalName": name.upper(),
            "Status": gen.weighted((("Active", 92.0), ("On Hold", 4.0), ("Inactive", 4.0))),
            "VendorClass": gen.pick(_VENDOR_CLASS),
            "CurrencyID": currency,
            "Terms": terms,
            "TaxZone": gen.pick(_TAX_ZONES),
            "TaxRegistrationID": f"{gen.digits(2)}-{gen.digits(7)}",
            "PaymentMethod": gen.pick(_PAYMENT_METHODS),
            "CreatedDateTime": modified - timedelta(days=gen.below(900)),
            "LastModifiedDateTime": modified,
            "MainContact": main,
            "RemittanceContact": remittance,
            "Attributes": [],
        }
        yield values, gen.guid(), {"Document.UsrPreferredCarrier": gen.pick(("UPS", "FEDEX", "DHL", None))}


def _document_dates(gen: DataGen, modified: datetime, due_days: int) -> tuple[Any, Any]:
    doc_date = (modified - timedelta(days=gen.below(45))).date()
    return doc_date, doc_date + timedelta(days=due_days)


def invoices(
    gen: DataGen, count: int, stamps: Stamper, customers_: list[PartyRef], numbers: list[tuple[str, str]]
) -> Iterator[GeneratedRow]:
    if count and not customers_:
        raise ValueError("invoices need at least one customer")
    for seq in range(1, count + 1):
        party = gen.pick(customers_)
        doc_type = gen.weighted(_INVOICE_TYPES)
        number = f"AR{seq:06d}"
        modified = stamps.next()
        doc_date, due = _document_dates(gen, modified, party.due_days)
        amount = _money(gen, 25.0, 60000.0)
        status = gen.weighted(
            (("Closed", 58.0), ("Open", 32.0), ("On Hold", 3.0), ("Balanced", 3.0), ("Voided", 4.0))
        )
        balance = (
            0.0 if status in ("Closed", "Voided") else (amount if gen.chance(0.8) else round(amount / 2, 2))
        )
        numbers.append((party.key, number))
        values = {
            "Type": doc_type,
            "ReferenceNbr": number,
            "Customer": party.key,
            "CustomerOrder": f"PO-{gen.digits(6)}" if gen.chance(0.5) else None,
            "Date": doc_date,
            "DueDate": due,
            "Status": status,
            "Hold": status == "On Hold",
            "Amount": amount,
            "Balance": balance,
            "Terms": party.terms,
            "Description": gen.pick(
                (
                    "Goods shipped",
                    "Monthly service",
                    "Consulting services",
                    "Replacement parts",
                    "Freight and handling",
                )
            ),
            "CreatedDateTime": datetime.combine(doc_date, modified.timetz()),
            "LastModifiedDateTime": modified,
        }
        # Invoice has no currency field in any endpoint version: the DAC's CuryID, through $custom
        yield values, gen.guid(), {"Document.CuryID": party.currency}


def sales_orders(
    gen: DataGen, count: int, stamps: Stamper, customers_: list[PartyRef]
) -> Iterator[GeneratedRow]:
    if count and not customers_:
        raise ValueError("sales orders need at least one customer")
    for seq in range(1, count + 1):
        party = gen.pick(customers_)
        modified = stamps.next()
        doc_date, requested = _document_dates(gen, modified, 14)
        lines = []
        total_quantity = 0.0
        total = 0.0
        for line in range(1, 2 + gen.below(4)):
            item, description, price = gen.pick(_ITEMS)
            quantity = float(1 + gen.below(39))
            total_quantity += quantity
            total += round(quantity * price, 2)
            lines.append(
                {
                    "LineNbr": line,
                    "InventoryID": item,
                    "LineDescription": description,
                    "OrderQty": quantity,
                    "UnitPrice": price,
                    "Amount": round(quantity * price, 2),
                }
            )
        status = gen.weighted(_ORDER_STATUS)
        values = {
            "OrderType": "SO" if gen.chance(0.92) else "QT",
            "OrderNbr": f"{seq:06d}",
            "CustomerID": party.key,
            "CustomerOrder": f"PO-{gen.digits(6)}" if gen.chance(0.6) else None,
            "Date": doc_date,
            "RequestedOn": requested,
            "Status": status,
            "Hold": status == "On Hold",
            "CreditHold": status == "Credit Hold",
            "CurrencyID": party.currency,
            "OrderedQty": total_quantity,
            "OrderTotal": round(total, 2),
            "Description": None,
            "LastModified": modified,
            "Details": lines,
        }
        yield values, gen.guid(), None


def bills(gen: DataGen, count: int, stamps: Stamper, vendors_: list[PartyRef]) -> Iterator[GeneratedRow]:
    if count and not vendors_:
        raise ValueError("bills need at least one vendor")
    for seq in range(1, count + 1):
        party = gen.pick(vendors_)
        modified = stamps.next()
        doc_date, due = _document_dates(gen, modified, party.due_days)
        amount = _money(gen, 40.0, 90000.0)
        status = gen.weighted((("Closed", 60.0), ("Open", 30.0), ("On Hold", 4.0), ("Balanced", 6.0)))
        values = {
            "Type": gen.weighted(_BILL_TYPES),
            "ReferenceNbr": f"{seq:06d}",
            "Vendor": party.key,
            "VendorRef": f"INV-{gen.digits(5)}",
            "Date": doc_date,
            "DueDate": due,
            "Status": status,
            "Hold": status == "On Hold",
            "Amount": amount,
            "Balance": 0.0 if status == "Closed" else amount,
            "CurrencyID": party.currency,
            "Terms": party.terms,
            "Description": gen.pick(
                ("Raw materials", "Freight", "Office supplies", "Utilities", "Contract labour")
            ),
            "LastModifiedDateTime": modified,
        }
        yield values, gen.guid(), None


def cases(
    gen: DataGen,
    count: int,
    stamps: Stamper,
    customers_: list[PartyRef],
    invoice_numbers: list[tuple[str, str]],
) -> Iterator[GeneratedRow]:
    if count and not customers_:
        raise ValueError("cases need at least one customer")
    for seq in range(1, count + 1):
        if invoice_numbers:
            customer, doc = gen.pick(invoice_numbers)
        else:
            customer, doc = gen.pick(customers_).key, "the last invoice"
        case_class, subject, problem, resolution = gen.pick(_ISSUES)
        status = gen.weighted(_CASE_STATUS)
        closed = status in ("Closed", "Resolved")
        modified = stamps.next()
        reported = modified - timedelta(days=gen.below(20), minutes=gen.below(600))
        description = f"<p>{problem.format(doc=doc)}</p>"
        if closed:
            description += f"<p>Resolution: {resolution.format(doc=doc)}</p>"
        first, last = gen.person()
        values = {
            "CaseID": f"{seq:06d}",
            "Subject": subject.format(doc=doc),
            "Status": status,
            "Reason": ("Resolved" if status == "Resolved" else "Complete") if closed else None,
            "Priority": gen.pick(("Low", "Medium", "Medium", "High")),
            "Severity": gen.pick(("Low", "Medium", "High", "Urgent")),
            "ClassID": case_class,
            "BusinessAccount": customer,
            "ContactID": 101 + gen.below(999),
            "Owner": f"{first} {last}",
            "DateReported": reported,
            "LastActivityDate": modified,
            "ClosingDate": modified if closed else None,
            "Description": description,
            # a field from 26.200.001 on (older endpoints send the resolution in the description only)
            "ClosureNotes": resolution.format(doc=doc) if closed else None,
            "LastModifiedDateTime": modified,
        }
        yield values, gen.guid(), None
