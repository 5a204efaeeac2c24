"""Encode the fake's typed rows as SAP sends them: OData v2 or v4 JSON, and the real error bodies.

v2: ``/Date(ms)/`` for dates, ``/Date(ms+0000)/`` for timestamps, ``PT17H49M05S`` for times,
decimals as strings, ``__metadata`` on every entity, ``__deferred`` for navigation not expanded,
``{"results": [...]}`` for expanded to-many. v4: ISO dates and timestamps, ``HH:MM:SS`` times,
decimals as JSON numbers written with their scale (``5142.10``; strings when the client asked for
``IEEE754Compatible=true``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any, Literal

import orjson

Version = Literal["v2", "v4"]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ms(moment: datetime) -> int:
    delta = moment.astimezone(UTC) - _EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def v2_value(value: Any) -> Any:
    kind = type(value)
    if kind is str or value is None or kind is bool or kind is int:
        return value
    if kind is Decimal:
        return str(value)
    if kind is datetime:
        return f"/Date({_ms(value)}+0000)/"
    if kind is date:
        return f"/Date({_ms(datetime(value.year, value.month, value.day, tzinfo=UTC))})/"
    if kind is time:
        return f"PT{value.hour:02d}H{value.minute:02d}M{value.second:02d}S"
    return value


def _iso_instant(value: datetime) -> str:
    utc = value.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


def v4_encoder(decimals_as_strings: bool) -> Callable[[Any], Any]:
    def encode(value: Any) -> Any:
        kind = type(value)
        if kind is str or value is None or kind is bool or kind is int:
            return value
        if kind is Decimal:
            text = format(value, "f")
            return text if decimals_as_strings else orjson.Fragment(text)
        if kind is datetime:
            return _iso_instant(value)
        if kind is date:
            return value.isoformat()
        if kind is time:
            return value.strftime("%H:%M:%S")
        return value

    return encode


def dumps(payload: Any, encode: Callable[[Any], Any] = str) -> bytes:
    """Compact UTF-8 JSON, as SAP sends it. ``encode`` turns dates, times and decimals into OData
    values: the encoder calls it only for them, so rows need no per-field Python pass."""
    return orjson.dumps(payload, default=encode, option=orjson.OPT_PASSTHROUGH_DATETIME)


def error_body(
    version: Version, code: str, message: str, *, details: list[dict[str, str]] | None = None
) -> bytes:
    """The error body SAP Gateway sends (v2) or the v4 service runtime sends."""
    if version == "v2":
        return dumps(
            {
                "error": {
                    "code": code,
                    "message": {"lang": "en", "value": message},
                    "innererror": {
                        "application": {"component_id": "LO-MD-BP", "service_namespace": "/SAP/"},
                        "transactionid": uuid.uuid4().hex.upper(),
                        "timestamp": "",
                        "errordetails": details or [],
                    },
                }
            }
        )
    return dumps({"error": {"code": code, "message": message, "details": details or []}})
