"""Canonical records: the ERP-neutral shape every adapter maps into and the store persists.

Money is ``Decimal``; every datetime is timezone-aware UTC (constructors reject naive ones).
Each record keeps its raw source JSON and exposes a content hash that ignores volatile fields,
so an unchanged record is skipped on upsert.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Literal

import orjson

from connector.errors import ERPRecordError

PartyKind = Literal["customer", "vendor"]
# "open_item": an FI line item of a customer or supplier account (SAP), the carrier of open amounts
DocType = Literal["ar_invoice", "ap_bill", "sales_order", "credit_memo", "open_item"]


def _require_aware(name: str, value: datetime | None) -> None:
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise ERPRecordError(f"{name} must be timezone-aware, got a naive datetime")


@dataclass(frozen=True, slots=True)
class Contact:
    role: str  # "main", "billing", "primary", "remittance", "contact"
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    external_id: str | None = None


@dataclass(frozen=True, slots=True)
class Address:
    role: str  # "main", "billing", "shipping", ...
    line1: str | None = None
    line2: str | None = None
    city: str | None = None
    region: str | None = None
    postal_code: str | None = None
    country: str | None = None


@dataclass(frozen=True, slots=True)
class PartyRecord:
    """A customer or vendor. Key: (tenant, kind, external_id)."""

    tenant: str
    kind: PartyKind
    external_id: str
    name: str | None = None
    status: str | None = None
    currency: str | None = None
    credit_limit: Decimal | None = None
    terms: str | None = None
    tax_zone: str | None = None
    tax_id: str | None = None
    party_class: str | None = None
    email: str | None = None
    phone: str | None = None
    contacts: tuple[Contact, ...] = ()
    addresses: tuple[Address, ...] = ()
    attributes: dict[str, str | None] = field(default_factory=dict)  # ERP attributes + custom fields
    extra: dict[str, Any] = field(default_factory=dict)  # mapped facts without a column
    source_modified_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.external_id or not self.external_id.strip():
            raise ERPRecordError("party external_id is empty")
        _require_aware("source_modified_at", self.source_modified_at)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.tenant, self.kind, self.external_id)


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """An AR invoice, AP bill, sales order or credit memo. Key: (tenant, doc_type, external_id)."""

    tenant: str
    doc_type: DocType
    external_id: str  # unique within doc_type, e.g. "INV/AR001234" or "SO/000123"
    number: str
    party_kind: PartyKind
    party_external_id: str
    status: str | None = None
    currency: str | None = None
    amount: Decimal | None = None
    balance: Decimal | None = None
    doc_date: date | None = None
    due_date: date | None = None
    description: str | None = None
    customer_ref: str | None = None  # customer's PO / vendor's reference
    is_open: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    source_modified_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.external_id or not self.external_id.strip():
            raise ERPRecordError("document external_id is empty")
        _require_aware("source_modified_at", self.source_modified_at)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.tenant, self.doc_type, self.external_id)


@dataclass(frozen=True, slots=True)
class CaseRecord:
    """A CRM case. Key: (tenant, 'case', external_id)."""

    tenant: str
    external_id: str
    customer_external_id: str | None
    subject: str | None = None
    status: str | None = None
    priority: str | None = None
    case_class: str | None = None
    reported_at: datetime | None = None
    closed_at: datetime | None = None
    description: str | None = None
    resolution: str | None = None
    is_closed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    source_modified_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.external_id or not self.external_id.strip():
            raise ERPRecordError("case external_id is empty")
        for name in ("reported_at", "closed_at", "source_modified_at"):
            _require_aware(name, getattr(self, name))

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.tenant, "case", self.external_id)


Record = PartyRecord | DocumentRecord | CaseRecord


def _leaf_text(value: Any) -> str | None:
    """Decimal, datetime and date as the hashed text renders them; None for any other value."""
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value == value else "NaN"
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return None


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    text = _leaf_text(value)
    if text is not None:
        return text
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def content_hash(record: Record) -> str:
    """SHA-256 of the mapped content. Ignores ``raw`` (it carries volatile row numbers and links).

    Reads the fields directly instead of ``asdict``, which would deep-copy ``raw`` only to drop it
    (that copy was a third of a full sync's time); the hash is the same.
    """
    names = _HASHED.get(type(record)) or _hashed_fields(type(record))
    data = {name: getattr(record, name) for name in names}
    return hashlib.sha256(canonical_json(data)).hexdigest()


def canonical_json(data: dict[str, Any]) -> bytes:
    """The hashed text: ``json.dumps(_jsonable(data), sort_keys=True, separators=(",", ":"))``.

    Built by orjson when it gives the very same bytes (a third of the cost): no float anywhere
    (orjson and ``repr`` format some differently), every key a str, and non-ASCII characters
    escaped afterwards as ``ensure_ascii`` does. Anything else takes the stdlib path, so a hash
    never depends on which path computed it.
    """
    if _float_free(data):
        try:
            out = orjson.dumps(data, option=_CANONICAL, default=_encode_leaf)
        except TypeError:  # orjson.JSONEncodeError too: non-str keys, huge ints, unknown types
            pass
        else:
            if out.isascii() and b"\x7f" not in out:
                return out
            return _NON_ASCII.sub(_escape_char, out.decode()).encode()
    try:  # the C encoder; the same text as _jsonable + dumps for the str-keyed dicts records carry
        payload = json.dumps(data, sort_keys=True, separators=(",", ":"), default=_encode_leaf)
    except TypeError:  # a dict with keys of mixed types: canonicalise in Python
        payload = json.dumps(_jsonable(data), sort_keys=True, separators=(",", ":"))
    return payload.encode()


_CANONICAL = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
_NON_ASCII = re.compile("[\x7f-\U0010ffff]")  # orjson already escapes the control characters
_PLAIN = frozenset({str, type(None), bool, int, Decimal, datetime, date, Contact, Address})


def _escape_char(match: re.Match[str]) -> str:
    """``ensure_ascii``'s escape: ``\\uXXXX`` in lowercase hex, a surrogate pair above the BMP."""
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def _float_free(value: Any) -> bool:
    """Whether no float hides in ``value``: dicts, lists and tuples are walked.

    Contacts and addresses (typed text fields) are not walked: a float there, which no mapping
    produces, would still hash deterministically, only not as the stdlib path would.
    """
    cls = type(value)
    if cls is dict:
        items = value.values()
    elif cls is list or cls is tuple:
        items = value
    else:
        return not isinstance(value, float)
    if _PLAIN.issuperset(map(type, items)):  # the common case, without a Python-level loop
        return True
    return all(_float_free(v) for v in items if type(v) not in _PLAIN)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names, computed once: ``fields()`` per value was a fifth of the hash."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _hashed_fields(cls: type) -> tuple[str, ...]:
    return tuple(name for name in _field_names(cls) if name != "raw")


for _cls in (Contact, Address, PartyRecord, DocumentRecord, CaseRecord):
    _field_names(_cls)
_HASHED = {cls: _hashed_fields(cls) for cls in (PartyRecord, DocumentRecord, CaseRecord)}


def _encode_leaf(value: Any) -> Any:
    """``json.dumps`` default: the values JSON lacks, rendered exactly as :func:`_jsonable` does."""
    known = _FIELD_NAMES.get(type(value))  # the record's own dataclasses, field names cached
    if known is not None:
        return {name: getattr(value, name) for name in known}
    text = _leaf_text(value)
    if text is not None:
        return text
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    raise TypeError(f"cannot hash a {type(value).__name__}")


@dataclass(slots=True)
class Page:
    """One page of a stream as read from the ERP, already mapped.

    ``max_modified`` is the largest source modification time on the page *before* any record was
    skipped, so the watermark never stalls on a malformed record. ``problems`` lists skipped records;
    ``notes`` say which rows the adapter passed over on purpose (an SAP partner with neither a
    customer nor a supplier role), so the run shows them instead of dropping them silently.
    """

    stream: str
    number: int
    records: list[Record]
    max_modified: datetime | None = None
    problems: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    requests: int = 1
    # content_hash of each record, when a consumer computed them ahead (the sync does so on its
    # read-ahead thread, which waits for the writer anyway); None: compute when needed
    hashes: list[str] | None = None
