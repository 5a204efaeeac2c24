"""Build OData query options: literals, key predicates, the delta ``$filter``, ``$select``/``$expand``.

Every value that goes into a ``$filter`` or a key predicate passes through a literal function here
(strings have their quotes doubled), so no record key or setting can change a query's meaning.
v2 and v4 differ in literal syntax (``datetime'2024-05-01T00:00:00'`` vs ``2024-05-01``) and in
nested expansion (``to_A/to_B`` vs ``to_A($expand=to_B)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, tzinfo

from connector.adapters.sap.catalog import Catalog, Cursor, ODataVersion, StreamDef


def string_literal(value: str) -> str:
    """``'O''Brien'``: single quotes doubled, as OData requires."""
    return "'" + value.replace("'", "''") + "'"


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("OData timestamps need an aware datetime; got a naive one")
    return value.astimezone(UTC)


def date_literal(value: date, version: ODataVersion) -> str:
    """A day: ``datetime'YYYY-MM-DDT00:00:00'`` (v2 Edm.DateTime) or ``YYYY-MM-DD`` (v4 Edm.Date)."""
    day = value.date() if isinstance(value, datetime) else value
    return f"datetime'{day.isoformat()}T00:00:00'" if version == "v2" else day.isoformat()


def datetimeoffset_literal(value: datetime, version: ODataVersion) -> str:
    """An instant in UTC: ``datetimeoffset'...Z'`` (v2) or the bare ISO form (v4)."""
    text = _utc(value).strftime("%Y-%m-%dT%H:%M:%S") + _fraction(_utc(value)) + "Z"
    return f"datetimeoffset'{text}'" if version == "v2" else text


def _fraction(value: datetime) -> str:
    return f".{value.microsecond // 1000:03d}" if value.microsecond else ""


def key_predicate(keys: Mapping[str, str]) -> str:
    """``('17100001')`` for one key, ``(Customer='1',CompanyCode='1010')`` for several."""
    if len(keys) == 1:
        return "(" + string_literal(next(iter(keys.values()))) + ")"
    return "(" + ",".join(f"{name}={string_literal(value)}" for name, value in keys.items()) + ")"


def _since_term(cursor: Cursor, since: datetime, version: ODataVersion, zone: tzinfo) -> str:
    if cursor.kind == "date":
        return f"{cursor.field} ge {date_literal(_utc(since).astimezone(zone).date(), version)}"
    return f"{cursor.field} ge {datetimeoffset_literal(since, version)}"


def delta_filter(stream: StreamDef, since: datetime, version: ODataVersion, zone: tzinfo = UTC) -> str:
    """Records changed or created at or after ``since`` (closed start).

    Day-granular fields compare whole days of SAP's local calendar (``zone``), so the boundary day is
    read again; a never-changed record (null change date) is caught by its creation date.
    """
    terms = [_since_term(cursor, since, version, zone) for cursor in stream.cursors]
    return terms[0] if len(terms) == 1 else "(" + " or ".join(terms) + ")"


def read_filter(
    stream: StreamDef, since: datetime | None, version: ODataVersion, zone: tzinfo = UTC
) -> str | None:
    """The ``$filter`` of a read: the stream's scope, and the delta terms (``since`` given) or,
    for a full read, the stream's open filter; None when there is nothing to filter on."""
    window = delta_filter(stream, since, version, zone) if since is not None else stream.open_filter
    return all_of(stream.scope, window)


def all_of(*terms: str | None) -> str | None:
    """The conjunction of the given ``$filter`` terms (each parenthesised when there are several)."""
    present = [t for t in terms if t]
    if len(present) <= 1:
        return present[0] if present else None
    return " and ".join(f"({t})" for t in present)


def expanded_entities(stream: StreamDef, catalog: Catalog) -> dict[str, str]:
    """Every expansion path and its prefixes (``to_A``, ``to_A/to_B``) -> the entity it reaches."""
    reached: dict[str, str] = {}
    for path in stream.expand:
        entity = catalog.entity(stream.entity_set)
        steps: list[str] = []
        for step in path.split("/"):
            steps.append(step)
            entity = catalog.entity(entity.navigation[step])
            reached["/".join(steps)] = entity.name
    return reached


def select_fields(stream: StreamDef, catalog: Catalog, version: ODataVersion) -> str:
    """Declared fields of the root entity; v2 also lists each expanded entity's declared fields by
    path (``to_Item/Material``), so an expansion brings only those (without them v2 drops it).
    v4 selects inside ``$expand`` instead (see :func:`expand_option`)."""
    names = list(catalog.entity(stream.entity_set).fields)
    if version == "v2":
        for path, entity in expanded_entities(stream, catalog).items():
            names += [f"{path}/{field}" for field in catalog.entity(entity).fields]
    return ",".join(names)


def expand_option(
    paths: tuple[str, ...],
    version: ODataVersion,
    catalog: Catalog | None = None,
    stream: StreamDef | None = None,
) -> str:
    """``to_A/to_B,to_A/to_C`` in v2; ``to_A($expand=to_B,to_C)`` in v4, where each expanded entity
    also selects its declared fields (``_Item($select=SalesOrderItem,Product)``) when the catalog
    and the stream are given."""
    if version == "v2":
        return ",".join(paths)
    tree: dict[str, dict[str, object]] = {}
    for path in paths:
        node = tree
        for step in path.split("/"):
            node = node.setdefault(step, {})  # type: ignore[assignment]
    selected: dict[str, list[str]] = {}
    if catalog is not None and stream is not None and stream.select:
        reached = expanded_entities(stream, catalog)
        selected = {path: list(catalog.entity(entity).fields) for path, entity in reached.items()}
    return _render_v4(tree, selected, "")


def _render_v4(tree: Mapping[str, object], selected: Mapping[str, list[str]], prefix: str) -> str:
    parts = []
    for name, children in tree.items():
        assert isinstance(children, Mapping)
        path = prefix + name
        options = []
        if path in selected:
            options.append("$select=" + ",".join(selected[path]))
        if children:
            options.append("$expand=" + _render_v4(children, selected, path + "/"))
        parts.append(f"{name}({';'.join(options)})" if options else name)
    return ",".join(parts)
