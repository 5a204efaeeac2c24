"""Dates and relative time in a question name the span of dates recall narrows to (against as_of)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connector.recall.when import span

AS_OF = datetime(2026, 3, 18, 15, 30, tzinfo=UTC)


def d(month: int, day: int, year: int = 2026) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did we agree yesterday?", (d(3, 17), d(3, 18))),
        ("the call today", (d(3, 18), d(3, 19))),
        ("What did we agree last week?", (d(3, 4), d(3, 18))),
        ("the order two days ago", (d(3, 15), d(3, 18))),  # a day either side
        ("3 weeks ago we spoke about freight", (d(2, 22), d(3, 1))),  # 3 days either side
        ("the call in March", (d(3, 1), d(4, 1))),
        ("the call in May", (d(5, 1, 2025), d(6, 1, 2025))),  # the last May not after as_of
        ("invoices from December 2025", (d(12, 1, 2025), d(1, 1))),
        ("what was said on 2026-02-14", (d(2, 14), d(2, 15))),
        ("the concerts I attended in the past two months", (d(1, 17), d(3, 19))),
        ("orders in the last 3 weeks", (d(2, 25), d(3, 19))),
        ("which store did I spend most at in the past month", (d(2, 15), d(3, 19))),
        ("the bike I serviced the past weekend", (d(3, 14), d(3, 17))),  # Saturday to Monday
        ("the artist I started to listen to last Friday", (d(3, 13), d(3, 15))),
        ("rides from July to October", (d(7, 1, 2025), d(11, 1, 2025))),
        ("deliveries from November to February", (d(11, 1, 2025), d(3, 1))),
    ],
)
def test_a_question_naming_a_time_gets_its_span(query: str, expected: tuple[datetime, datetime]) -> None:
    assert span(query, AS_OF) == expected


@pytest.mark.parametrize(
    "query",
    [
        "How many days ago did I attend the workshop?",  # asks for a count, names no span
        "May I change the delivery address?",
        "Where do deliveries go now?",
        "invoice INV-2026-0314",
        "I'm planning my meal prep next week, any suggestions?",  # future time
        "my visit to the music store this weekend",
    ],
)
def test_a_question_naming_no_time_narrows_nothing(query: str) -> None:
    assert span(query, AS_OF) is None


@pytest.mark.parametrize(
    ("query", "relative"),
    [("invoices due on 2026-02-14", None), ("the call in March", None), ("from July to October", None),
     ("the call last week", (d(3, 4), d(3, 18)))],
)  # fmt: skip
def test_relative_only_reads_no_date_or_month(query: str, relative: tuple[datetime, datetime] | None) -> None:
    assert span(query, AS_OF, absolute=False) == relative
