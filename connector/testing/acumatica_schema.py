"""What the fake Acumatica serves: entities, their keys and change fields, and per endpoint version
the fields the published contract defines (``connector/adapters/acumatica/contracts``).

A row holds plain values: scalar fields, linked entities (``MainContact``, a dict) and detail
collections (``Contacts``, a list), all in one dict. What goes on the wire depends on the endpoint
version of the request (:class:`EntityView`): exactly the fields that version's contract defines
for the entity, in the contract's (alphabetical) order, a list without ``$select`` sending them
all, as a real one does. A row's values carry only what the data generator draws; ``defaults``
gives the constant value of the others (most stay empty, ``{}``, as in real data). Linked and
detail entities are sent only when expanded, nested ones only when their path is
(``MainContact/Address``).

From 26.200.001 a ``StringSingleSelectValue`` field goes out as ``{"value": {"ID", "Description"}}``
(the row holds the description; :data:`CODES` gives the ID) and a ``DateOnlyValue`` as
``yyyy-MM-dd``; SalesOrder's change stamp is named ``LastModifiedDateTime`` there (the row keeps
it under ``LastModified``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from connector.adapters.acumatica import contract


@dataclass(frozen=True, slots=True)
class EntityDef:
    name: str
    key_fields: tuple[str, ...]
    change_field: str
    custom: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


#: The IDs of select values (26.200.001) by entity, field and description, as Acumatica's DAC
#: constants name them (a description missing here is its own ID).
CODES: Mapping[str, Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        "Customer": {
            "Status": {"Active": "A", "On Hold": "H", "Credit Hold": "C", "Inactive": "I", "One-Time": "T"}
        },
        "Invoice": {
            "Type": {"Invoice": "INV", "Credit Memo": "CRM", "Debit Memo": "DRM"},
            "Status": {"Closed": "C", "Open": "N", "On Hold": "H", "Balanced": "B", "Voided": "V"},
        },
        "Bill": {
            "Type": {"Bill": "INV", "Debit Adj.": "ADR", "Credit Adj.": "ACR", "Prepayment": "PPM"},
            "Status": {"Closed": "C", "Open": "N", "On Hold": "H", "Balanced": "B"},
        },
        "SalesOrder": {
            "Status": {
                "Completed": "C",
                "Open": "N",
                "Shipping": "S",
                "Back Order": "B",
                "On Hold": "H",
                "Credit Hold": "R",
                "Cancelled": "L",
            }
        },
        "Case": {
            "Status": {"Closed": "C", "Resolved": "R", "Open": "O", "New": "N", "Pending Customer": "P"}
        },
    }
)

# Stored name of a field a version renamed: SalesOrder keeps its stamp under LastModified.
_RENAMED: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {"SalesOrder": {"LastModifiedDateTime": "LastModified"}}
)
#: The version whose contract answers for a version the contracts do not cover (a test's "99.100.001").
FALLBACK_VERSION = "25.200.001"


@dataclass(frozen=True, slots=True)
class EntityView:
    """One entity as endpoint ``version`` defines it."""

    definition: EntityDef
    version: str  # the contract version (FALLBACK_VERSION for an unknown one)
    types: Mapping[str, str]  # every field -> value type
    scalars: tuple[str, ...]  # plain-value fields, in the order the server writes them
    stored: Mapping[str, str]  # wire name -> the row's name, where they differ
    change_field: str  # its wire name at this version
    selects: Mapping[str, Mapping[str, str]]  # StringSingleSelectValue field -> description -> ID
    date_only: frozenset[str]

    def is_expandable(self, name: str) -> bool:
        kind = self.types.get(name)
        return kind is not None and contract.target_entity(kind) is not None

    def resolve(self, path: str) -> str | None:
        """The declared type at the end of a ``Linked/Field`` path, None when the contract lacks it."""
        found = contract.resolve(self.version, self.definition.name, path)
        return None if found is None else found[1]

    def code_of(self, name: str, description: Any) -> Any:
        codes = self.selects.get(name)
        if codes is None or not isinstance(description, str):
            return description
        return codes.get(description, description)


_VIEWS: dict[tuple[str, str], EntityView] = {}


def view(definition: EntityDef, version: str) -> EntityView:
    """``definition`` at endpoint ``version`` (versions without a contract use FALLBACK_VERSION's)."""
    found = _VIEWS.get((definition.name, version))
    if found is None or found.definition is not definition:
        found = _VIEWS[(definition.name, version)] = _make_view(definition, version)
    return found


def _make_view(definition: EntityDef, version: str) -> EntityView:
    known = version if version in contract.versions() else FALLBACK_VERSION
    types = contract.entity_fields(known, definition.name)
    scalars = tuple(name for name, kind in types.items() if contract.target_entity(kind) is None)
    renamed = {wire: own for wire, own in _RENAMED.get(definition.name, {}).items() if own not in types}
    change = next((wire for wire, own in renamed.items() if own == definition.change_field), None)
    codes = CODES.get(definition.name, {})
    return EntityView(
        definition=definition,
        version=known,
        types=types,
        scalars=scalars,
        stored=MappingProxyType(renamed),
        change_field=change or definition.change_field,
        selects=MappingProxyType(
            {
                name: MappingProxyType(dict(codes.get(name, {})))
                for name, kind in types.items()
                if kind == "StringSingleSelectValue"
            }
        ),
        date_only=frozenset(name for name, kind in types.items() if kind == "DateOnlyValue"),
    )


# What a real Customer sends for the fields the generator does not draw (empty, {}, when not listed).
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


ENTITIES: dict[str, EntityDef] = {
    entity.name: entity
    for entity in (
        EntityDef(
            name="Customer",
            key_fields=("CustomerID",),
            change_field="LastModifiedDateTime",
            custom=("Document.AttrPOREQ", "Document.UsrAccountManager"),
            defaults=_CUSTOMER_DEFAULTS,
        ),
        EntityDef(
            name="Vendor",
            key_fields=("VendorID",),
            change_field="LastModifiedDateTime",
            custom=("Document.UsrPreferredCarrier",),
        ),
        EntityDef(
            name="Invoice",
            key_fields=("Type", "ReferenceNbr"),
            change_field="LastModifiedDateTime",
            custom=("Document.CuryID",),  # the document's currency: no endpoint field holds it
        ),
        EntityDef(name="SalesOrder", key_fields=("OrderType", "OrderNbr"), change_field="LastModified"),
        EntityDef(name="Bill", key_fields=("Type", "ReferenceNbr"), change_field="LastModifiedDateTime"),
        EntityDef(name="Case", key_fields=("CaseID",), change_field="LastModifiedDateTime"),
    )
}
