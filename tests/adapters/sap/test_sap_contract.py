"""The SAP adapter names only what SAP's published $metadata defines, per OData version.

The contracts (``connector/testing/sap_contracts``, SAP's v2 and v4 service definitions) are the test
data: every entity set, ``$select`` name, ``$expand`` path, key, change stamp and ``$filter`` name the
catalog sends for a stream, and every field a mapper reads from a real read, must exist in the
version the stream is read with, and each declared field type must be able to read the property's
EDM type. A v4 tenant reads the business partner and open-items services over v2 (SAP publishes
no v4 service for them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from connector.adapters.sap import SAPAdapter
from connector.adapters.sap import adapter as sap_adapter
from connector.adapters.sap.catalog import Catalog, EntityType, ODataVersion, StreamDef, load_catalog
from connector.adapters.sap.query import expand_option, expanded_entities, read_filter, select_fields
from connector.clock import FrozenClock
from connector.settings import SyncSettings
from connector.testing.sap import FakeSAP
from connector.testing.sap_contract import EntityContract, entity_contract, service_contract

VERSIONS: tuple[ODataVersion, ...] = ("v2", "v4")
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
STREAMS = ("BusinessPartner", "SalesOrder", "BillingDocument", "OpenItem")

# Which EDM types each catalog field type reads (v2 dates are Edm.DateTime shown as a date).
READS: dict[str, set[str]] = {
    "string": {"Edm.String"},
    "bool": {"Edm.Boolean"},
    "int": {"Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte", "Edm.SByte"},
    "decimal": {"Edm.Decimal", "Edm.Double", "Edm.Single"},
    "date": {"Edm.DateTime", "Edm.Date"},
    "datetime": {"Edm.DateTimeOffset", "Edm.DateTime"},
    "time": {"Edm.Time", "Edm.TimeOfDay"},
}


def contract_of(stream: StreamDef, entity: str) -> EntityContract:
    found = entity_contract(stream.service, stream.version, entity)
    assert found is not None, f"{stream.name} ({stream.version}): SAP's {stream.service} has no set {entity}"
    return found


def reached(catalog: Catalog, stream: StreamDef) -> Iterator[tuple[EntityType, EntityContract]]:
    """The stream's root entity and every entity its expansions reach, with their contracts."""
    seen = {stream.entity_set}
    yield catalog.entity(stream.entity_set), contract_of(stream, stream.entity_set)
    for path in stream.expand:
        current = catalog.entity(stream.entity_set)
        for step in path.split("/"):
            current = catalog.entity(current.navigation[step])
            if current.name not in seen:
                seen.add(current.name)
                yield current, contract_of(stream, current.name)


def cases() -> list[tuple[str, ODataVersion]]:
    return [(name, version) for version in VERSIONS for name in STREAMS]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.mark.parametrize(("name", "version"), cases())
def test_each_stream_reads_a_published_service_version(
    catalog: Catalog, name: str, version: ODataVersion
) -> None:
    stream = catalog.stream_for(name, version)
    expected = "v4" if version == "v4" and service_contract(stream.service, "v4") is not None else "v2"
    assert stream.version == expected
    assert service_contract(stream.service, stream.version) is not None
    assert catalog.service_path(stream.service, stream.version)
    contract = contract_of(stream, stream.entity_set)
    assert stream.keys == contract.keys


@pytest.mark.parametrize(("name", "version"), cases())
def test_select_expand_and_fields_exist_with_readable_types(
    catalog: Catalog, name: str, version: ODataVersion
) -> None:
    stream = catalog.stream_for(name, version)
    root = contract_of(stream, stream.entity_set)
    names = set(root.properties) | set(root.navigation)
    reached_by = expanded_entities(stream, catalog)
    for selected in select_fields(stream, catalog, stream.version).split(","):
        path, _, field = selected.rpartition("/")
        if not path:
            assert field in names, f"{stream.version} {stream.entity_set} has no {field}"
            continue
        nested = contract_of(stream, reached_by[path])
        assert field in nested.properties, f"{stream.version} {reached_by[path]} has no {field}"
    for entity, contract in reached(catalog, stream):
        for field, kind in entity.fields.items():
            prop = contract.properties.get(field)
            assert prop is not None, f"{stream.version} {entity.name} has no property {field}"
            assert prop.edm_type in READS[kind], f"{entity.name}.{field}: {kind} cannot read {prop.edm_type}"
        for nav, target in entity.navigation.items():
            assert contract.navigation.get(nav) == target, f"{stream.version} {entity.name}: navigation {nav}"
    assert expand_option(stream.expand, stream.version) or not stream.expand


@pytest.mark.parametrize(("name", "version"), cases())
def test_filters_and_change_stamps_name_filterable_properties(
    catalog: Catalog, name: str, version: ODataVersion
) -> None:
    stream = catalog.stream_for(name, version)
    root = contract_of(stream, stream.entity_set)
    for cursor in stream.cursors:
        for field in filter(None, (cursor.field, cursor.time_field)):
            assert field in root.properties and root.properties[field].filterable, field
    text = " ".join(
        filter(None, (read_filter(stream, NOW, stream.version), read_filter(stream, None, stream.version)))
    )
    identifiers = set(re.findall(r"\b([A-Z][A-Za-z0-9_]*)\b(?=\s+(?:eq|ne|ge|gt|le|lt)\b)", text))
    assert identifiers, text
    assert identifiers <= set(root.properties), identifiers - set(root.properties)
    assert all(root.properties[i].filterable for i in identifiers)


def test_v4_uses_its_own_names(catalog: Catalog) -> None:
    orders, invoices = catalog.stream_for("SalesOrder", "v4"), catalog.stream_for("BillingDocument", "v4")
    assert (orders.entity_set, orders.expand, invoices.entity_set) == (
        "SalesOrder",
        ("_Item",),
        "BillingDocument",
    )
    fields = catalog.entity("SalesOrder").fields
    assert "LastChangeDate" not in fields and "OverallTotalDeliveryStatus" not in fields
    assert "InvoiceClearingStatus" not in catalog.entity("BillingDocument").fields
    assert "TotalTaxAmount" not in catalog.entity("A_BillingDocument").fields  # v2 has TaxAmount


class Recording(dict[str, Any]):
    """An entity that notes every name a mapper reads from it."""

    def __init__(self, data: dict[str, Any], entity: str, log: set[tuple[str, str]]) -> None:
        super().__init__(data)
        self.entity, self.log = entity, log

    def get(self, key: str, default: Any = None) -> Any:
        self.log.add((self.entity, key))
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.log.add((self.entity, key))
        return super().__getitem__(key)


def recording(value: Any, entity: EntityType, catalog: Catalog, log: set[tuple[str, str]]) -> Any:
    if isinstance(value, list):
        return [recording(v, entity, catalog, log) for v in value]
    if not isinstance(value, dict):
        return value
    data = {
        k: recording(v, catalog.entity(entity.navigation[k]), catalog, log) if k in entity.navigation else v
        for k, v in value.items()
    }
    return Recording(data, entity.name, log)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_name_a_mapper_reads_exists_in_the_version(
    monkeypatch: pytest.MonkeyPatch, version: ODataVersion
) -> None:
    fake = FakeSAP(seed=5, customers=20, suppliers=8, sales_orders=30, odata_version=version)
    adapter = SAPAdapter(
        fake.tenant_settings(), sync=SyncSettings(), clock=FrozenClock(NOW), transport=fake.transport()
    )
    reads: dict[str, set[tuple[str, str]]] = {name: set() for name in STREAMS}
    for name in STREAMS:
        mapper = sap_adapter._MAPPERS[name]

        def spy(entity: Any, stream: StreamDef, rules: Any, _mapper: Any = mapper) -> Any:
            root = adapter.catalog.entity(stream.entity_set)
            return _mapper(recording(entity, root, adapter.catalog, reads[stream.name]), stream, rules)

        monkeypatch.setitem(sap_adapter._MAPPERS, name, spy)
    with adapter:
        mapped = {name: sum(len(p.records) for p in adapter.read(name, None)) for name in STREAMS}
    assert all(mapped.values()), mapped
    for name in STREAMS:
        stream = adapter._streams[name]
        assert reads[name]
        for entity, field in sorted(reads[name]):
            contract = contract_of(stream, entity)
            assert field in contract.properties or field in contract.navigation, (
                f"{name} mapper reads {entity}.{field}, which {stream.version} does not define"
            )
