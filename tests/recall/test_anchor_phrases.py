"""Which words anchor time on an ERP event, and which change of the history dates it."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from connector.recall.anchors import FAR_FUTURE, FAR_PAST, find, span_of
from connector.semantic.history_reads import ErpChange


def changed(field: str, old: Any, new: Any, day: int, *, number: str | None = None) -> ErpChange:
    return ErpChange(
        tenant="t", entity="party" if number is None else "document",
        kind="customer" if number is None else "invoice", external_id=number or "C1", number=number,
        field=field, old=old, new=new, currency=None, changed_at=datetime(2026, 1, day, tzinfo=UTC),
        seen_at=datetime(2026, 1, day, tzinfo=UTC),
    )  # fmt: skip


def at(day: int) -> datetime:
    return datetime(2026, 1, day, tzinfo=UTC)


# newest first, as the history reads them
HISTORY = [
    changed("status", "Credit Hold", "Active", 25),
    changed("is_open", True, False, 20, number="AR000123"),
    changed("status", "Active", "Credit Hold", 15),
    changed("credit_limit", Decimal(80000), Decimal(60000), 12),
    changed("credit_limit", Decimal(50000), Decimal(80000), 10),
    changed("terms", "30D", "60D", 5),
    changed("status", "Active", "On Hold", 2),
]


@pytest.mark.parametrize(
    ("question", "span"),
    [
        ("what did we agree before the credit hold?", (FAR_PAST, at(15))),  # the latest hold
        ("orders since they went on hold", (at(15), FAR_FUTURE)),
        ("while they were on hold", (at(15), at(25))),  # to the hold's lifting
        ("anything said after the hold was lifted", (at(25), FAR_FUTURE)),
        ("after the credit limit was raised", (at(10), FAR_FUTURE)),
        ("before they cut the credit limit", (FAR_PAST, at(12))),
        ("since we changed their payment terms", (at(5), FAR_FUTURE)),
        ("when invoice AR000123 was still open", (FAR_PAST, at(20))),
        ("after ar000123 was paid", (at(20), FAR_FUTURE)),
    ],
)
def test_an_event_phrase_is_dated_by_its_change(question: str, span: tuple[datetime, datetime]) -> None:
    anchor = find(question)
    assert anchor is not None
    assert span_of(anchor, HISTORY) == span


@pytest.mark.parametrize(
    "question",
    [
        "when did they go on hold?",
        "please hold the order",
        "what did we agree last week?",
        "the credit limit",
    ],
)
def test_words_that_anchor_no_time_are_not_read(question: str) -> None:
    assert find(question) is None


def test_an_event_the_history_lacks_gives_no_span() -> None:
    paid_other = find("after INV-000901 was paid")
    assert paid_other is not None and span_of(paid_other, HISTORY) is None  # another document was paid
    raised = find("since the credit limit was raised")
    assert raised is not None and span_of(raised, [HISTORY[3]]) is None  # only a cut: no raise to date
