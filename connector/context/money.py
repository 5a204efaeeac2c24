"""Money as the context shows it: grouped digits, the currency's own scale, the currency code.

An amount is never rounded: ``12.345 USD`` keeps its third decimal. Trailing zeros beyond the
currency's minor units go (PostgreSQL's NUMERIC(24, 6) hands back ``1250.750000``), and an amount
with fewer decimals is padded to them, so the same value reads the same from SQLite and
PostgreSQL and ``0.0`` never appears.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation

# ISO 4217 currencies whose minor unit is not the usual two decimals.
_MINOR_UNITS: dict[str, int] = dict.fromkeys(
    ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV",
     "XAF", "XOF", "XPF"),
    0,
) | dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3)  # fmt: skip
NO_CURRENCY = "(currency not given)"


def minor_units(currency: str | None) -> int:
    return _MINOR_UNITS.get((currency or "").upper(), 2)


def amount_text(value: Decimal, currency: str | None = None) -> str:
    """``value`` with thousands separators at the currency's scale (more decimals kept, never cut)."""
    scale = minor_units(currency)
    exact = value.normalize()
    exponent = exact.as_tuple().exponent
    if isinstance(exponent, int) and exponent > -scale:
        exact = exact.quantize(Decimal(1).scaleb(-scale))
    text = format(exact, ",f")
    return "0" + text[2:] if text.startswith("-0") and exact.is_zero() else text


def money(value: Decimal | None, currency: str | None) -> str:
    """``1,250.75 USD``; ``?`` for a missing value; a missing currency is said, not guessed."""
    if value is None:
        return "?"
    return f"{amount_text(value, currency)} {currency or NO_CURRENCY}"


def money_text(value: object, currency: str | None) -> str | None:
    """An ERP value held as text or number (``"250000.75"``) shown as money, or None if not a number."""
    if isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return None
    return money(number, currency) if number.is_finite() else None


def totals(amounts: Mapping[str, Decimal] | Iterable[tuple[str, Decimal]]) -> str:
    """Per-currency amounts, by currency code: ``1,250.75 USD, 90.00 EUR`` sorted by code."""
    pairs = amounts.items() if isinstance(amounts, Mapping) else amounts
    return ", ".join(money(v, c or None) for c, v in sorted(pairs, key=lambda p: p[0]))
