"""Decode OData v2 and v4 values into Python values, driven by the catalog's field types.

v2 writes ``Edm.DateTime`` as ``/Date(ms)/``, ``Edm.DateTimeOffset`` as ``/Date(ms+0000)/`` (the
milliseconds are the UTC instant; the suffix is an offset in minutes that does not move it),
``Edm.Time`` as an ISO 8601 duration ``PT17H49M05S`` and ``Edm.Decimal`` as a string. v4 writes
ISO 8601 dates, times and timestamps and decimals as numbers or strings. Both decode to the same
``date`` / ``datetime`` (aware UTC) / ``time`` / ``Decimal``, so the same data maps to equal records.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo

from connector.adapters.sap.catalog import FieldType
from connector.errors import ERPRecordError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_V2_DATE = re.compile(r"^/Date\((-?\d+)(?:([+-])(\d{4}))?\)/$")
_DURATION = re.compile(r"^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?$")


class MalformedValue(ERPRecordError):
    """A value that does not match its declared OData type."""


def _v2_instant(text: str) -> datetime | None:
    match = _V2_DATE.match(text)
    if match is None:
        return None
    return _EPOCH + timedelta(milliseconds=int(match.group(1)))


def _iso_instant(text: str) -> datetime:
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    # A v2 Edm.DateTime has no zone; SAP means UTC by it, so does this adapter.
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def decode_datetime(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedValue(f"expected a timestamp string, got {type(value).__name__}")
    instant = _v2_instant(value)
    if instant is not None:
        return instant
    try:
        return _iso_instant(value)
    except ValueError:
        raise MalformedValue(f"expected /Date(ms)/ or an ISO 8601 timestamp, got {value[:40]!r}") from None


def decode_date(value: Any) -> date | None:
    if value is None:
        return None
    if isinstance(value, str) and len(value) == 10:
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise MalformedValue(f"expected an ISO date, got {value!r}") from None
    instant = decode_datetime(value)
    return None if instant is None else instant.date()


def decode_time(value: Any) -> time | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedValue(f"expected a time string, got {type(value).__name__}")
    match = _DURATION.match(value)
    if match is not None and value != "PT":
        hours, minutes, seconds, fraction = match.groups()
        micro = int((fraction or "0").ljust(6, "0")[:6])
        total = timedelta(hours=int(hours or 0), minutes=int(minutes or 0), seconds=int(seconds or 0))
        if total >= timedelta(days=1):
            raise MalformedValue(f"Edm.Time {value!r} is not a time of day")
        return (datetime.min + total).time().replace(microsecond=micro)
    try:
        return time.fromisoformat(value)
    except ValueError:
        raise MalformedValue(f"expected PT..H..M..S or HH:MM:SS, got {value[:40]!r}") from None


def decode_decimal(value: Any) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        raise MalformedValue(f"expected a decimal, got {type(value).__name__}")
    try:
        result = Decimal(str(value)) if not isinstance(value, Decimal) else value
    except InvalidOperation:
        raise MalformedValue(f"expected a decimal, got {str(value)[:40]!r}") from None
    if not result.is_finite():
        raise MalformedValue(f"expected a finite decimal, got {value!r}")
    return result


def decode_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    raise MalformedValue(f"expected an integer, got {str(value)[:40]!r}")


def decode_bool(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise MalformedValue(f"expected true or false, got {str(value)[:40]!r}")


def decode_string(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return str(value)
    raise MalformedValue(f"expected a string, got {type(value).__name__}")


DECODERS: dict[FieldType, Callable[[Any], Any]] = {
    "string": decode_string,
    "bool": decode_bool,
    "int": decode_int,
    "decimal": decode_decimal,
    "date": decode_date,
    "datetime": decode_datetime,
    "time": decode_time,
}


def time_zone(name: str) -> tzinfo:
    """The zone called ``name``; UTC needs no time zone database."""
    return UTC if name.upper() == "UTC" else ZoneInfo(name)


def combine(day: date | None, at: time | None, zone: tzinfo = UTC) -> datetime | None:
    """SAP's local date and optional time of day (in ``zone``) as an aware UTC datetime."""
    if day is None:
        return None
    return datetime.combine(day, at or time(0), tzinfo=zone).astimezone(UTC)


_PLAIN = frozenset({str, bool, int, type(None)})


def jsonable(value: Any) -> Any:
    """Decoded values back to JSON-safe ones (for the raw record): ISO strings, decimal strings."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        return {k: v if type(v) in _PLAIN else jsonable(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _PLAIN else jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value
