"""Seeded, realistic data for the fake SAP: business partners with roles, sales orders, invoices.

Names, places, e-mails, phones and amounts come from the shared :class:`DataGen`. Rows are plain
dicts of typed values (``date``, aware ``datetime``, ``time``, ``Decimal``, ``bool``, ``str``,
``None``); the fake encodes them per OData version when it answers. Generation is linear
and cheap (100,000 partners and 200,000 documents in a few seconds), and the same seed always gives
the same data. Business partner, customer and supplier numbers coincide, as with S/4HANA's default
harmonised number ranges.
"""

from __future__ import annotations

import gc
import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from connector.testing.datagen import DataGen

Row = dict[str, Any]

_TERMS = ("0001", "0002", "NT30", "NT45", "NT60", "Z014")
_SALES_AREAS = (("1010", "10", "00", "EUR"), ("1710", "10", "00", "USD"))
_PO_PREFIXES = ("PO-", "4500", "ORD-", "")
EPOCH_START = datetime(2019, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class DataSpec:
    """How much to generate. ``both`` partners carry a customer and a supplier role; ``roleless``
    partners neither (contacts, prospects: real systems have them, SAP's own mock data only them),
    by default one per 25 customers."""

    customers: int = 50
    suppliers: int = 20
    both: int | None = None
    sales_orders: int = 100
    billing_documents: int | None = None
    roleless: int | None = None
    now: datetime = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
    seed: int = 0
    time_zone: str = "UTC"  # the SAP system's zone: local dates and times are written in it

    @property
    def both_count(self) -> int:
        return min(self.customers, self.suppliers) // 5 if self.both is None else self.both

    @property
    def roleless_count(self) -> int:
        return self.customers // 25 if self.roleless is None else self.roleless

    @property
    def billing_count(self) -> int:
        return self.sales_orders // 2 if self.billing_documents is None else self.billing_documents


@dataclass(slots=True)
class SAPData:
    """Every table of the fake, keyed for direct lookup."""

    partners: dict[str, Row] = field(default_factory=dict)
    addresses: dict[str, list[Row]] = field(default_factory=dict)  # by BusinessPartner
    emails: dict[str, list[Row]] = field(default_factory=dict)  # by AddressID
    phones: dict[str, list[Row]] = field(default_factory=dict)  # by AddressID
    mobiles: dict[str, list[Row]] = field(default_factory=dict)  # by AddressID (to_MobilePhoneNumber)
    customers: dict[str, Row] = field(default_factory=dict)
    customer_companies: dict[str, list[Row]] = field(default_factory=dict)  # by Customer
    customer_sales_areas: dict[str, list[Row]] = field(default_factory=dict)  # by Customer
    suppliers: dict[str, Row] = field(default_factory=dict)
    supplier_companies: dict[str, list[Row]] = field(default_factory=dict)  # by Supplier
    sales_orders: dict[str, Row] = field(default_factory=dict)
    billing_documents: dict[str, Row] = field(default_factory=dict)
    open_items: dict[str, Row] = field(default_factory=dict)  # by "CompanyCode/FiscalYear/Document/Item"
    next_partner: int = 10_000_000
    next_address: int = 100_000
    next_sales_order: int = 10_000_000
    next_billing_document: int = 90_000_000


def stamp(moment: datetime, zone: tzinfo = UTC) -> tuple[date, time]:
    """A moment as SAP's local (``zone``) day-granular date plus a whole-second time."""
    local = moment.astimezone(zone)
    return local.date(), local.time().replace(microsecond=0)


class Generator:
    """Creates rows; also used by the fake's ``add_*`` helpers so added rows look generated."""

    def __init__(self, data: SAPData, spec: DataSpec) -> None:
        self.data = data
        self.spec = spec
        self.zone: tzinfo = UTC if spec.time_zone.upper() == "UTC" else ZoneInfo(spec.time_zone)
        self.gen = DataGen(spec.seed)
        self.rng = self.gen.rng
        self._random = self.gen.random
        self._pick = self.gen.pick
        self._span = max(1, int((spec.now - EPOCH_START).total_seconds()))
        # Mobile numbers draw from their own stream, so adding them changed none of the other data.
        self._mobile_rng = random.Random(spec.seed * 7907 + 3)

    # Helpers ---------------------------------------------------------------------------------
    def _int(self, low: int, high: int | None = None) -> int:
        """A value in ``[low, high)`` (or ``[0, low)``), like ``randrange`` but cheaper."""
        if high is None:
            low, high = 0, low
        return low + int(self._random() * (high - low))

    def _moment(self, after: datetime = EPOCH_START) -> datetime:
        """A whole-second moment in ``[after, now)``."""
        span = self._span if after is EPOCH_START else max(1, int((self.spec.now - after).total_seconds()))
        return after + timedelta(seconds=int(self._random() * span))

    def _money(self, low: int, high: int) -> Decimal:
        return self.gen.amount(low, high)

    # Business partners -----------------------------------------------------------------------
    def generate(self) -> None:
        spec = self.spec
        only_customers = spec.customers - spec.both_count
        roles = [(True, False)] * only_customers + [(True, True)] * spec.both_count
        roles += [(False, True)] * (spec.suppliers - spec.both_count)
        for is_customer, is_supplier in roles:
            created = self._moment()
            changed = None if self.rng.random() < 0.25 else self._moment(created)
            self.partner(customer=is_customer, supplier=is_supplier, created=created, changed=changed)
        customer_ids = list(self.data.customers)
        for _ in range(spec.sales_orders if customer_ids else 0):
            self.sales_order(self._pick(customer_ids))
        orders = list(self.data.sales_orders.values())
        for _ in range(spec.billing_count if orders else 0):
            self.billing_document(self._pick(orders))
        for _ in range(spec.roleless_count):  # drawn last: the data before them stays as it was
            created = self._moment()
            self.partner(customer=False, supplier=False, created=created, changed=None)

    def partner(
        self,
        *,
        customer: bool,
        supplier: bool,
        created: datetime,
        changed: datetime | None,
        overrides: Row | None = None,
    ) -> str:
        rng, data = self.rng, self.data
        number = str(data.next_partner)
        data.next_partner += 1
        is_person = rng.random() < 0.1
        first, last = self.gen.person()
        org = self.gen.company_name()
        name = f"{first} {last}" if is_person else org
        created_on, created_at = stamp(created, self.zone)
        changed_on, changed_at = stamp(changed, self.zone) if changed else (None, None)
        data.partners[number] = {
            "BusinessPartner": number,
            "Customer": number if customer else "",
            "Supplier": number if supplier else "",
            "BusinessPartnerCategory": "1" if is_person else "2",
            "BusinessPartnerGrouping": "BP02",
            "BusinessPartnerFullName": name,
            "BusinessPartnerName": name,
            "OrganizationBPName1": "" if is_person else org,
            "OrganizationBPName2": "",
            "FirstName": first if is_person else "",
            "LastName": last if is_person else "",
            "SearchTerm1": name[:20].upper(),
            "BusinessPartnerIsBlocked": rng.random() < 0.02,
            "IsMarkedForArchiving": False,
            "CreationDate": created_on,
            "CreationTime": created_at,
            "LastChangeDate": changed_on,
            "LastChangeTime": changed_at,
            **(overrides or {}),
        }
        self._addresses(number, (first, last), org, created)
        vat = f"DE{self._int(10**8, 10**9)}"
        if customer:
            self._customer(number, name, vat, created_on)
        if supplier:
            self._supplier(number, name, vat, created_on)
        return number

    def _addresses(self, partner: str, person: tuple[str, str], org: str, created: datetime) -> None:
        rng, data = self.rng, self.data
        rows = []
        for _ in range(1 if rng.random() < 0.85 else 2):
            address_id = str(data.next_address)
            data.next_address += 1
            place = self.gen.place()
            house, _, street = place.line1.partition(" ")
            rows.append(
                {
                    "BusinessPartner": partner,
                    "AddressID": address_id,
                    "StreetName": street,
                    "HouseNumber": house,
                    "AdditionalStreetPrefixName": place.line2 or "",
                    "CityName": place.city,
                    "Region": place.region or "",
                    "PostalCode": place.postal_code,
                    "Country": place.country,
                    "ValidityStartDate": created.replace(microsecond=0),
                    "ValidityEndDate": datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
                }
            )
            domain = self.gen.domain(org)
            boxes = (self.gen.email(*person, domain), f"info@{domain}")
            data.emails[address_id] = [
                {
                    "AddressID": address_id,
                    "Person": "",
                    "OrdinalNumber": str(n),
                    "IsDefaultEmailAddress": n == 1,
                    "EmailAddress": email,
                }
                for n, email in enumerate(boxes[: self._int(0, 3)], start=1)
            ]
            data.phones[address_id] = (
                [
                    {
                        "AddressID": address_id,
                        "Person": "",
                        "OrdinalNumber": "1",
                        "DestinationLocationCountry": place.country,
                        "IsDefaultPhoneNumber": True,
                        "PhoneNumber": self.gen.phone(),
                        "PhoneNumberExtension": "",
                        "PhoneNumberType": "1",
                    }
                ]
                if rng.random() < 0.8
                else []
            )
            data.mobiles[address_id] = self._mobiles(address_id, place.country)
        data.addresses[partner] = rows

    def _mobiles(self, address_id: str, country: str) -> list[Row]:
        """A mobile number on about a third of the addresses (SAP keeps them apart: type 3)."""
        draw = self._mobile_rng
        if draw.random() >= 0.35:
            return []
        number = f"+49 15{draw.randrange(10, 80)} {draw.randrange(1_000_000, 10_000_000)}"
        return [
            {
                "AddressID": address_id,
                "Person": "",
                "OrdinalNumber": "1",
                "DestinationLocationCountry": country,
                "IsDefaultPhoneNumber": True,
                "PhoneNumber": number,
                "PhoneNumberExtension": "",
                "PhoneNumberType": "3",
            }
        ]

    def _customer(self, number: str, name: str, vat: str, created_on: date) -> None:
        rng, data = self.rng, self.data
        data.customers[number] = {
            "Customer": number,
            "CustomerName": name[:35],
            "CustomerFullName": name,
            "CustomerAccountGroup": "CUST",
            "CustomerClassification": self._pick(("A", "B", "C", "")),
            "OrderIsBlockedForCustomer": "01" if rng.random() < 0.05 else "",
            "DeliveryIsBlocked": "",
            "BillingIsBlockedForCustomer": "",
            "PostingIsBlocked": False,
            "DeletionIndicator": rng.random() < 0.02,
            "VATRegistration": vat,
            "CreationDate": created_on,
        }
        company_terms = self._pick(_TERMS)
        codes = ["1010"] + (["1710"] if rng.random() < 0.3 else [])
        data.customer_companies[number] = [
            {
                "Customer": number,
                "CompanyCode": code,
                "PaymentTerms": company_terms,
                "PaymentMethodsList": "T",
                "PaymentBlockingReason": "",
                "ReconciliationAccount": "12100000",
                "AccountingClerk": "",
                "PhysicalInventoryBlockInd": False,
                "DeletionIndicator": False,
            }
            for code in codes
        ]
        areas = _SALES_AREAS[: 1 if rng.random() < 0.8 else 2]
        data.customer_sales_areas[number] = [
            {
                "Customer": number,
                "SalesOrganization": org,
                "DistributionChannel": channel,
                "Division": division,
                "Currency": currency,
                "CustomerPaymentTerms": company_terms if rng.random() < 0.7 else self._pick(_TERMS),
                "IncotermsClassification": self._pick(("EXW", "FCA", "DAP", "DDP")),
                "IncotermsLocation1": "",
                "CustomerPriceGroup": self._pick(("01", "02", "")),
                "CustomerAccountAssignmentGroup": "01",
                "DeletionIndicator": False,
            }
            for org, channel, division, currency in areas
        ]

    def _supplier(self, number: str, name: str, vat: str, created_on: date) -> None:
        rng, data = self.rng, self.data
        data.suppliers[number] = {
            "Supplier": number,
            "SupplierName": name[:35],
            "SupplierFullName": name,
            "SupplierAccountGroup": "SUPL",
            "PostingIsBlocked": False,
            "PurchasingIsBlocked": rng.random() < 0.03,
            "PaymentIsBlockedForSupplier": False,
            "DeletionIndicator": False,
            "VATRegistration": vat,
            "CreationDate": created_on,
        }
        data.supplier_companies[number] = [
            {
                "Supplier": number,
                "CompanyCode": "1010",
                "PaymentTerms": self._pick(_TERMS),
                "PaymentMethodsList": "T",
                "PaymentBlockingReason": "",
                "ReconciliationAccount": "21100000",
                "SupplierIsBlockedForPosting": False,
                "DeletionIndicator": False,
            }
        ]

    # Documents ---------------------------------------------------------------------------------
    def sales_order(
        self, customer: str, *, created: datetime | None = None, overrides: Row | None = None
    ) -> str:
        rng, data = self.rng, self.data
        number = str(data.next_sales_order)
        data.next_sales_order += 1
        created = created or self._moment()
        changed = self._moment(created) if rng.random() < 0.6 else created
        areas = data.customer_sales_areas.get(customer) or [{"SalesOrganization": "1010", "Currency": "EUR"}]
        area = areas[0]
        status = self._pick("AAABBCCCCC")
        data.sales_orders[number] = {
            "SalesOrder": number,
            "SalesOrderType": "OR",
            "SalesOrganization": area["SalesOrganization"],
            "DistributionChannel": "10",
            "OrganizationDivision": "00",
            "SoldToParty": customer,
            "SalesOrderDate": created.astimezone(self.zone).date(),
            "CreationDate": created.astimezone(self.zone).date(),
            "LastChangeDate": changed.astimezone(self.zone).date(),
            "LastChangeDateTime": changed.replace(microsecond=(changed.microsecond // 1000) * 1000),
            "PurchaseOrderByCustomer": f"{self._pick(_PO_PREFIXES)}{self._int(10**5, 10**6)}",
            "TotalNetAmount": self._money(50, 250_000),
            "TransactionCurrency": area.get("Currency", "EUR"),
            "CustomerPaymentTerms": self._pick(_TERMS),
            "RequestedDeliveryDate": created.date() + timedelta(days=self._int(3, 40)),
            "OverallSDProcessStatus": status,
            "OverallTotalDeliveryStatus": status,  # v2 only
            "OverallDeliveryStatus": status,
            "OverallSDDocumentRejectionSts": "C" if rng.random() < 0.02 else "A",
            "HeaderBillingBlockReason": "",
            "DeliveryBlockReason": "",
            **(overrides or {}),
        }
        return number

    def _clearing(self, invoiced: datetime) -> str:
        """Most invoices older than 45 days are paid (C); recent ones open (A), some partly (B)."""
        draw = self._random()
        if self.spec.now - invoiced > timedelta(days=45):
            return "C" if draw < 0.9 else "A"
        return "B" if draw < 0.1 else "A"

    def billing_document(
        self, order: Row, *, created: datetime | None = None, overrides: Row | None = None
    ) -> str:
        rng, data = self.rng, self.data
        number = str(data.next_billing_document)
        data.next_billing_document += 1
        created = created or order["LastChangeDateTime"] + timedelta(days=self._int(0, 20))
        created = min(created, self.spec.now)
        changed = created + timedelta(minutes=self._int(0, 600))
        net: Decimal = order["TotalNetAmount"] or Decimal(0)
        tax = (net * Decimal("0.19")).quantize(Decimal("0.01"))
        created_on, created_at = stamp(created, self.zone)
        data.billing_documents[number] = {
            "BillingDocument": number,
            "BillingDocumentType": "F2",
            "SDDocumentCategory": "M",
            "SalesOrganization": order["SalesOrganization"],
            "DistributionChannel": "10",
            "Division": "00",
            "BillingDocumentDate": created_on,
            "CreationDate": created_on,
            "CreationTime": created_at,
            "LastChangeDate": changed.astimezone(self.zone).date(),
            "LastChangeDateTime": changed.replace(microsecond=0),
            "SoldToParty": order["SoldToParty"],
            "PayerParty": order["SoldToParty"],
            "PurchaseOrderByCustomer": order["PurchaseOrderByCustomer"],
            "TotalNetAmount": net,
            "TaxAmount": tax,  # v2's name
            "TotalTaxAmount": tax,  # v4's name
            "TotalGrossAmount": net + tax,
            "TransactionCurrency": order["TransactionCurrency"],
            "CustomerPaymentTerms": order["CustomerPaymentTerms"],
            "OverallBillingStatus": "C",
            "AccountingPostingStatus": "C",
            "BillingDocumentIsCancelled": rng.random() < 0.01,
            "CancelledBillingDocument": "",
            "InvoiceClearingStatus": self._clearing(created),
            **(overrides or {}),
        }
        return number


def sales_order_items(order: Row) -> list[Row]:
    """Items derived from the order on demand (deterministic), so 200,000 orders cost no item rows."""
    number = order["SalesOrder"]
    count = 1 + int(number) % 3
    total = order["TotalNetAmount"] if isinstance(order["TotalNetAmount"], Decimal) else Decimal(0)
    share = (total / count).quantize(Decimal("0.01"))
    rows = []
    for n in range(1, count + 1):
        amount = share if n < count else total - share * (count - 1)
        product = f"TG{(int(number) + n) % 30:02d}"
        rows.append(
            {
                "SalesOrder": number,
                "SalesOrderItem": str(n * 10),
                "Material": product,  # v2's name
                "Product": product,  # v4's name
                "SalesOrderItemText": f"Trading good {(int(number) + n) % 30:02d}",
                "RequestedQuantity": Decimal(1 + (int(number) * n) % 9),
                "RequestedQuantityUnit": "PC",
                "RequestedQuantitySAPUnit": "PC",
                "NetAmount": amount,
                "TransactionCurrency": order["TransactionCurrency"],
            }
        )
    return rows


def generate(spec: DataSpec) -> tuple[SAPData, Generator]:
    """Generate everything. The cyclic GC is paused meanwhile: millions of new dicts would
    trigger it hundreds of times for nothing (they hold no cycles)."""
    data = SAPData()
    generator = Generator(data, spec)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        generator.generate()
    finally:
        if was_enabled:
            gc.enable()
    return data, generator
