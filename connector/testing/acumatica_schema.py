"""What the fake Acumatica serves: entities, their keys, change fields and field layout.

Linked entities (``MainContact``) and detail collections (``Contacts``, ``Attributes``,
``Details``) live in the same value dict as the scalar fields, but are sent only when expanded,
as on the real server. ``date_fields`` are calendar dates, sent as local midnight timestamps.

``fields`` is every field the endpoint defines, in the order the server writes them: a list
without ``$select`` sends them all, as a real one does (a real Customer row has about 59 keys:
54 fields plus ``id``, ``rowNumber``, ``note``, ``custom`` and ``_links``). A row's values carry
only what the data generator draws; ``defaults`` gives the constant value of the others (most
stay empty, ``{}``, as in real data). ``lacking`` names the fields older endpoint versions do not
define: a version at or below the key has none of them (the real Default/20.200.001 Customer has
no CreditLimit, Email or TaxExemptionNumber).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


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
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    lacking: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def expandable(self) -> frozenset[str]:
        return frozenset(self.linked + self.details)

    def fields_at(self, version: str) -> tuple[str, ...]:
        """The fields endpoint ``version`` defines (``fields`` minus what older versions lack)."""
        absent = self.absent_at(version)
        return tuple(name for name in self.fields if name not in absent) if absent else self.fields

    def absent_at(self, version: str) -> frozenset[str]:
        """The fields of ``fields`` that endpoint ``version`` does not define."""
        absent: frozenset[str] = frozenset()
        for upto, names in self.lacking.items():
            if _version_key(version) <= _version_key(upto):
                absent |= names
        return absent


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


# The real Default Customer's fields (25.200.001), alphabetical as the server writes them. The
# ones the generator does not draw are sent with these values, or empty ({}) when not listed.
_CUSTOMER_FIELDS = (
    "AccountRef",
    "ApplyOverdueCharges",
    "AutoApplyPayments",
    "BAccountID",
    "BillingAddressOverride",
    "BillingContactOverride",
    "CreatedDateTime",
    "CreditLimit",
    "CurrencyID",
    "CurrencyRateType",
    "CustomerCategory",
    "CustomerClass",
    "CustomerID",
    "CustomerName",
    "Email",
    "EnableCurrencyOverride",
    "EnableRateOverride",
    "EnableWriteOffs",
    "EntityUsageType",
    "FOBPoint",
    "IsGuestCustomer",
    "LastModifiedDateTime",
    "LeadTimedays",
    "LocationName",
    "MultiCurrencyStatements",
    "NoteID",
    "OrderPriority",
    "ParentRecord",
    "PriceClassID",
    "PrimaryContactID",
    "PrintDunningLetters",
    "PrintInvoices",
    "PrintStatements",
    "ResidentialDelivery",
    "SaturdayDelivery",
    "SendDunningLettersbyEmail",
    "SendInvoicesbyEmail",
    "SendStatementsbyEmail",
    "ShipVia",
    "ShippingAddressOverride",
    "ShippingBranch",
    "ShippingContactOverride",
    "ShippingRule",
    "ShippingTerms",
    "ShippingZoneID",
    "StatementCycleID",
    "StatementType",
    "Status",
    "TaxExemptionNumber",
    "TaxRegistrationID",
    "TaxZone",
    "Terms",
    "WarehouseID",
    "WriteOffLimit",
)
_CUSTOMER_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "ApplyOverdueCharges": False,
        "AutoApplyPayments": False,
        "BillingAddressOverride": False,
        "BillingContactOverride": False,
        "CurrencyRateType": "SPOT",
        "CustomerCategory": "Individual",
        "EnableCurrencyOverride": False,
        "EnableRateOverride": False,
        "EnableWriteOffs": True,
        "EntityUsageType": "Default",
        "IsGuestCustomer": False,
        "LeadTimedays": 0,
        "LocationName": "Primary Location",
        "MultiCurrencyStatements": False,
        "OrderPriority": 0,
        "PrintDunningLetters": True,
        "PrintInvoices": False,
        "PrintStatements": True,
        "ResidentialDelivery": False,
        "SaturdayDelivery": False,
        "SendDunningLettersbyEmail": False,
        "SendInvoicesbyEmail": False,
        "SendStatementsbyEmail": False,
        "ShippingAddressOverride": False,
        "ShippingContactOverride": False,
        "ShippingRule": "Cancel Remainder",
        "StatementCycleID": "EOM",
        "StatementType": "Open Item",
        "WriteOffLimit": 0.0,
    }
)


_DATES = frozenset({"Date", "DueDate", "RequestedOn"})

ENTITIES: dict[str, EntityDef] = {
    entity.name: entity
    for entity in (
        EntityDef(
            name="Customer",
            key_fields=("CustomerID",),
            change_field="LastModifiedDateTime",
            fields=_CUSTOMER_FIELDS,
            linked=("MainContact", "BillingContact", "PrimaryContact", "CreditVerificationRules"),
            details=("Contacts", "Attributes"),
            custom=("Document.AttrPOREQ", "Document.UsrAccountManager"),
            defaults=_CUSTOMER_DEFAULTS,
            lacking=MappingProxyType(
                {"20.200.001": frozenset({"CreditLimit", "Email", "TaxExemptionNumber"})}
            ),
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
