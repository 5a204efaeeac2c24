"""OData literals and filters: values are escaped so they cannot change the query."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from connector.adapters.acumatica import odata
from connector.errors import ConfigError


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("O'BRIEN", "'O''BRIEN'"),
        ("", "''"),
        ("a''b", "'a''''b'"),
        (None, "null"),
        (True, "true"),
        (42, "42"),
        (Decimal("10.50"), "10.50"),
        (1.5, "1.5"),
        (date(2025, 6, 17), "date'2025-06-17'"),
        (
            datetime(2024, 7, 15, 10, 31, 28, 402999, tzinfo=timezone(timedelta(hours=3))),
            "datetimeoffset'2024-07-15T07:31:28.402+00:00'",
        ),
    ],
)
def test_literals(value: odata.Literal, expected: str) -> None:
    assert odata.literal(value) == expected


@pytest.mark.parametrize("value", [float("nan"), Decimal("Infinity"), datetime(2024, 1, 1)])
def test_values_without_a_safe_literal_are_refused(value: odata.Literal) -> None:
    with pytest.raises(ValueError):
        odata.literal(value)


def test_compare_checks_field_and_operator() -> None:
    assert odata.compare("MainContact/Email", "eq", "a@b.c") == "MainContact/Email eq 'a@b.c'"
    with pytest.raises(ConfigError, match="invalid Acumatica field"):
        odata.compare("Name eq 'x' or 1", "eq", "x")
    with pytest.raises(ValueError, match="unknown OData operator"):
        odata.compare("Name", "like", "x")


def test_window_is_closed_at_both_ends_and_rounds_the_end_up() -> None:
    since = datetime(2026, 1, 1, 0, 0, 0, 1999, tzinfo=UTC)
    until = datetime(2026, 1, 2, 0, 0, 0, 1001, tzinfo=UTC)
    assert odata.window("LastModified", since, until) == (
        "LastModified ge datetimeoffset'2026-01-01T00:00:00.001+00:00' and "
        "LastModified le datetimeoffset'2026-01-02T00:00:00.002+00:00'"
    )
    assert odata.window("LastModified", None, None) is None
    assert odata.window("X", None, datetime(2026, 1, 2, tzinfo=UTC)) == (
        "X le datetimeoffset'2026-01-02T00:00:00.000+00:00'"
    )


def test_all_of_parenthesises_alternatives_only_when_combining() -> None:
    assert odata.all_of(["A eq 1 or B eq 2"]) == "A eq 1 or B eq 2"
    assert odata.all_of(["A eq 1 or B eq 2", "C eq 3"]) == "(A eq 1 or B eq 2) and C eq 3"
    assert odata.all_of([]) is None


@pytest.mark.parametrize("name", ["Document.AttrPOREQ", "Contact_2.UsrX1"])
def test_custom_field_names(name: str) -> None:
    assert odata.custom_field(name) == name


@pytest.mark.parametrize("name", ["AttrPOREQ", "Doc.Attr.X", "Doc.Attr'"])
def test_bad_custom_field_names(name: str) -> None:
    with pytest.raises(ConfigError):
        odata.custom_field(name)
