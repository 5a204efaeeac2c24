"""Exact money aggregates in SQL on SQLite and PostgreSQL.

PostgreSQL sums NUMERIC exactly. SQLite holds money as decimal text (see :class:`Money`) and its
SUM would go through floats, so there the text is split at the point and summed as whole
micro-units (six decimals, the column's scale) in 64-bit integers: exact up to 9.2 trillion.
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
    """SQL for the integer micro-units of decimal text such as ``-1250.75`` (NULL stays NULL)."""
    value = f"ltrim(({text}), '-')"
    dot = f"instr({value}, '.')"
    whole = f"CASE WHEN {dot} > 0 THEN substr({value}, 1, {dot} - 1) ELSE {value} END"
    fraction = f"CASE WHEN {dot} > 0 THEN substr({value} || '{'0' * MICRO}', {dot} + 1, {MICRO}) ELSE '0' END"
    sign = f"CASE WHEN substr(({text}), 1, 1) = '-' THEN -1 ELSE 1 END"
    return f"({sign} * (CAST({whole} AS INTEGER) * {10**MICRO} + CAST({fraction} AS INTEGER)))"


class money_micro(FunctionElement[int]):
    """A money value as integer micro-units, for exact equality on both databases."""

    type = sa.BigInteger()
    inherit_cache = True
    name = "money_micro"


@compiles(money_micro)
def _micro(element: money_micro, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST(({compiler.process(element.clauses, **kw)}) * {10**MICRO} AS BIGINT)"


@compiles(money_micro, "sqlite")
def _micro_sqlite(element: money_micro, compiler: SQLCompiler, **kw: Any) -> str:
    return _micro_units(compiler.process(element.clauses, **kw))


def micro_units(value: Decimal) -> int | None:
    """``value`` in micro-units, or None when it has more than six decimals (no stored value matches)."""
    scaled = value.scaleb(MICRO)
    return int(scaled) if scaled == scaled.to_integral_value() else None
