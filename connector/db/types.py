"""Column types that behave the same on SQLite and PostgreSQL.

SQLite has no timezone-aware timestamp and stores NUMERIC as a float, which loses cents on large
amounts; these decorators keep the Python side exact (aware UTC datetimes, Decimal) on both.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out. Naive datetimes are refused, not guessed."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("naive datetime given to a UTC column; pass an aware datetime")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)  # stored as UTC text, fixed width, sorts correctly
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Money(TypeDecorator[Decimal]):
    """Exact decimals: NUMERIC(24, 6) on PostgreSQL, canonical decimal text on SQLite."""

    impl = sa.Numeric(24, 6)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.String(40))
        return dialect.type_descriptor(sa.Numeric(24, 6, asdecimal=True))

    def process_bind_param(self, value: Decimal | int | str | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if isinstance(value, float):
            raise TypeError("money must be Decimal, not float")
        dec = Decimal(value)
        if dialect.name == "sqlite":
            return format(dec, "f")
        return dec

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        return Decimal(str(value)) if not isinstance(value, Decimal) else value


JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
