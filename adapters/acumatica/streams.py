"""The Acumatica stream catalog: entity, keys, change field, ``$select``/``$expand`` and mapper.

A stream's ``$select`` names exactly the fields its mapper reads; linked and detail entities
(contacts, attributes, order lines) come only through ``$expand``. The change field differs by
entity (``LastModified`` on SalesOrder, ``LastModifiedDateTime`` elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from connector.adapters.acumatica import mapping
from connector.adapters.acumatica import values as v
from connector.erp.protocol import StreamSpec
from connector.erp.records import Record

Mapper = Callable[[Mapping[str, Any], str], Record]

#: Acumatica stores times with millisecond precision; filters are rendered to the millisecond.
CURSOR_GRANULARITY = timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class AcumaticaStream:
    name: str
    entity: str
    record_type: Literal["party", "document", "case"]
    key_fields: tuple[str, ...]
    change_field: str
    select: tuple[str, ...]
    expand: tuple[str, ...]
    mapper: Mapper

    @property
    def spec(self) -> StreamSpec:
        return StreamSpec(self.name, self.record_type, self.change_field, CURSOR_GRANULARITY)

    def external_id(self, record: Mapping[str, Any]) -> str:
        """The canonical external id: the key values joined by "/" (``Invoice/AR004821``)."""
        return "/".join(v.required_text(record, field) for field in self.key_fields)

    def key_text(self, record: Mapping[str, Any]) -> str | None:
        """The key for a problem report; None when the record lacks it."""
        try:
            return self.external_id(record)
        except v.FieldError:
            return None

    def split_external_id(self, external_id: str) -> tuple[str, ...]:
        """The key values of an external id (the inverse of :meth:`external_id`)."""
        parts = tuple(external_id.split("/", len(self.key_fields) - 1))
        if len(parts) != len(self.key_fields) or not all(part.strip() for part in parts):
            fields = "/".join(self.key_fields)
            raise ValueError(f"{self.name} external id {external_id!r} does not match {fields}")
        return parts


_CHANGED = "LastModifiedDateTime"

STREAMS: dict[str, AcumaticaStream] = {
    stream.name: stream
    for stream in (
        AcumaticaStream(
            name="Customer",
            entity="Customer",
            record_type="party",
            key_fields=("CustomerID",),
            change_field=_CHANGED,
            select=(
                "CustomerID",
                "CustomerName",
                "Status",
                "CustomerClass",
                "CurrencyID",
                "CreditLimit",
                "Terms",
                "TaxZone",
                "TaxRegistrationID",
                "TaxExemptionNumber",
                "PriceClassID",
                "ParentRecord",
                "Email",
                _CHANGED,
            ),
            expand=(
                "MainContact",
                "BillingContact",
                "PrimaryContact",
                "Contacts",
                "Attributes",
                "CreditVerificationRules",
            ),
            mapper=mapping.map_customer,
        ),
        AcumaticaStream(
            name="Vendor",
            entity="Vendor",
            record_type="party",
            key_fields=("VendorID",),
            change_field=_CHANGED,
            select=(
                "VendorID",
                "VendorName",
                "LegalName",
                "Status",
                "VendorClass",
                "CurrencyID",
                "Terms",
                "TaxZone",
                "TaxRegistrationID",
                "PaymentMethod",
                _CHANGED,
            ),
            expand=("MainContact", "RemittanceContact", "Attributes"),
            mapper=mapping.map_vendor,
        ),
        AcumaticaStream(
            name="Invoice",
            entity="Invoice",
            record_type="document",
            key_fields=("Type", "ReferenceNbr"),
            change_field=_CHANGED,
            select=(
                "Type",
                "ReferenceNbr",
                "Customer",
                "Date",
                "DueDate",
                "Status",
                "Amount",
                "Balance",
                "CurrencyID",
                "Terms",
                "Description",
                _CHANGED,
            ),
            expand=(),
            mapper=mapping.map_invoice,
        ),
        AcumaticaStream(
            name="SalesOrder",
            entity="SalesOrder",
            record_type="document",
            key_fields=("OrderType", "OrderNbr"),
            change_field="LastModified",
            select=(
                "OrderType",
                "OrderNbr",
                "CustomerID",
                "CustomerOrder",
                "Date",
                "RequestedOn",
                "Status",
                "CurrencyID",
                "OrderTotal",
                "Hold",
                "CreditHold",
                "Description",
                "LastModified",
            ),
            expand=("Details",),
            mapper=mapping.map_sales_order,
        ),
        AcumaticaStream(
            name="Bill",
            entity="Bill",
            record_type="document",
            key_fields=("Type", "ReferenceNbr"),
            change_field=_CHANGED,
            select=(
                "Type",
                "ReferenceNbr",
                "Vendor",
                "VendorRef",
                "Status",
                "Amount",
                "Balance",
                "Date",
                "DueDate",
                "CurrencyID",
                "Terms",
                "Description",
                _CHANGED,
            ),
            expand=(),
            mapper=mapping.map_bill,
        ),
        AcumaticaStream(
            name="Case",
            entity="Case",
            record_type="case",
            key_fields=("CaseID",),
            change_field=_CHANGED,
            select=(
                "CaseID",
                "Subject",
                "Status",
                "Reason",
                "Priority",
                "Severity",
                "ClassID",
                "BusinessAccount",
                "ContactID",
                "Owner",
                "DateReported",
                "ClosingDate",
                "Description",
                _CHANGED,
            ),
            expand=(),
            mapper=mapping.map_case,
        ),
    )
}
