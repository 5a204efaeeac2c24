"""OData v3 literals and filters for Acumatica's ``$filter``, built so no value can change the query.

Every value goes through :func:`literal`: strings are quoted with ``'`` doubled (so a key such as
``O'BRIEN`` neither breaks nor changes the filter), timestamps become ``datetimeoffset'…'``
literals in UTC with millisecond precision, dates ``date'…'``. Field names are checked against
a strict pattern, since they come from configuration.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from connector.errors import ConfigError

_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")
_CUSTOM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")
_OPERATORS = frozenset({"eq", "ne", "gt", "ge", "lt", "le"})

Literal = str | int | Decimal | float | bool | datetime | date | None


def field_name(name: str) -> str:
    """A field path (``CustomerID``, ``MainContact/Email``), refused if it could inject syntax."""
    if not _FIELD.match(name):
        raise ConfigError(f"invalid Acumatica field name {name!r}: expected letters, digits, '_' and '/'")
    return name


def custom_field(view_field: str) -> str:
    """A ``View.Field`` custom field name as used by ``$custom`` and ``cf.*(f='…')``."""
    if not _CUSTOM.match(view_field):
        raise ConfigError(f"invalid Acumatica custom field {view_field!r}: expected 'View.Field'")
    return view_field


def datetimeoffset(value: datetime) -> str:
    """``datetimeoffset'2024-07-15T07:31:28.402+00:00'`` for an aware datetime (floored to ms)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("a datetimeoffset literal needs an aware datetime, got a naive one")
    return f"datetimeoffset'{value.astimezone(UTC).isoformat(timespec='milliseconds')}'"


def ceil_to_millisecond(value: datetime) -> datetime:
    """The smallest whole-millisecond time not before ``value`` (for inclusive upper bounds)."""
    remainder = value.microsecond % 1000
    return value if remainder == 0 else value + timedelta(microseconds=1000 - remainder)


def literal(value: Literal) -> str:
    """The OData v3 literal for a Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return datetimeoffset(value)
    if isinstance(value, date):
        return f"date'{value.isoformat()}'"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError("a non-finite Decimal has no OData literal")
        return format(value, "f")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("a non-finite float has no OData literal")
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no OData literal for {type(value).__name__}")


def compare(field: str, operator: str, value: Literal) -> str:
    """``Field op literal``, e.g. ``compare("CustomerID", "eq", "O'BRIEN")``."""
    if operator not in _OPERATORS:
        raise ValueError(f"unknown OData operator {operator!r}; expected one of {sorted(_OPERATORS)}")
    return f"{field_name(field)} {operator} {literal(value)}"


def all_of(clauses: Iterable[str]) -> str | None:
    """The clauses joined with ``and`` (each in parentheses when there are several), or None."""
    parts = [clause for clause in clauses if clause]
    if len(parts) > 1:
        parts = [f"({clause})" if " or " in clause else clause for clause in parts]
    return " and ".join(parts) if parts else None


def window(field: str, since: datetime | None, until: datetime | None) -> str | None:
    """The delta filter: ``field ge since`` (closed start) and ``field le until`` (pinned end)."""
    return all_of(
        [
            compare(field, "ge", since) if since is not None else "",
            compare(field, "le", ceil_to_millisecond(until)) if until is not None else "",
        ]
    )
