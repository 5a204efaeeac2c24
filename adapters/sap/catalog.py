"""The SAP stream catalog (``config/sap_streams.toml``): services, entity types and streams.

The catalog is data, not code (as the Acumatica one, ``config/acumatica_streams.toml``), so a
customer adds a field or an expansion without a release. It is
validated once at load: a stream that names an unknown service, entity or navigation, or a field
with an unknown type, is a :class:`~connector.errors.ConfigError` naming the offending entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, cast, get_args

from connector.adapters.catalog import read_catalog
from connector.errors import ConfigError

FieldType = Literal["string", "bool", "int", "decimal", "date", "datetime", "time"]
ODataVersion = Literal["v2", "v4"]
CATALOG_FILE = "sap_streams.toml"
_FIELD_TYPES = frozenset(get_args(FieldType))


@dataclass(frozen=True, slots=True)
class EntityType:
    """Declared fields (name -> type) and navigation properties (name -> target entity type)."""

    name: str
    fields: dict[str, FieldType]
    navigation: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Cursor:
    """A change or creation stamp: a ``datetime`` field, or a ``date`` field plus an optional time."""

    field: str
    kind: Literal["date", "datetime"]
    time_field: str | None = None


@dataclass(frozen=True, slots=True)
class StreamDef:
    """One stream of the catalog.

    ``keys`` are the entity's key fields; a record's external id joins their values with ``/``
    (``1010/2026/1800000001/001`` for an accounting document item). ``scope`` is a ``$filter``
    every read and key scan sends; ``open_filter`` one that a full read and a key scan add, for
    streams that hold only what is open (a delta read must also see what stopped being open).
    ``also_changed`` are further stamps a delta read asks for (a clearing date) and the
    watermark counts.
    """

    name: str
    service: str
    entity_set: str
    record_type: Literal["party", "document"]
    keys: tuple[str, ...]
    changed: Cursor
    created: Cursor | None
    day_granular: bool
    expand: tuple[str, ...]
    select: bool = True  # False: ask for every field (for entities whose field list is unverified)
    scope: str | None = None
    open_filter: str | None = None
    also_changed: tuple[Cursor, ...] = ()
    version: ODataVersion = "v2"  # the OData version this definition is read with

    @property
    def cursors(self) -> tuple[Cursor, ...]:
        """Every stamp a delta read filters on: changed, created, then the further ones."""
        return (self.changed, *((self.created,) if self.created else ()), *self.also_changed)

    def key_of(self, row: Any) -> str | None:
        """The external id of a raw or decoded row, or None when a key part is missing or blank."""
        if not isinstance(row, dict):
            return None
        parts = [row.get(name) for name in self.keys]
        texts = [p for p in parts if isinstance(p, str) and p.strip()]
        return "/".join(texts) if len(texts) == len(parts) else None

    def key_values(self, external_id: str) -> dict[str, str]:
        """The key fields of an external id (the inverse of :meth:`key_of`)."""
        parts = external_id.split("/") if len(self.keys) > 1 else [external_id]
        if len(parts) != len(self.keys):
            raise ValueError(f"{self.name} keys look like {'/'.join(self.keys)}; got {external_id!r}")
        return dict(zip(self.keys, parts, strict=True))


@dataclass(frozen=True, slots=True)
class Catalog:
    """``streams`` are read over OData v2; ``v4_streams`` are the streams whose service SAP also
    publishes in v4, under v4's own entity-set, navigation and field names (``[streams.X.v4]``)."""

    services: dict[str, dict[ODataVersion, str]]
    entities: dict[str, EntityType]
    streams: dict[str, StreamDef]
    v4_streams: dict[str, StreamDef] = field(default_factory=dict)

    def service_path(self, service: str, version: ODataVersion) -> str:
        return self.services[service][version]

    def stream_for(self, name: str, version: ODataVersion) -> StreamDef:
        """The definition of ``name`` read with ``version``: its v4 form when the tenant speaks v4
        and the stream has one, else its v2 form (business partners and open items: SAP publishes
        no v4 service for them)."""
        if version == "v4" and name in self.v4_streams:
            return self.v4_streams[name]
        return self.streams[name]

    def entity(self, name: str) -> EntityType:
        return self.entities[name]


def _cursor(where: str, raw: Any) -> Cursor:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table like {{ date = 'Field' }} or {{ datetime = 'Field' }}")
    if "datetime" in raw:
        return Cursor(field=str(raw["datetime"]), kind="datetime")
    if "date" in raw:
        time_field = raw.get("time")
        return Cursor(field=str(raw["date"]), kind="date", time_field=str(time_field) if time_field else None)
    raise ConfigError(f"{where}: names neither a 'date' nor a 'datetime' field")


def _entities(raw: dict[str, Any]) -> dict[str, EntityType]:
    entities: dict[str, EntityType] = {}
    for name, spec in raw.items():
        fields = spec.get("fields", {})
        for fname, ftype in fields.items():
            if ftype not in _FIELD_TYPES:
                raise ConfigError(
                    f"sap catalog: entities.{name}.fields.{fname} has type {ftype!r};"
                    f" expected one of {', '.join(sorted(_FIELD_TYPES))}"
                )
        entities[name] = EntityType(
            name=name,
            fields=cast(dict[str, FieldType], dict(fields)),
            navigation={str(k): str(v) for k, v in spec.get("navigation", {}).items()},
        )
    for entity in entities.values():
        for nav, target in entity.navigation.items():
            if target not in entities:
                raise ConfigError(f"sap catalog: entities.{entity.name} navigation {nav} -> unknown {target}")
    return entities


def _check_expand(stream: str, path: str, root: str, entities: dict[str, EntityType]) -> None:
    current = entities[root]
    for step in path.split("/"):
        target = current.navigation.get(step)
        if target is None:
            raise ConfigError(
                f"sap catalog: streams.{stream}.expand {path!r}: {current.name} has no navigation {step!r}"
            )
        current = entities[target]


def _stream(
    name: str,
    spec: dict[str, Any],
    services: dict[str, dict[ODataVersion, str]],
    entities: dict[str, EntityType],
    version: ODataVersion,
) -> StreamDef:
    where = f"sap catalog: streams.{name}" + (".v4" if version == "v4" else "")
    try:
        service, entity_set = str(spec["service"]), str(spec["entity_set"])
        record_type, raw_key = spec["record_type"], spec["key"]
        changed = _cursor(f"{where}.changed", spec["changed"])
    except KeyError as exc:
        raise ConfigError(f"{where}: missing {exc.args[0]!r}") from None
    if service not in services:
        raise ConfigError(f"{where}: unknown service {service!r}")
    if entity_set not in entities:
        raise ConfigError(f"{where}: unknown entity {entity_set!r}")
    if record_type not in ("party", "document"):
        raise ConfigError(f"{where}: record_type must be 'party' or 'document'")
    expand = tuple(str(p) for p in spec.get("expand", []))
    for path in expand:
        _check_expand(name, path, entity_set, entities)
    fields = entities[entity_set].fields
    created = _cursor(f"{where}.created", spec["created"]) if "created" in spec else None
    also = tuple(_cursor(f"{where}.also_changed", c) for c in spec.get("also_changed", []))
    for cursor in (changed, created, *also):
        for fname in (cursor.field, cursor.time_field) if cursor else ():
            if fname is not None and fname not in fields:
                raise ConfigError(f"{where}: cursor field {fname!r} is not a field of {entity_set}")
    keys = (raw_key,) if isinstance(raw_key, str) else tuple(str(k) for k in raw_key)
    if not keys or any(k not in fields for k in keys):
        raise ConfigError(f"{where}: key {raw_key!r} must name fields of {entity_set}")
    return StreamDef(
        name=name,
        service=service,
        entity_set=entity_set,
        record_type=record_type,
        keys=keys,
        changed=changed,
        created=created,
        day_granular=spec.get("granularity") == "day" or changed.kind == "date",
        expand=expand,
        select=bool(spec.get("select", True)),
        scope=str(spec["scope"]) if "scope" in spec else None,
        open_filter=str(spec["open_filter"]) if "open_filter" in spec else None,
        also_changed=also,
        version=version,
    )


def parse_catalog(raw: dict[str, Any]) -> Catalog:
    """Validate a parsed TOML document into a :class:`Catalog`."""
    services: dict[str, dict[ODataVersion, str]] = {}
    for name, paths in raw.get("services", {}).items():
        if not isinstance(paths, dict) or "v2" not in paths:
            raise ConfigError(f"sap catalog: services.{name} needs at least a 'v2' path")
        services[name] = {cast(ODataVersion, v): str(p).rstrip("/") for v, p in paths.items()}
    entities = _entities(raw.get("entities", {}))
    streams: dict[str, StreamDef] = {}
    v4_streams: dict[str, StreamDef] = {}
    for name, spec in raw.get("streams", {}).items():
        streams[name] = _stream(name, spec, services, entities, "v2")
        v4 = spec.get("v4")
        if v4 is not None:
            if not isinstance(v4, dict):
                raise ConfigError(f"sap catalog: streams.{name}.v4 must be a table")
            if "v4" not in services.get(str(spec.get("service")), {}):
                raise ConfigError(f"sap catalog: streams.{name}.v4 needs a v4 path of its service")
            merged = {**{k: v for k, v in spec.items() if k != "v4"}, **v4}
            v4_streams[name] = _stream(name, merged, services, entities, "v4")
    return Catalog(services=services, entities=entities, streams=streams, v4_streams=v4_streams)


def load_catalog(path: Path | None = None) -> Catalog:
    """The catalog from ``path`` (default: the shipped ``config/sap_streams.toml``)."""
    if path is None:
        return _default_catalog()
    return parse_catalog(read_catalog("sap catalog", path, CATALOG_FILE))


@lru_cache(maxsize=1)
def _default_catalog() -> Catalog:
    return parse_catalog(read_catalog("sap catalog", None, CATALOG_FILE))
