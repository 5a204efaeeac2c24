"""The Acumatica catalog and mappers hold against the published contracts, version by version.

``adapters/acumatica/contracts/endpoints.json`` is derived from Acumatica's own definitions of the
``Default`` endpoint (20.200.001 to 26.200.001, MIT licence beside it). Every name a stream puts in
``$select``, ``$expand`` or ``$filter`` (its key and change fields) must be defined by the version it
is sent to, and every field a mapper reads must exist in some version and be read with a reader
that can read its declared type; what a version lacks is computed from its definition.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from connector.adapters.acumatica import SUPPORTED_VERSIONS, AcumaticaAdapter, contract
from connector.adapters.acumatica import values as v
from connector.adapters.acumatica.streams import STREAMS
from connector.clock import FrozenClock
from connector.errors import ERPProtocolError
from connector.settings import SyncSettings
from connector.testing import FakeAcumatica
from connector.testing.acumatica import ALL_VERSIONS

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
CASES = [(version, stream) for version in SUPPORTED_VERSIONS for stream in STREAMS]
_IDS = [f"{version}-{stream}" for version, stream in CASES]

#: Which declared value types each reader can read.
_IDS_AND_TEXT = {"StringValue", "IntValue", "ShortValue", "LongValue", "GuidValue"}
READABLE: dict[str, set[str]] = {
    "text": _IDS_AND_TEXT,
    "required_text": _IDS_AND_TEXT,
    "code": _IDS_AND_TEXT | {"StringSingleSelectValue"},
    "required_code": _IDS_AND_TEXT | {"StringSingleSelectValue"},
    "label": _IDS_AND_TEXT | {"StringSingleSelectValue"},
    "money": {"DecimalValue", "DoubleValue", "IntValue", "ShortValue", "LongValue"},
    "unwrap": set(contract.SCALAR_TYPES),
    "timestamp": {"DateTimeValue"},
    "calendar_date": {"DateTimeValue", "DateOnlyValue"},
    "boolean": {"BooleanValue"},
}
_SYSTEM = {"id", "rowNumber", "note", "custom", "_links"}


def test_the_supported_versions_are_the_versions_with_a_contract() -> None:
    assert contract.versions() == SUPPORTED_VERSIONS


def test_the_licence_travels_with_the_derived_contracts() -> None:
    licence = contract.CONTRACTS_FILE.parent / "LICENSE-Acumatica-MIT.txt"
    assert "MIT" in licence.read_text(
        encoding="utf-8"
    ) or "Permission is hereby granted" in licence.read_text(encoding="utf-8")
    assert (
        "LICENSE-Acumatica-MIT.txt" in json.loads(contract.CONTRACTS_FILE.read_text(encoding="utf-8"))["note"]
    )


@pytest.mark.parametrize(("version", "stream"), CASES, ids=_IDS)
def test_every_requested_name_is_defined_by_the_version(version: str, stream: str) -> None:
    spec = STREAMS[stream]
    defined = contract.entity_fields(version, spec.entity)
    for name in (*spec.select_at(version), *spec.key_fields, spec.change_field_at(version)):
        assert contract.target_entity(defined.get(name, "?")) is None, f"$select {name} at {version}"
        assert name in defined, f"{stream}: {name} is not defined at {version}"
    for path in spec.expand_at(version):
        found = contract.resolve(version, spec.entity, path)
        assert found is not None and contract.target_entity(found[1]) is not None, f"$expand {path}"
    assert all(contract.resolve(version, spec.entity, path) is not None for path in spec.expand), (
        "every catalogued expansion exists in every supported version"
    )
    for name in spec.custom:
        assert name not in defined  # read through $custom only because the endpoint lacks a field


def test_what_a_version_lacks_is_computed_from_its_definition() -> None:
    customer, vendor, case, invoice = (STREAMS[n] for n in ("Customer", "Vendor", "Case", "Invoice"))
    assert customer.absent_at("20.200.001") == ("CreditLimit", "TaxExemptionNumber", "Email")
    assert customer.absent_at("22.200.001") == ("Email",)  # 22 has no Customer Email either
    assert customer.absent_at("23.200.001") == ()
    assert vendor.absent_at("20.200.001") == ("LegalName",)
    assert all(case.absent_at(version) == ("ClosureNotes",) for version in SUPPORTED_VERSIONS[:-1])
    assert case.absent_at("26.200.001") == ()
    assert all("CurrencyID" not in invoice.select_at(version) for version in SUPPORTED_VERSIONS)
    order = STREAMS["SalesOrder"]
    assert [order.change_field_at(version) for version in ("25.200.001", "26.200.001")] == [
        "LastModified",
        "LastModifiedDateTime",
    ]


# Mapper reads, traced ---------------------------------------------------------------------------
class Entity(dict[str, Any]):
    """A wire record that notes which of its fields are read, and knows its contract entity."""

    def __init__(self, entity: str, data: Mapping[str, Any], reads: set[tuple[str, str]]) -> None:
        super().__init__(data)
        self.entity = entity
        self.reads = reads

    def get(self, key: str, default: Any = None) -> Any:
        self.reads.add((self.entity, key))
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.reads.add((self.entity, key))
        return super().__getitem__(key)


def _traced(version: str, entity: str, row: Mapping[str, Any], reads: set[tuple[str, str]]) -> Entity:
    data: dict[str, Any] = {}
    for name, value in row.items():
        kind = contract.field_type(version, entity, name)
        nested = contract.target_entity(kind) if kind is not None else None
        if nested is not None and isinstance(value, list):
            value = [_traced(version, nested, item, reads) for item in value]
        elif nested is not None and isinstance(value, Mapping):
            value = _traced(version, nested, value, reads)
        data[name] = value
    return Entity(entity, data, reads)


def _wire_rows(version: str, stream: str) -> list[dict[str, Any]]:
    """What the adapter's own request returns from the fake at ``version`` (all expansions)."""
    fake = FakeAcumatica(
        seed=3, clock=FrozenClock(NOW), customers=12, vendors=4, invoices=12, sales_orders=6, bills=6,
        cases=12, versions=ALL_VERSIONS,
    )  # fmt: skip
    tenant = fake.tenant_settings(version=version)
    transport = httpx.MockTransport(fake.handle)
    with AcumaticaAdapter(
        tenant, sync=SyncSettings(), clock=FrozenClock(NOW), transport=transport
    ) as adapter:
        spec = adapter.stream(stream)
        return adapter.client.list(spec.entity, {**adapter._params(spec), "$top": "12"})


@pytest.fixture
def reader_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str, str]]]:
    """(reader, entity, field) for each outermost reader call on a traced record."""
    log: list[tuple[str, str, str]] = []
    depth = [0]

    def traced(reader: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(record: Any, name: str, *args: Any) -> Any:
            if depth[0] == 0 and isinstance(record, Entity):
                log.append((reader, record.entity, name))
            depth[0] += 1
            try:
                return function(record, name, *args)
            finally:
                depth[0] -= 1

        return call

    for reader in READABLE:
        monkeypatch.setattr(v, reader, traced(reader, getattr(v, reader)))
    yield log


def _map_sparse(version: str, stream: str, row: Mapping[str, Any], reads: set[tuple[str, str]]) -> None:
    """Map ``row`` with its plain fields empty, so every fallback a mapper has is read too; a field
    the mapper requires is given back its value."""
    spec = STREAMS[stream]
    kept = set(spec.key_fields)
    while True:
        sparse = {
            name: value if name in kept or isinstance(value, list) or name in _SYSTEM else {}
            for name, value in row.items()
        }
        try:
            spec.mapper(_traced(version, spec.entity, sparse, reads), "t1")
            return
        except v.FieldError as exc:
            assert exc.field not in kept and exc.field in row, exc
            kept.add(exc.field)


@pytest.mark.parametrize(("version", "stream"), CASES, ids=_IDS)
def test_every_mapper_read_is_a_defined_field_read_with_a_fitting_reader(
    version: str, stream: str, reader_log: list[tuple[str, str, str]]
) -> None:
    spec = STREAMS[stream]
    rows = _wire_rows(version, stream)
    reads: set[tuple[str, str]] = set()
    for row in rows:
        spec.mapper(_traced(version, spec.entity, row, reads), "t1")
        _map_sparse(version, stream, row, reads)
    assert rows and reads
    gaps = set(spec.absent_at(version)) | set(spec.change_fields)
    for entity, name in sorted(reads):
        if name in _SYSTEM:
            continue
        assert any(name in contract.entity_fields(other, entity) for other in SUPPORTED_VERSIONS), (
            f"{entity}.{name} exists in no version"
        )
        if name not in contract.entity_fields(version, entity):
            assert entity == spec.entity and name in gaps, f"{entity}.{name} is not defined at {version}"
    for reader, entity, name in reader_log:
        declared = contract.field_type(version, entity, name)
        if declared is not None:
            assert declared in READABLE[reader], f"{reader}() cannot read {entity}.{name}: {declared}"


def test_a_server_offering_no_supported_version_is_refused_before_any_read() -> None:
    fake = FakeAcumatica(
        seed=1, clock=FrozenClock(NOW), customers=3, vendors=1, invoices=1, sales_orders=1, bills=1, cases=1,
        versions=("19.100.001", "30.100.001"),
    )  # fmt: skip
    transport = httpx.MockTransport(fake.handle)
    adapter = AcumaticaAdapter(
        fake.tenant_settings(), sync=SyncSettings(), clock=FrozenClock(NOW), transport=transport
    )
    with pytest.raises(ERPProtocolError) as raised, adapter:
        pass
    assert str(raised.value).startswith(
        "Acumatica offers the Default endpoint in version(s) 19.100.001, 30.100.001"
    )
    assert "this project supports 20.200.001, 22.200.001" in str(raised.value)
    assert [r.target for r in fake.requests] == ["login", "index", "logout"]
    assert fake.active_sessions == 0
