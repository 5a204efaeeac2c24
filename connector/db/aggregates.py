"""Exact money aggregates in SQL on SQLite and PostgreSQL.

PostgreSQL sums NUMERIC exactly. SQLite holds money as decimal text (see :class:`Money`) and its
SUM would go through floats, so there each value is turned into whole micro-units (six decimals,
the column's scale) and summed in 64-bit integers: exact up to 9.2 trillion.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeDecorator

MICRO = 6


class _SummedMoney(TypeDecorator[Decimal]):
    impl = sa.Numeric(38, MICRO)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        # SQLite's sum is integer micro-units: read it as an integer (a Numeric would pass it
        # through a float and lose the last digits of large sums).
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.BigInteger())
        return dialect.type_descriptor(sa.Numeric(38, MICRO, asdecimal=True))

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        if dialect.name == "sqlite":
            return Decimal(int(value)).scaleb(-MICRO)
        return value if isinstance(value, Decimal) else Decimal(str(value))


class money_sum(FunctionElement[Decimal]):
    """``SUM`` of a money expression, exact on both databases; NULL when no row has a value."""

    type = _SummedMoney()
    inherit_cache = True
    name = "money_sum"


@compiles(money_sum)
def _sum(element: money_sum, compiler: SQLCompiler, **kw: Any) -> str:
    return f"SUM({compiler.process(element.clauses, **kw)})"


@compiles(money_sum, "sqlite")
def _sum_sqlite(element: money_sum, compiler: SQLCompiler, **kw: Any) -> str:
    return f"SUM({_micro_units(compiler.process(element.clauses, **kw))})"


def _micro_units(text: str) -> str:
    """SQL for the integer micro-units of decimal text such as ``-1250.75`` (NULL stays NULL).

    Below 10^9 in size the float path is exact: the micro-units are integers under 10^15, and the
    float's relative error (2^-53, twice) moves them by less than 0.25, which ROUND removes. Larger
    values are read from the text: CAST(text AS INTEGER) is the whole part, and the fraction is the
    six characters after the point, padded with zeros.
    """
    real = f"CAST(({text}) AS REAL)"
    fast = f"CAST(ROUND({real} * {10**MICRO}) AS INTEGER)"
    sign = f"(CASE WHEN ({text}) LIKE '-%' THEN -1 ELSE 1 END)"
    fraction = (
        f"CAST(substr(({text}) || '{'0' * MICRO}', instr(({text}) || '.', '.') + 1, {MICRO}) AS INTEGER)"
    )
    exact = f"(CAST(({text}) AS INTEGER) * {10**MICRO} + {sign} * {fraction})"
    return f"(CASE WHEN abs({real}) < 1000000000 THEN {fast} ELSE {exact} END)"


def decimal_texts(value: Decimal) -> list[str]:
    """Every text SQLite may hold for ``value`` (:class:`Money` keeps the scale it was given):
    ``1042.25``, ``1042.250`` ... ``1042.250000``."""
    exact = value.normalize()
    exponent = exact.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    if places > MICRO:
        return []
    return [format(exact.quantize(Decimal(1).scaleb(-p)), "f") for p in range(places, MICRO + 1)]


def money_in(column: Any, values: list[Decimal], dialect: str) -> Any:
    """``column IN values`` compared as money on both databases (SQLite compares the texts)."""
    if dialect == "sqlite":
        return column.in_(sorted({t for v in values for t in decimal_texts(v)}))
    return column.in_(sorted(set(values)))
