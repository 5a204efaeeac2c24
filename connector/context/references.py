"""Documents a query names: numbers in the spellings people use, amounts and dates.

``INV-004821``, ``inv 4821``, ``#004821``, ``004821`` and ``invoice 4821`` all name the document
whose number ends in the digits 4821 (SAP's ``0090000123`` and ``90000123`` likewise): a number's
*key* is its last run of digits without leading zeros. A letter prefix or a word before the
number (``SO``, ``order``, ``credit memo``) is a hint that picks among documents sharing a key.
Amounts (``312.40``, ``1,250.00``, ``$4,821``) and dates (``2026-01-05``, ``5 Jan 2026``) name the
documents they identify. Parsing never fails: what is not recognised is simply not a reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

MAX_REFERENCES = 50  # numbers, amounts and dates looked up per query; the rest are ignored

_KIND_WORDS: dict[str, str] = {
    "invoice": "ar_invoice", "inv": "ar_invoice", "ar": "ar_invoice", "in": "ar_invoice",
    "order": "sales_order", "so": "sales_order", "sales order": "sales_order",
    "credit memo": "credit_memo", "credit note": "credit_memo", "memo": "credit_memo",
    "cm": "credit_memo", "credit": "credit_memo", "cr": "credit_memo",
    "bill": "ap_bill", "ap": "ap_bill",
}  # fmt: skip
_GENERIC_WORDS = (
    "document",
    "doc",
    "number",
    "no",
    "nr",
    "ref",
    "reference",
    "sap",
    "billing document",
    "po",
)
_ATTACHED_ONLY = frozenset({"in", "cr", "ar", "ap"})  # prefixes of numbers, too common as words
_WORDS = "|".join(sorted({*_KIND_WORDS, *_GENERIC_WORDS} - _ATTACHED_ONLY, key=len, reverse=True)).replace(
    " ", r"\s+"
)
_MONTHS = {
    m: i
    for i, names in enumerate(
        (("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
         ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
         ("oct", "october"), ("nov", "november"), ("dec", "december")),
        start=1,
    )
    for m in names
}  # fmt: skip
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATES = (
    re.compile(r"\b(?P<year>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
    re.compile(r"\b(?P<d>\d{1,2})[./](?P<m>\d{1,2})[./](?P<year>\d{4})\b"),
    re.compile(rf"\b{_MONTH}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})\b", re.I),
    re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(?P<year>\d{{4}})\b", re.I),
)
_CURRENCY = r"(?:[$€£¥]|\b(?:USD|EUR|GBP|CHF|JPY|DKK|SEK|NOK|PLN|CAD|AUD|CZK|HUF|KWD)\b)"
# 1,250.00  1.250,00  1 250,00  312.40  312,40 (a decimal part of one or two digits makes an amount)
_GROUPED = r"\d{1,3}(?:[,.' ]\d{3})+(?:[.,]\d{1,2})?"
_AMOUNT = re.compile(
    rf"(?P<cur1>{_CURRENCY}\s?)?(?<![\w.,])(?P<num>{_GROUPED}|\d+[.,]\d{{1,2}})"
    rf"(?![\w]|[.,]\d)(?P<cur2>\s?{_CURRENCY})?"
    rf"|(?P<cur3>{_CURRENCY})\s?(?P<whole>\d+)\b",
    re.I,
)
_PREFIXED = re.compile(r"(?<![\w#])(?:#\s?)?(?P<prefix>[A-Za-z]{1,5})[-_/]?(?P<digits>\d+)\b")  # INV-1, #INV1
_WORDED = re.compile(
    rf"\b(?P<word>{_WORDS})\b\.?(?:\s+(?:no\.?|nr\.?|number|#))?[\s:#.-]*(?P<digits>\d+)\b", re.I
)
_HASHED = re.compile(r"#\s?(?P<digits>\d+)\b")
_BARE = re.compile(r"(?<![\w.,#-])(?P<digits>\d{4,}|0\d{2,})(?![\w]|[.,]\d)")


@dataclass(frozen=True, slots=True)
class NumberRef:
    """A document number named in the query: its key, and the kind or prefix it hints at."""

    key: str
    kind: str | None = None
    prefix: str | None = None


@dataclass(frozen=True, slots=True)
class QueryReferences:
    numbers: tuple[NumberRef, ...] = ()
    amounts: tuple[Decimal, ...] = ()
    dates: tuple[date, ...] = ()
    capped: int = 0  # references beyond MAX_REFERENCES that were ignored

    def __bool__(self) -> bool:
        return bool(self.numbers or self.amounts or self.dates)


def number_key(number: str) -> str | None:
    """The last run of digits without leading zeros (``INV-004821`` -> ``4821``), or None."""
    runs = re.findall(r"\d+", number)
    if not runs:
        return None
    return runs[-1].lstrip("0") or "0"


def number_prefix(number: str) -> str | None:
    """The letters before the number's digits (``SO-000123`` -> ``SO``), upper case, or None."""
    match = re.match(r"\s*([A-Za-z]+)", number)
    return match.group(1).upper() if match else None


def _parse_amount(text: str) -> Decimal | None:
    """A separator followed by one or two final digits is the decimal point; others group digits."""
    digits = re.sub(r"[^\d.,]", "", text)
    last = max(digits.rfind("."), digits.rfind(","))
    decimals = last != -1 and len(digits) - last - 1 in (1, 2)
    whole, fraction = (digits[:last], digits[last + 1 :]) if decimals else (digits, "0")
    try:
        return Decimal(f"{re.sub(r'[.,]', '', whole) or '0'}.{fraction}")
    except InvalidOperation:
        return None


def _valid_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


_ONE_NUMBER = re.compile(
    r"^\s*#?\s*(?:(?P<word>[A-Za-z]+(?:\s+[A-Za-z]+)?)\.?(?:\s*(?:no\.?|nr\.?|number|#))?[\s:#./_-]*)?"
    r"(?P<digits>\d+)\s*$",
    re.I,
)


def document_number(text: str) -> QueryReferences:
    """``text`` read as one document number, as ``lookup_document`` gets it: a prefix or a kind
    word may stand apart from the digits (``AR 493``, ``SO 12``, ``invoice no. 7``) and the number
    may be short, which in free text would be too common to be a reference. Anything else is
    read as a query (:func:`parse_references`)."""
    match = _ONE_NUMBER.match(text)
    if match is None:
        return parse_references(text)
    key = match.group("digits").lstrip("0") or "0"
    word = re.sub(r"\s+", " ", match.group("word") or "").lower()
    if not word or word in _GENERIC_WORDS:
        return QueryReferences(numbers=(NumberRef(key),))
    kind = _KIND_WORDS.get(word)
    attached = len(word) <= 5 and " " not in word  # would be a prefix written as one word (AR493)
    if kind is None and not attached:
        return parse_references(text)  # a word that names no kind of document and is no prefix
    return QueryReferences(numbers=(NumberRef(key, kind, word.upper() if attached else None),))


def parse_references(query: str) -> QueryReferences:
    """Every document reference in ``query`` (at most ``MAX_REFERENCES``), in order of appearance."""
    found: list[tuple[int, object]] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    for pattern in _DATES:
        for m in pattern.finditer(query):
            if not free(*m.span()):
                continue
            year, day = int(m.group("year")), int(m.group("d"))
            month = int(m.group("m")) if "m" in m.groupdict() else _MONTHS[m.group("month").lower()]
            readings = [(month, day)]
            if "/" in m.group(0):  # 05/01/2026: day first in most of the world, month first in the US
                readings = [(month, day), (day, month)]
            days = [d for d in (_valid_date(year, mo, da) for mo, da in readings) if d is not None]
            found.extend((m.start(), d) for d in days)
            if days:
                taken.append(m.span())
    for m in _PREFIXED.finditer(query):
        if free(*m.span()):
            prefix = m.group("prefix")
            ref = NumberRef(
                m.group("digits").lstrip("0") or "0", _KIND_WORDS.get(prefix.lower()), prefix.upper()
            )
            found.append((m.start(), ref))
            taken.append(m.span())
    for m in _WORDED.finditer(query):
        if free(m.start("digits"), m.end("digits")):
            word = re.sub(r"\s+", " ", m.group("word").lower())
            found.append((m.start(), NumberRef(m.group("digits").lstrip("0") or "0", _KIND_WORDS.get(word))))
            taken.append(m.span("digits"))
    for m in _AMOUNT.finditer(query):
        if free(*m.span()):
            value = _parse_amount(m.group("num") or m.group("whole"))
            if value is not None:
                found.append((m.start(), value))
                taken.append(m.span())
    for pattern in (_HASHED, _BARE):
        for m in pattern.finditer(query):
            if free(*m.span()):
                found.append((m.start(), NumberRef(m.group("digits").lstrip("0") or "0")))
                taken.append(m.span())
    found.sort(key=lambda item: item[0])
    unique = list(dict.fromkeys(value for _, value in found))
    kept = unique[:MAX_REFERENCES]
    return QueryReferences(
        numbers=tuple(v for v in kept if isinstance(v, NumberRef)),
        amounts=tuple(v for v in kept if isinstance(v, Decimal)),
        dates=tuple(v for v in kept if isinstance(v, date)),
        capped=len(unique) - len(kept),
    )
