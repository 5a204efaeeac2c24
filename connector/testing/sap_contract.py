"""SAP's published service contracts (``sap_contracts/*.json``, from the services' ``$metadata``).

What each OData version of each service defines: entity sets, keys, properties with their EDM types
and navigation properties. The fake SAP serves exactly these names per version, and the contract
tests check the adapter's catalog against them; see ``sap_contracts/NOTICE.md`` for the sources.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

Version = Literal["v2", "v4"]

# (catalog service name, OData version) -> contract file. A service without a v4 file has no v4.
CONTRACT_FILES: dict[tuple[str, Version], str] = {
    ("API_BUSINESS_PARTNER", "v2"): "API_BUSINESS_PARTNER.v2.json",
    ("API_SALES_ORDER_SRV", "v2"): "API_SALES_ORDER_SRV.v2.json",
    ("API_BILLING_DOCUMENT_SRV", "v2"): "API_BILLING_DOCUMENT_SRV.v2.json",
    ("API_OPLACCTGDOCITEMCUBE_SRV", "v2"): "API_OPLACCTGDOCITEMCUBE_SRV.v2.json",
    ("API_SALES_ORDER_SRV", "v4"): "CE_SALESORDER_0001.v4.json",
    ("API_BILLING_DOCUMENT_SRV", "v4"): "CE_BILLINGDOCUMENT_0001.v4.json",
}


@dataclass(frozen=True, slots=True)
class Property:
    name: str
    edm_type: str  # "Edm.String", "Edm.Decimal", ... or "Collection(...)"
    filterable: bool = True
    sortable: bool = True


@dataclass(frozen=True, slots=True)
class EntityContract:
    """One entity set of a service version: its type's keys, properties and navigation targets."""

    entity_set: str
    type_name: str
    keys: tuple[str, ...]
    properties: dict[str, Property]
    navigation: dict[str, str]  # navigation property -> target entity set (None-free: unknown dropped)
    many: frozenset[str]  # navigation properties that are to-many (known in v4 only)


@dataclass(frozen=True, slots=True)
class ServiceContract:
    service: str
    version: Version
    namespace: str
    entity_sets: dict[str, EntityContract]


def _short(target: str) -> tuple[str, bool]:
    many = target.startswith("Collection(")
    inner = target[len("Collection(") : -1] if many else target
    return inner.rsplit(".", 1)[-1], many


@cache
def service_contract(service: str, version: Version) -> ServiceContract | None:
    """The contract of ``service`` in ``version``, or None when SAP publishes no such service."""
    name = CONTRACT_FILES.get((service, version))
    if name is None:
        return None
    raw = json.loads(resources.files("connector.testing").joinpath("sap_contracts", name).read_text("utf-8"))
    set_of_type = {type_name: set_name for set_name, type_name in raw["entity_sets"].items()}
    sets: dict[str, EntityContract] = {}
    for set_name, type_name in raw["entity_sets"].items():
        spec = raw["entity_types"][type_name]
        navigation: dict[str, str] = {}
        many: set[str] = set()
        for nav, info in spec.get("navigation", {}).items():
            target, is_many = _short(info["target"])
            if target in set_of_type:
                navigation[nav] = set_of_type[target]
            if is_many:
                many.add(nav)
        sets[set_name] = EntityContract(
            entity_set=set_name,
            type_name=type_name,
            keys=tuple(spec["keys"]),
            properties={
                p: Property(
                    p,
                    info["type"],
                    filterable=info.get("filterable") != "false",
                    sortable=info.get("sortable") != "false",
                )
                for p, info in spec["properties"].items()
            },
            navigation=navigation,
            many=frozenset(many),
        )
    return ServiceContract(service, version, raw.get("namespace", service), sets)


def entity_contract(service: str, version: Version, entity_set: str) -> EntityContract | None:
    """The contract of one entity set, or None when the service version does not define it."""
    contract = service_contract(service, version)
    return None if contract is None else contract.entity_sets.get(entity_set)


def services(version: Version) -> list[str]:
    """The services SAP publishes in ``version`` (among those the project reads)."""
    return [service for service, v in CONTRACT_FILES if v == version]
