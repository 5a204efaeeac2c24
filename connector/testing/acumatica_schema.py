"""What the fake Acumatica serves: entities, their keys, change fields and field layout.

Linked entities (``MainContact``) and detail collections (``Contacts``, ``Attributes``,
``Details``) live in the same value dict as the scalar fields, but are sent only when expanded,
as on the real server. ``date_fields`` are calendar dates, sent as local midnight timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EntityDef:
    name: str
    key_fields: tuple[str, ...]
    change_field: str
    fields: tuple[str, ...]
    linked: tuple[str, ...] = ()
    details: tuple[str, ...] = ()
    custom: tuple[str, ...] = ()
    date_fields: frozenset[str] = frozenset()

    @property
    def expandable(self) -> frozenset[str]:
        return frozenset(self.linked + self.details)


_DATES = frozenset({"Date", "DueDate", "RequestedOn"})

ENTITIES: dict[str, EntityDef] = {
    entity.name: entity
    for entity in (
        EntityDef(
            name="Customer",
            key_fields=("CustomerID",),
            change_field="LastModifiedDateTime",
            fields=(
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
                "CreatedDateTime",
                "LastModifiedDateTime",
            ),
            linked=("MainContact", "BillingContact", "PrimaryContact", "CreditVerificationRules"),
            details=("Contacts", "Attributes"),
            custom=("Document.AttrPOREQ", "Document.UsrAccountManager"),
        ),
        EntityDef(
            name="Vendor",
            key_fields=("VendorID",),
            change_field="LastModifiedDateTime",
            fields=(
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
                "CreatedDateTime",
                "LastModifiedDateTime",
            ),
            linked=("MainContact", "RemittanceContact"),
            details=("Attributes",),
            custom=("Document.UsrPreferredCarrier",),
        ),
        EntityDef(
            name="Invoice",
            key_fields=("Type", "ReferenceNbr"),
            change_field="LastModifiedDateTime",
            fields=(
                "Type",
                "ReferenceNbr",
                "Customer",
                "CustomerOrder",
                "Date",
                "DueDate",
                "Status",
                "Hold",
                "Amount",
                "Balance",
                "CurrencyID",
                "Terms",
                "Description",
                "CreatedDateTime",
                "LastModifiedDateTime",
            ),
            date_fields=_DATES,
        ),
        EntityDef(
            name="SalesOrder",
            key_fields=("OrderType", "OrderNbr"),
            change_field="LastModified",
            fields=(
                "OrderType",
                "OrderNbr",
                "CustomerID",
                "CustomerOrder",
                "Date",
                "RequestedOn",
                "Status",
                "Hold",
                "CreditHold",
                "CurrencyID",
                "OrderedQty",
                "OrderTotal",
                "Description",
                "LastModified",
            ),
            details=("Details",),
            date_fields=_DATES,
        ),
        EntityDef(
            name="Bill",
            key_fields=("Type", "ReferenceNbr"),
            change_field="LastModifiedDateTime",
            fields=(
                "Type",
                "ReferenceNbr",
                "Vendor",
                "VendorRef",
                "Date",
                "DueDate",
                "Status",
                "Hold",
                "Amount",
                "Balance",
                "CurrencyID",
                "Terms",
                "Description",
                "LastModifiedDateTime",
            ),
            date_fields=_DATES,
        ),
        EntityDef(
            name="Case",
            key_fields=("CaseID",),
            change_field="LastModifiedDateTime",
            fields=(
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
                "LastActivityDate",
                "ClosingDate",
                "Description",
                "LastModifiedDateTime",
            ),
        ),
    )
}
