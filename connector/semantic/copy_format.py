"""PostgreSQL COPY text format, one formatter per column type.

One line per row, values separated by tabs, ``\\N`` for NULL; a backslash, tab, newline or
carriage return inside a value is escaped. Each formatter mirrors the bind processor of its
column type (connector.db.types), so COPY stores exactly what an INSERT would.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from connector.db.engine import _pg_json
from connector.db.types import Money, UTCDateTime

NULL = "\\N"
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def copy_text(value: str | None) -> str:
    """A text value for COPY: NULL stays distinct from the empty string; specials are escaped."""
    if value is None:
        return NULL
    if not isinstance(value, str):
        value = str(value)
    if "\\" in value or not value.isprintable():  # isprintable is False for tab, newline, CR
        return value.translate(_ESCAPES)
    return value


def copy_money(value: Decimal | int | str | None) -> str:
    """NUMERIC: exact decimal text; a float is refused as :class:`~connector.db.types.Money` does."""
    if value is None:
        return NULL
    if type(value) is not Decimal:
        if isinstance(value, float):
            raise TypeError("money must be Decimal, not float")
        value = Decimal(value)
    return str(value)


def copy_timestamp(value: datetime | None) -> str:
    """TIMESTAMPTZ: ISO 8601 in UTC with its offset; a naive datetime is refused."""
    if value is None:
        return NULL
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("naive datetime given to a UTC column; pass an aware datetime")
    return value.astimezone(UTC).isoformat()


def copy_date(value: date | None) -> str:
    return NULL if value is None else value.isoformat()


def copy_bool(value: bool | None) -> str:
    return NULL if value is None else ("t" if value else "f")


def copy_int(value: int | None) -> str:
    return NULL if value is None else str(int(value))


def copy_json(value: Any) -> str:
    """JSONB: the engine's serializer (orjson), escaped; None is JSON null, as sa.JSON binds it."""
    return copy_text(_pg_json(value))


FORMATTERS = {
    "copy_text": copy_text,
    "copy_money": copy_money,
    "copy_timestamp": copy_timestamp,
    "copy_date": copy_date,
    "copy_bool": copy_bool,
    "copy_int": copy_int,
    "copy_json": copy_json,
}


def formatter_name(column: sa.Column[Any]) -> str:
    """The name (in :data:`FORMATTERS`) of the formatter for a column, chosen by its type."""
    kind = column.type
    if isinstance(kind, Money):
        return "copy_money"
    if isinstance(kind, UTCDateTime):
        return "copy_timestamp"
    if isinstance(kind, sa.TypeDecorator):  # e.g. SQLModel's AutoString: format as what it stores
        kind = kind.impl_instance
    if isinstance(kind, sa.JSON):
        return "copy_json"
    if isinstance(kind, sa.Boolean):
        return "copy_bool"
    if isinstance(kind, sa.Date) and not isinstance(kind, sa.DateTime):
        return "copy_date"
    if isinstance(kind, sa.Integer):
        return "copy_int"
    if isinstance(kind, (sa.String, sa.Text)):
        return "copy_text"
    raise TypeError(f"no COPY formatter for {column.table.name}.{column.name} of type {kind!r}")
