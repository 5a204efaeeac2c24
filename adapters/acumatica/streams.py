"""The Acumatica streams: declared in ``config/acumatica_streams.toml``, mapped by the code here.

The catalog (data, like the SAP one) gives each stream's entity, keys, change field and
``$select``/``$expand``; :data:`MAPPERS` gives the function that turns a record into a canonical
one. A stream's ``$select`` names exactly the fields its mapper reads; linked and detail entities
(contacts, attributes, order lines) come only through ``$expand``. Per endpoint version, both are
cut to what that version's published contract defines (:mod:`.contract`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from connector.adapters.acumatica import contract, mapping, odata
from connector.adapters.acumatica import values as v
from connector.adapters.catalog import field_list, read_catalog
from connector.erp.protocol import StreamSpec
from connector.erp.records import Record
from connector.errors import ConfigError

Mapper = Callable[[Mapping[str, Any], str], Record]

#: Acumatica stores times with millisecond precision; filters are rendered to the millisecond.
CURSOR_GRANULARITY = timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class AcumaticaStream:
    name: str
    entity: str
    record_type: Literal["party", "document", "case"]
    key_fields: tuple[str, ...]
    change_field: str  # the first candidate; see change_field_at
    select: tuple[str, ...]
    expand: tuple[str, ...]
    mapper: Mapper
    # change field candidates, the first one an endpoint version defines is its change field
    change_fields: tuple[str, ...] = ()
    # DAC fields read through $custom (View.Field), for what the endpoint has no field for
    custom: tuple[str, ...] = ()

    @property
    def spec(self) -> StreamSpec:
        return StreamSpec(self.name, self.record_type, self.change_field, CURSOR_GRANULARITY)

    def _defined(self, version: str) -> frozenset[str] | None:
        try:
            return frozenset(contract.entity_fields(version, self.entity))
        except KeyError:
            return None  # a version without a published contract: no gaps known

    def change_field_at(self, version: str | None) -> str:
        """The change field endpoint ``version`` defines (``LastModifiedDateTime`` on 26's SalesOrder)."""
        defined = self._defined(version) if version is not None else None
        if defined is not None:
            for name in self.change_fields or (self.change_field,):
                if name in defined:
                    return name
        return self.change_field

    def absent_at(self, version: str | None) -> tuple[str, ...]:
        """The selected fields endpoint ``version``'s contract does not define (none when unknown)."""
        defined = self._defined(version) if version is not None else None
        if defined is None:
            return ()
        alternatives = set(self.change_fields)
        return tuple(name for name in self.select if name not in defined and name not in alternatives)

    def select_at(self, version: str | None) -> tuple[str, ...]:
        """``select`` with only the fields endpoint ``version`` defines (one change field)."""
        defined = self._defined(version) if version is not None else None
        if defined is None:
            others = set(self.change_fields) - {self.change_field}
            return tuple(name for name in self.select if name not in others)
        changed = self.change_field_at(version)
        others = set(self.change_fields) - {changed}
        return tuple(name for name in self.select if name in defined and name not in others)

    def expand_at(self, version: str | None) -> tuple[str, ...]:
        """The ``$expand`` items for endpoint ``version``: each catalogued path whose every step the
        version defines, preceded by its parents (``MainContact,MainContact/Address``), as Acumatica
        documents nested expansion; a version without a contract gets every path."""
        known = version is not None and self._defined(version) is not None
        items: dict[str, None] = {}
        for path in self.expand:
            if known and contract.resolve(str(version), self.entity, path) is None:
                continue
            steps = path.split("/")
            for end in range(1, len(steps) + 1):
                items["/".join(steps[:end])] = None
        return tuple(items)

    def external_id(self, record: Mapping[str, Any]) -> str:
        """The canonical external id: the key values joined by "/" (``Invoice/AR004821``). A select
        value gives its description, as versions before 26.200.001 send the field: the id is the same
        on every endpoint version, so a server moved to 26 re-keys nothing (its ID, ``INV``, is what
        26's by-key URL takes: :meth:`select_keys_at`)."""
        return "/".join(v.required_label(record, field) for field in self.key_fields)

    def select_keys_at(self, version: str | None) -> tuple[str, ...]:
        """The key fields endpoint ``version`` types as select values (``Type`` of Invoice and Bill on
        26.200.001): their id part is a description, not the key the by-key URL or ``$filter`` take."""
        if version is None:
            return ()
        selects = []
        for name in self.key_fields:
            try:
                resolved = contract.resolve(version, self.entity, name)
            except KeyError:
                return ()  # a version without a published contract: its keys are taken as sent
            if resolved is not None and resolved[1].endswith("SingleSelectValue"):
                selects.append(name)
        return tuple(selects)

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


def version_key(version: str) -> tuple[int, ...]:
    """``"20.200.001"`` -> ``(20, 200, 1)``, for ordering endpoint versions."""
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        raise ConfigError(
            f"invalid Acumatica endpoint version {version!r}: expected e.g. 24.200.001"
        ) from None


CATALOG_FILE = "acumatica_streams.toml"
_RECORD_TYPES = ("party", "document", "case")

#: The code half of a stream: how its records become canonical ones, by stream name.
MAPPERS: dict[str, Mapper] = {
    "Customer": mapping.map_customer,
    "Vendor": mapping.map_vendor,
    "Invoice": mapping.map_invoice,
    "SalesOrder": mapping.map_sales_order,
    "Bill": mapping.map_bill,
    "Case": mapping.map_case,
}


def parse_streams(raw: dict[str, Any]) -> dict[str, AcumaticaStream]:
    """Validate a parsed catalog; an entry that cannot be read is a ConfigError naming it."""
    streams: dict[str, AcumaticaStream] = {}
    for name, spec in raw.get("streams", {}).items():
        where = f"acumatica catalog: streams.{name}"
        mapper = MAPPERS.get(name)
        if mapper is None:
            raise ConfigError(f"{where}: no mapper for this stream; known: {', '.join(MAPPERS)}")
        try:
            entity, record_type = str(spec["entity"]), spec["record_type"]
            changed = field_list(f"{where}.changed", spec["changed"], allow_text=True)
            key_fields = field_list(f"{where}.key", spec["key"], allow_text=True)
            select = field_list(f"{where}.select", spec["select"])
        except KeyError as exc:
            raise ConfigError(f"{where}: missing {exc.args[0]!r}") from None
        if record_type not in _RECORD_TYPES:
            raise ConfigError(f"{where}: record_type must be one of {', '.join(_RECORD_TYPES)}")
        if "lacking" in spec:
            raise ConfigError(
                f"{where}: 'lacking' is no longer read: a version's gaps come from its published contract"
            )
        absent = [f for f in (*key_fields, *changed) if f not in select]
        if absent:
            raise ConfigError(f"{where}: select must name the key and change fields; missing {absent}")
        streams[name] = AcumaticaStream(
            name=name,
            entity=entity,
            record_type=record_type,
            key_fields=key_fields,
            change_field=changed[0],
            select=select,
            expand=field_list(f"{where}.expand", spec.get("expand", [])),
            mapper=mapper,
            change_fields=changed,
            custom=tuple(
                odata.custom_field(f) for f in field_list(f"{where}.custom", spec.get("custom", []))
            ),
        )
    return streams


def load_streams(path: Path | None = None) -> dict[str, AcumaticaStream]:
    """The catalog at ``path`` (default: the shipped ``config/acumatica_streams.toml``)."""
    return parse_streams(read_catalog("acumatica catalog", path, CATALOG_FILE))


#: The shipped catalog, read once.
STREAMS: dict[str, AcumaticaStream] = load_streams()
