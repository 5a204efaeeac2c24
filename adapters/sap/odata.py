"""OData v2 and v4 response envelopes: collections, single entities, expansions and error bodies.

v2 collection ``{"d": {"results": [...], "__next", "__count"}}``, single entity ``{"d": {...}}``;
v4 collection ``{"value": [...], "@odata.nextLink", "@odata.count"}``. Entities are decoded by the
catalog's field types into one version-neutral shape: annotations (``__metadata``, ``@odata.*``)
and unexpanded navigation (``__deferred``) dropped, expanded to-many (``{"results": [...]}`` in v2,
a plain list in v4) turned into a list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from connector.adapters.http import parse_json_exact
from connector.adapters.sap.catalog import Catalog, EntityType, ODataVersion
from connector.adapters.sap.values import DECODERS, MalformedValue
from connector.errors import ERPProtocolError

Entity = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CollectionPage:
    """One response of a collection read, still undecoded."""

    rows: list[dict[str, Any]]
    next_link: str | None = None
    count: int | None = None


@dataclass(frozen=True, slots=True)
class ODataErrorInfo:
    """The ``error`` object of an OData error body (v2 or v4)."""

    code: str | None
    message: str | None
    details: list[dict[str, Any]] = field(default_factory=list)
    transaction_id: str | None = None


def parse_json(content: bytes, *, what: str) -> Any:
    """JSON with decimals kept exact; a body that is not JSON is a protocol error."""
    try:
        return parse_json_exact(content)
    except (ValueError, UnicodeDecodeError):
        snippet = content[:80].decode("utf-8", "replace")
        raise ERPProtocolError(
            f"SAP sent a {what} that is not valid JSON (starts {snippet!r}); check the service URL"
        ) from None


def _count(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ERPProtocolError(f"SAP sent a non-numeric count {str(value)[:20]!r}") from None


def parse_collection(body: Any, version: ODataVersion) -> CollectionPage:
    """The rows, next link and count of a collection response; wrong shapes are protocol errors."""
    if version == "v2":
        container = body.get("d") if isinstance(body, dict) else None
        if isinstance(container, dict) and isinstance(container.get("results"), list):
            return CollectionPage(
                container["results"], container.get("__next"), _count(container.get("__count"))
            )
        if isinstance(container, list):  # very old gateways send "d": [...]
            return CollectionPage(container)
        raise ERPProtocolError("expected an OData v2 collection {'d': {'results': [...]}}; got another shape")
    if isinstance(body, dict) and isinstance(body.get("value"), list):
        return CollectionPage(body["value"], body.get("@odata.nextLink"), _count(body.get("@odata.count")))
    raise ERPProtocolError("expected an OData v4 collection {'value': [...]}; got another shape")


def parse_single(body: Any, version: ODataVersion) -> dict[str, Any]:
    """The entity of a single-entity response (``{"d": {...}}`` in v2, the bare object in v4)."""
    entity = body.get("d") if version == "v2" and isinstance(body, dict) else body
    if not isinstance(entity, dict) or "results" in entity:
        raise ERPProtocolError(f"expected a single OData {version} entity; got another shape")
    return entity


def parse_error(content: bytes) -> ODataErrorInfo | None:
    """The OData error in a response body, or None when the body is not one (HTML logon pages...)."""
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    if isinstance(message, dict):  # v2: {"lang": "en", "value": "..."}
        message = message.get("value")
    inner_raw = error.get("innererror")
    inner: dict[str, Any] = inner_raw if isinstance(inner_raw, dict) else {}
    details = (
        inner.get("errordetails") if isinstance(inner.get("errordetails"), list) else error.get("details")
    )
    return ODataErrorInfo(
        code=str(error["code"]) if error.get("code") is not None else None,
        message=str(message) if message is not None else None,
        details=[d for d in details or [] if isinstance(d, dict)],
        transaction_id=str(inner["transactionid"]) if inner.get("transactionid") else None,
    )


def decode_entity(row: dict[str, Any], entity: EntityType, catalog: Catalog) -> Entity:
    """One entity in the version-neutral shape. Raises MalformedValue naming the bad field."""
    out: Entity = {}
    fields, navigation = entity.fields, entity.navigation
    for name, value in row.items():
        if "@" in name or name == "__metadata":  # annotations: __metadata, @odata.etag, Field@odata.type
            continue
        ftype = fields.get(name)
        if ftype is not None and (value is None or (ftype == "string" and type(value) is str)):
            out[name] = value  # the common case, without a decoder call
            continue
        target = navigation.get(name)
        if target is not None:
            decoded = _decode_navigation(name, value, catalog.entity(target), catalog)
            if decoded is not _DEFERRED:
                out[name] = decoded
            continue
        if ftype is None:
            if isinstance(value, dict) and "__deferred" in value:
                continue
            out[name] = value
            continue
        try:
            out[name] = DECODERS[ftype](value)
        except MalformedValue as exc:
            raise MalformedValue(f"{entity.name}.{name}: {exc}") from None
    return out


_DEFERRED = object()


def _decode_navigation(name: str, value: Any, target: EntityType, catalog: Catalog) -> Any:
    if value is None:
        return None
    if isinstance(value, dict) and "__deferred" in value:
        return _DEFERRED
    if isinstance(value, dict) and isinstance(value.get("results"), list):
        value = value["results"]
    if isinstance(value, list):
        return [decode_entity(_require_object(name, v), target, catalog) for v in value]
    return decode_entity(_require_object(name, value), target, catalog)


def _require_object(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedValue(f"navigation {name}: expected an object, got {type(value).__name__}")
    return value
