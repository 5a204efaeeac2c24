"""The fake SAP's entity sets: services, keys, navigation, and cached, ordered, filtered row lists.

Every entity set belongs to one OData version of one service and serves exactly the properties
SAP's published contract of that version defines (``sap_contract``): the generated rows hold the
union of the v2 and v4 names, and each version sees only its own. Ordered row lists and
``$filter`` results are cached per data version, so paging through 100,000 partners scans them
once per query, not once per page; any change to the data bumps the version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Literal

from connector.testing.sap_contract import EntityContract, entity_contract
from connector.testing.sap_data import Row, SAPData, sales_order_items
from connector.testing.sap_filter import FilterError, compile_filter

Version = Literal["v2", "v4"]

# Every service SAP publishes, per version (no v4 business partner or open-items service exists).
SERVICE_PATHS: dict[Version, dict[str, str]] = {
    "v2": {
        "API_BUSINESS_PARTNER": "/sap/opu/odata/sap/API_BUSINESS_PARTNER",
        "API_SALES_ORDER_SRV": "/sap/opu/odata/sap/API_SALES_ORDER_SRV",
        "API_BILLING_DOCUMENT_SRV": "/sap/opu/odata/sap/API_BILLING_DOCUMENT_SRV",
        "API_OPLACCTGDOCITEMCUBE_SRV": "/sap/opu/odata/sap/API_OPLACCTGDOCITEMCUBE_SRV",
    },
    "v4": {
        "API_SALES_ORDER_SRV": "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/salesorder/0001",
        "API_BILLING_DOCUMENT_SRV": (
            "/sap/opu/odata4/sap/api_billingdocument/srvd_a2x/sap/billingdocument/0001"
        ),
    },
}


@dataclass(frozen=True, slots=True)
class Nav:
    target: str
    many: bool
    resolve: Callable[[SAPData, Row], Any]


@dataclass(frozen=True, slots=True)
class EntitySet:
    name: str
    service: str
    keys: tuple[str, ...]
    rows: Callable[[SAPData], list[Row]]  # every row, any order
    navigation: dict[str, Nav]  # the navigation the fake can expand (others: 501)
    # Fields the generated rows do not carry, sent with these constant values (a real entity has
    # many more properties than the ones worth generating); only the contract's are ever sent.
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    version: Version = "v2"

    def key_of(self, row: Row) -> tuple[str, ...]:
        return tuple(str(row[k]) for k in self.keys)

    @property
    def contract(self) -> EntityContract:
        found = entity_contract(self.service, self.version, self.name)
        if found is None:  # a programming error of the fake: every set it serves is published
            raise LookupError(f"SAP publishes no {self.version} entity set {self.service}/{self.name}")
        return found

    @property
    def path(self) -> str:
        return SERVICE_PATHS[self.version][self.service]


# The properties of a real A_SalesOrder (API_SALES_ORDER_SRV) beyond the generated ones: with the
# generated fields, __metadata and the navigation properties a record has about 102 keys.
_SALES_ORDER_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "SalesGroup": "",
        "SalesOffice": "",
        "SalesDistrict": "",
        "CreatedByUser": "CB9980000010",
        "SenderBusinessSystemName": "",
        "ExternalDocumentID": "",
        "ExternalDocLastChangeDateTime": None,
        "PurchaseOrderByShipToParty": "",
        "CustomerPurchaseOrderType": "",
        "CustomerPurchaseOrderDate": None,
        "SDDocumentReason": "",
        "PricingDate": None,
        "PriceDetnExchangeRate": Decimal("1.00000"),
        "ShippingCondition": "01",
        "CompleteDeliveryIsDefined": False,
        "ShippingType": "",
        "DeliveryDateTypeRule": "",
        "IncotermsClassification": "EXW",
        "IncotermsTransferLocation": "",
        "IncotermsLocation1": "",
        "IncotermsLocation2": "",
        "IncotermsVersion": "",
        "CustomerPriceGroup": "",
        "PriceListType": "",
        "PaymentMethod": "",
        "FixedValueDate": None,
        "AssignmentReference": "",
        "ReferenceSDDocument": "",
        "ReferenceSDDocumentCategory": "",
        "AccountingDocExternalReference": "",
        "CustomerAccountAssignmentGroup": "01",
        "AccountingExchangeRate": Decimal("0.00000"),
        "CustomerGroup": "01",
        "AdditionalCustomerGroup1": "",
        "AdditionalCustomerGroup2": "",
        "AdditionalCustomerGroup3": "",
        "AdditionalCustomerGroup4": "",
        "AdditionalCustomerGroup5": "",
        "SlsDocIsRlvtForProofOfDeliv": False,
        "CustomerTaxClassification1": "1",
        **{f"CustomerTaxClassification{n}": "" for n in range(2, 10)},
        "TaxDepartureCountry": "DE",
        "VATRegistrationCountry": "DE",
        "SalesOrderApprovalReason": "",
        "SalesDocApprovalStatus": "",
        "TotalCreditCheckStatus": "",
        "TotalBlockStatus": "",
        "OverallOrdReltdBillgStatus": "",
        "OverallSDDocReferenceStatus": "",
        "OverallPricingIncompletionSts": "C",
        "OverallDelivConfStatus": "",
        "OverallBillingBlockStatus": "",
        "OverallDeliveryBlockStatus": "",
        "BillingDocumentDate": None,
        "ContractAccount": "",
        "AdditionalValueDays": "0",
        "CustomerPurchaseOrderSuplmnt": "",
        "ServicesRenderedDate": None,
        "SalesDocumentCategory": "C",
        "SalesOrderProbability": "100",
        "CustomerCreditAccount": "",
        "CreditControlArea": "",
        "CustomerRebateAgreement": "",
        "SalesDocValidityStartDate": None,
        "SalesDocValidityEndDate": None,
        "RetsMgmtProcess": "",
        "SalesOrganizationCurrency": "EUR",
    }
)


def _flatten(table: dict[str, list[Row]]) -> list[Row]:
    return [row for rows in table.values() for row in rows]


def _partner_role(table: str, field: str) -> Callable[[SAPData, Row], Row | None]:
    def resolve(data: SAPData, row: Row) -> Row | None:
        number = row.get(field)
        rows: dict[str, Row] = getattr(data, table)
        return rows.get(number) if number else None

    return resolve


def _children(table: str, field: str) -> Callable[[SAPData, Row], list[Row]]:
    def resolve(data: SAPData, row: Row) -> list[Row]:
        return list(getattr(data, table).get(row[field], ()))

    return resolve


ENTITY_SETS: dict[str, EntitySet] = {
    s.name: s
    for s in (
        EntitySet(
            "A_BusinessPartner",
            "API_BUSINESS_PARTNER",
            ("BusinessPartner",),
            lambda d: list(d.partners.values()),
            {
                "to_BusinessPartnerAddress": Nav(
                    "A_BusinessPartnerAddress", True, _children("addresses", "BusinessPartner")
                ),
                "to_Customer": Nav("A_Customer", False, _partner_role("customers", "Customer")),
                "to_Supplier": Nav("A_Supplier", False, _partner_role("suppliers", "Supplier")),
            },
        ),
        EntitySet(
            "A_BusinessPartnerAddress",
            "API_BUSINESS_PARTNER",
            ("BusinessPartner", "AddressID"),
            lambda d: _flatten(d.addresses),
            {
                "to_EmailAddress": Nav("A_AddressEmailAddress", True, _children("emails", "AddressID")),
                "to_PhoneNumber": Nav("A_AddressPhoneNumber", True, _children("phones", "AddressID")),
                "to_MobilePhoneNumber": Nav("A_AddressPhoneNumber", True, _children("mobiles", "AddressID")),
            },
        ),
        EntitySet(
            "A_AddressEmailAddress",
            "API_BUSINESS_PARTNER",
            ("AddressID", "Person", "OrdinalNumber"),
            lambda d: _flatten(d.emails),
            {},
        ),
        EntitySet(
            "A_AddressPhoneNumber",
            "API_BUSINESS_PARTNER",
            ("AddressID", "Person", "OrdinalNumber"),
            lambda d: _flatten(d.phones),
            {},
        ),
        EntitySet(
            "A_Customer",
            "API_BUSINESS_PARTNER",
            ("Customer",),
            lambda d: list(d.customers.values()),
            {
                "to_CustomerCompany": Nav(
                    "A_CustomerCompany", True, _children("customer_companies", "Customer")
                ),
                "to_CustomerSalesArea": Nav(
                    "A_CustomerSalesArea", True, _children("customer_sales_areas", "Customer")
                ),
            },
        ),
        EntitySet(
            "A_CustomerCompany",
            "API_BUSINESS_PARTNER",
            ("Customer", "CompanyCode"),
            lambda d: _flatten(d.customer_companies),
            {},
        ),
        EntitySet(
            "A_CustomerSalesArea",
            "API_BUSINESS_PARTNER",
            ("Customer", "SalesOrganization", "DistributionChannel", "Division"),
            lambda d: _flatten(d.customer_sales_areas),
            {},
        ),
        EntitySet(
            "A_Supplier",
            "API_BUSINESS_PARTNER",
            ("Supplier",),
            lambda d: list(d.suppliers.values()),
            {
                "to_SupplierCompany": Nav(
                    "A_SupplierCompany", True, _children("supplier_companies", "Supplier")
                )
            },
        ),
        EntitySet(
            "A_SupplierCompany",
            "API_BUSINESS_PARTNER",
            ("Supplier", "CompanyCode"),
            lambda d: _flatten(d.supplier_companies),
            {},
        ),
        EntitySet(
            "A_SalesOrder",
            "API_SALES_ORDER_SRV",
            ("SalesOrder",),
            lambda d: list(d.sales_orders.values()),
            {"to_Item": Nav("A_SalesOrderItem", True, lambda d, row: sales_order_items(row))},
            defaults=_SALES_ORDER_DEFAULTS,
        ),
        EntitySet(
            "A_SalesOrderItem",
            "API_SALES_ORDER_SRV",
            ("SalesOrder", "SalesOrderItem"),
            lambda d: [item for order in d.sales_orders.values() for item in sales_order_items(order)],
            {},
        ),
        EntitySet(
            "A_BillingDocument",
            "API_BILLING_DOCUMENT_SRV",
            ("BillingDocument",),
            lambda d: list(d.billing_documents.values()),
            {},
        ),
        EntitySet(
            "SalesOrder",
            "API_SALES_ORDER_SRV",
            ("SalesOrder",),
            lambda d: list(d.sales_orders.values()),
            {"_Item": Nav("SalesOrderItem", True, lambda d, row: sales_order_items(row))},
            defaults=_SALES_ORDER_DEFAULTS,
            version="v4",
        ),
        EntitySet(
            "SalesOrderItem",
            "API_SALES_ORDER_SRV",
            ("SalesOrder", "SalesOrderItem"),
            lambda d: [item for order in d.sales_orders.values() for item in sales_order_items(order)],
            {},
            version="v4",
        ),
        EntitySet(
            "BillingDocument",
            "API_BILLING_DOCUMENT_SRV",
            ("BillingDocument",),
            lambda d: list(d.billing_documents.values()),
            {},
            version="v4",
        ),
        EntitySet(
            "A_OperationalAcctgDocItemCube",
            "API_OPLACCTGDOCITEMCUBE_SRV",
            ("CompanyCode", "FiscalYear", "AccountingDocument", "AccountingDocumentItem"),
            lambda d: list(d.open_items.values()),
            {},
        ),
    )
}


class RowIndex:
    """Ordered and filtered row lists per entity set, valid while the data version is unchanged."""

    def __init__(self, data: SAPData) -> None:
        self.data = data
        self.version = 0
        self._ordered: dict[str, tuple[int, list[Row]]] = {}
        self._queries: dict[tuple[str, str, str, str], tuple[int, list[Row]]] = {}
        self._fields: dict[str, frozenset[str]] = {}
        self._keyed: dict[str, tuple[int, dict[tuple[str, ...], Row]]] = {}

    def changed(self) -> None:
        self.version += 1
        if len(self._queries) > 256:
            self._queries.clear()

    def fields(self, entity_set: EntitySet) -> frozenset[str]:
        """The properties the entity set's contract defines: what ``$select``, ``$filter`` and
        ``$orderby`` may name (a name outside them is the 400 a real service answers)."""
        known = self._fields.get(entity_set.name)
        if known is None:
            known = self._fields[entity_set.name] = frozenset(entity_set.contract.properties)
        return known

    def ordered(self, entity_set: EntitySet) -> list[Row]:
        cached = self._ordered.get(entity_set.name)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        rows = entity_set.rows(self.data)
        if len(entity_set.keys) == 1:
            key = entity_set.keys[0]
            rows.sort(key=lambda r: r[key])
        else:
            rows.sort(key=entity_set.key_of)
        self._ordered[entity_set.name] = (self.version, rows)
        return rows

    def by_key(self, entity_set: EntitySet) -> dict[tuple[str, ...], Row]:
        """Rows by their key tuple, for single-entity reads."""
        cached = self._keyed.get(entity_set.name)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        keyed = {entity_set.key_of(row): row for row in self.ordered(entity_set)}
        self._keyed[entity_set.name] = (self.version, keyed)
        return keyed

    def query(self, entity_set: EntitySet, filter_text: str, orderby: str, version: str = "v2") -> list[Row]:
        """Rows matching ``filter_text`` (OData ``version`` syntax) in ``orderby`` order (default: key)."""
        cache_key = (entity_set.name, filter_text, orderby, version)
        cached = self._queries.get(cache_key)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        rows = self.ordered(entity_set)
        fields = self.fields(entity_set)
        if filter_text:
            predicate = compile_filter(filter_text, fields, version)
            try:
                rows = [row for row in rows if predicate(row)]
            except TypeError as exc:
                raise FilterError(f"incompatible types in $filter: {exc}") from None
        if orderby:
            rows = _order(rows, orderby, fields)
        self._queries[cache_key] = (self.version, rows)
        return rows


def _order(rows: list[Row], orderby: str, fields: frozenset[str]) -> list[Row]:
    result = list(rows)
    for part in reversed([p.strip() for p in orderby.split(",") if p.strip()]):
        name, _, direction = part.partition(" ")
        direction = direction.strip().lower() or "asc"
        if name not in fields or direction not in ("asc", "desc"):
            raise FilterError(f"invalid $orderby {part!r}")
        result.sort(key=lambda r, n=name: (r.get(n) is not None, r.get(n)), reverse=direction == "desc")  # type: ignore[misc]
    return result
