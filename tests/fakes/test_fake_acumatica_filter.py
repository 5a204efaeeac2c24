"""The fake Acumatica's $filter engine: operators, types, functions and index bounds."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from connector.testing.acumatica_filter import FilterError, parse_filter

ROWS: list[dict[str, Any]] = [
    {
        "CustomerID": "O'BRIEN",
        "Name": "O'Brien & Sons",
        "CreditLimit": 5000.0,
        "Active": True,
        "Date": date(2025, 6, 17),
        "Changed": datetime(2025, 6, 17, 10, 0, tzinfo=UTC),
        "MainContact": {"Email": "ap@obrien.com"},
        "cf:Document.AttrPOREQ": "Y",
    },
    {
        "CustomerID": "ALPINE",
        "Name": "Alpine Tools",
        "CreditLimit": 0.0,
        "Active": False,
        "Date": date(2025, 6, 18),
        "Changed": datetime(2025, 6, 18, 10, 0, tzinfo=UTC),
        "MainContact": {"Email": None},
        "cf:Document.AttrPOREQ": None,
    },
    {
        "CustomerID": "ZETA",
        "Name": None,
        "CreditLimit": 100.5,
        "Active": True,
        "Date": None,
        "Changed": datetime(2025, 6, 19, 10, 0, tzinfo=UTC),
        "MainContact": {},
        "cf:Document.AttrPOREQ": "N",
    },
]


def lookup(row: dict[str, Any], path: str) -> Any:
    if "/" in path:
        head, tail = path.split("/", 1)
        return (row.get(head) or {}).get(tail)
    return row.get(path)


def ids(text: str) -> list[str]:
    parsed = parse_filter(text, lookup)
    return [row["CustomerID"] for row in ROWS if parsed.matches(row)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CustomerID eq 'O''BRIEN'", ["O'BRIEN"]),
        ("CustomerID eq 'o''brien'", ["O'BRIEN"]),  # SQL Server compares text case-insensitively
        ("CustomerID ne 'ALPINE'", ["O'BRIEN", "ZETA"]),
        ("CustomerID gt 'B'", ["O'BRIEN", "ZETA"]),
        ("CreditLimit ge 100.5", ["O'BRIEN", "ZETA"]),
        ("CreditLimit lt 100.5m", ["ALPINE"]),
        ("CreditLimit le 0", ["ALPINE"]),
        ("Active eq true", ["O'BRIEN", "ZETA"]),
        ("Name eq null", ["ZETA"]),
        ("Name ne null", ["O'BRIEN", "ALPINE"]),
        ("Name gt 'A'", ["O'BRIEN", "ALPINE"]),  # null is not greater than anything
        ("Changed ge datetimeoffset'2025-06-18T13:00:00+03:00'", ["ALPINE", "ZETA"]),
        ("Changed gt datetimeoffset'2025-06-18T10:00:00Z'", ["ZETA"]),
        ("Changed lt datetime'2025-06-18T10:00:00'", ["O'BRIEN"]),
        ("Date eq date'2025-06-18'", ["ALPINE"]),
        ("Date lt datetimeoffset'2025-06-18T00:00:00+00:00'", ["O'BRIEN"]),
        ("Active eq true and CreditLimit gt 1000", ["O'BRIEN"]),
        ("CustomerID eq 'ZETA' or CustomerID eq 'ALPINE'", ["ALPINE", "ZETA"]),
        ("not (CustomerID eq 'ZETA') and (Active eq true or CreditLimit eq 0)", ["O'BRIEN", "ALPINE"]),
        ("substringof('brien', Name)", ["O'BRIEN"]),
        ("startswith(Name, 'alp')", ["ALPINE"]),
        ("endswith(Name, 'sons')", ["O'BRIEN"]),
        ("tolower(CustomerID) eq 'zeta'", ["ZETA"]),
        ("MainContact/Email eq 'AP@obrien.com'", ["O'BRIEN"]),
        ("cf.String(f='Document.AttrPOREQ') eq 'N'", ["ZETA"]),
    ],
)
def test_filters_select_the_matching_rows(text: str, expected: list[str]) -> None:
    assert ids(text) == expected


def test_a_quoted_operator_stays_inside_the_literal() -> None:
    assert ids("CustomerID eq 'X'' or CustomerID ne '''") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CustomerID eq", "ends too early"),
        ("CustomerID eq 'x' extra", "unexpected"),
        ("CustomerID eq 'unterminated", "unexpected character"),
        ("CreditLimit eq 'abc'", "cannot compare"),
        ("frobnicate(Name)", "unsupported function"),
        ("Changed gt datetimeoffset'2025-06-18'", "no offset"),
        ("Date eq date'2025-13-01'", "bad date"),
        ("cf.String(x='A.B') eq 'Y'", "f='View.Field'"),
    ],
)
def test_bad_filters_raise_a_filter_error(text: str, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        ids(text)


def test_bounds_on_the_change_field_come_from_top_level_conjuncts() -> None:
    t1 = datetime(2025, 6, 18, tzinfo=UTC)
    t2 = datetime(2025, 6, 19, tzinfo=timezone(timedelta(hours=2)))
    text = (
        "Changed ge datetimeoffset'2025-06-18T00:00:00+00:00' and Active eq true and "
        "Changed lt datetimeoffset'2025-06-19T00:00:00+02:00'"
    )
    bound = parse_filter(text, lookup).bounds("Changed")
    assert bound is not None
    assert (bound.low, bound.low_inclusive, bound.high, bound.high_inclusive) == (t1, True, t2, False)


def test_no_bounds_under_an_or() -> None:
    text = "Changed ge datetimeoffset'2025-06-18T00:00:00Z' or Active eq true"
    assert parse_filter(text, lookup).bounds("Changed") is None
    assert parse_filter("Active eq true", lookup).bounds("Changed") is None
