"""Reading Acumatica's wrapped fields: ``{"value": x}`` unwrapped, ``{}`` as missing.

Each reader raises :class:`FieldError` naming the field when a value has the wrong shape, so the
mapper can report the record with its key instead of storing a half-empty row.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from connector.errors import ERPRecordError

_ABSENT: Any = object()


class FieldError(ERPRecordError):
    """A field whose value cannot be read as the type the mapping needs."""

    def __init__(self, name: str, expected: str, got: Any) -> None:
        self.field = name
        shown = type(got).__name__ if not isinstance(got, (str, int, float)) else repr(got)[:40]
        super().__init__(f"field {name}: expected {expected}, got {shown}")


def unwrap(record: Mapping[str, Any], name: str) -> Any:
    """The plain value of a field: ``{"value": x}`` -> x; ``{}``, absent or null -> None."""
    raw = record.get(name)
    if raw is None:
        return None
    if type(raw) is dict or isinstance(raw, Mapping):  # the exact-type test first: it is the hot path
        value = raw.get("value", _ABSENT)
        if value is not _ABSENT:
            return value
        if raw.get("error"):
            raise FieldError(name, "a value", f"an error: {str(raw['error'])[:80]}")
        return None
    if isinstance(raw, list):
        raise FieldError(name, "a single value", raw)
    return raw


def text(record: Mapping[str, Any], name: str) -> str | None:
    """A string field; blank text is None. Numbers are accepted as their text (ids, codes)."""
    raw = record.get(name)
    if type(raw) is dict:  # inline the common shapes (a third of a customer's mapping time was calls)
        value = raw.get("value", _ABSENT)
        if type(value) is str:
            return value.strip() or None
        if value is None or (value is _ABSENT and not raw.get("error")):
            return None
    elif raw is None:
        return None
    value = unwrap(record, name)
    if value is None:
        return None
    if type(value) is str:
        return value.strip() or None
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        raise FieldError(name, "text", value)
    return (value.strip() if isinstance(value, str) else str(value)) or None


def required_text(record: Mapping[str, Any], name: str) -> str:
    value = text(record, name)
    if value is None:
        raise FieldError(name, "a non-empty value", None)
    return value


def _select_value(record: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The inner object of a ``StringSingleSelectValue`` (``{"value": {"ID", "Description"}}``, new in
    26.200.001), or None when the field holds anything else."""
    raw = record.get(name)
    if type(raw) is dict:  # the hot path: plain JSON objects
        inner = raw.get("value")
        return inner if type(inner) is dict or (inner is not None and isinstance(inner, Mapping)) else None
    if raw is not None and isinstance(raw, Mapping):
        inner = raw.get("value")
        if isinstance(inner, Mapping):
            return inner
    return None


def select_code(record: Mapping[str, Any], name: str) -> str | None:
    """A select value's ``ID``; None when the field is not a select value (before 26.200.001)."""
    inner = _select_value(record, name)
    return None if inner is None else text(inner, "ID")


def code(record: Mapping[str, Any], name: str) -> str | None:
    """A code: a select value's ``ID`` (``INV``), else the field's text (older versions send the text)."""
    inner = _select_value(record, name)
    if inner is None:
        return text(record, name)
    return text(inner, "ID")


def required_code(record: Mapping[str, Any], name: str) -> str:
    value = code(record, name)
    if value is None:
        raise FieldError(name, "a non-empty value", None)
    return value


def label(record: Mapping[str, Any], name: str) -> str | None:
    """What a person reads: a select value's ``Description`` (``Open``; its ID when it has none),
    else the field's text, which is the description on versions before 26.200.001."""
    inner = _select_value(record, name)
    if inner is None:
        return text(record, name)
    return text(inner, "Description") or text(inner, "ID")


def required_label(record: Mapping[str, Any], name: str) -> str:
    value = label(record, name)
    if value is None:
        raise FieldError(name, "a non-empty value", None)
    return value


def custom_text(record: Mapping[str, Any], view_field: str) -> str | None:
    """One ``$custom`` field (``Document.CuryID``) as text; None when the response lacks it."""
    custom = record.get("custom")
    if not isinstance(custom, Mapping):
        return None
    view, _, name = view_field.partition(".")
    fields = custom.get(view)
    if not isinstance(fields, Mapping):
        return None
    return text(fields, name)


def money(record: Mapping[str, Any], name: str) -> Decimal | None:
    """A decimal field as an exact Decimal (JSON numbers arrive as Decimals; a float is read via its repr)."""
    value = unwrap(record, name)
    if value is None:
        return None
    if isinstance(value, bool):
        raise FieldError(name, "a number", value)
    try:
        if isinstance(value, (int, float, Decimal)):
            result = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        elif isinstance(value, str) and value.strip():
            result = Decimal(value.strip())
        else:
            raise FieldError(name, "a number", value)
    except InvalidOperation:
        raise FieldError(name, "a number", value) from None
    if not result.is_finite():
        raise FieldError(name, "a finite number", value)
    return result


def boolean(record: Mapping[str, Any], name: str) -> bool | None:
    value = unwrap(record, name)
    if value is None or isinstance(value, bool):
        return value
    raise FieldError(name, "true or false", value)


def timestamp(record: Mapping[str, Any], name: str) -> datetime | None:
    """An ISO timestamp with its offset, as aware UTC. A timestamp without offset is refused."""
    value = unwrap(record, name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise FieldError(name, "an ISO 8601 timestamp", value)
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise FieldError(name, "an ISO 8601 timestamp", value) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise FieldError(name, "a timestamp with a UTC offset", value)
    return parsed.astimezone(UTC)


def calendar_date(record: Mapping[str, Any], name: str) -> date | None:
    """A date field: a midnight timestamp (``DateTimeValue``) or, from 26.200.001, ``yyyy-MM-dd``
    (``DateOnlyValue``): the calendar date as written, not shifted."""
    value = unwrap(record, name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) < 10:
        raise FieldError(name, "an ISO 8601 date", value)
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        raise FieldError(name, "an ISO 8601 date", value) from None


def linked(record: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """An expanded linked entity (``MainContact``), or None when absent or empty."""
    value = record.get(name)
    if value is None or (isinstance(value, Mapping) and not value):
        return None
    if not isinstance(value, Mapping):
        raise FieldError(name, "an object", value)
    return value


def details(record: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    """An expanded detail collection (``Contacts``, ``Attributes``), [] when absent."""
    value = record.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise FieldError(name, "a list of objects", value)
    return value


def custom_fields(record: Mapping[str, Any]) -> dict[str, str | None]:
    """``custom: {View: {Field: {"type", "value"}}}`` flattened to ``{"View.Field": "value"}``."""
    custom = record.get("custom")
    if custom is None:
        return {}
    if not isinstance(custom, Mapping):
        raise FieldError("custom", "an object", custom)
    result: dict[str, str | None] = {}
    for view, fields in custom.items():
        if not isinstance(fields, Mapping):
            raise FieldError(f"custom.{view}", "an object", fields)
        for name in fields:
            value = text(fields, name)
            result[f"{view}.{name}"] = value
    return result


_TAG = re.compile(r"<[^>]+>")
_BREAK = re.compile(r"<\s*(br|/p|/div|/li)\s*/?>", re.IGNORECASE)


def plain_text(value: str | None) -> str | None:
    """Rich-text fields (case descriptions) arrive as HTML: keep the words, drop the markup."""
    if value is None or "<" not in value:
        return value
    stripped = _TAG.sub("", _BREAK.sub("\n", value))
    lines = [" ".join(html.unescape(line).split()) for line in stripped.splitlines()]
    result = "\n".join(line for line in lines if line)
    return result or None
