"""Time in the question narrows case recall as it does turn recall; each recall takes its own profiles."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connector.episodic.models import InvalidCaseError
from connector.memory import Memory


def seed(memory: Memory) -> None:
    """The same kind of case twice, months apart (the clock stands at 2026-03-01)."""
    for case_id, day, amount in (("C-OCT", datetime(2025, 10, 14, tzinfo=UTC), "85.00"),
                                 ("C-FEB", datetime(2026, 2, 24, tzinfo=UTC), "112.00")):  # fmt: skip
        memory.record_case(
            "ATIMES",
            "Pallet of copper fittings arrived late; the customer asked for a freight refund.",
            f"Refunded freight of {amount} USD.",
            case_type="late_delivery",
            case_id=case_id,
            occurred_at=day,
        )
    memory.record_case(
        "ATIMES",
        "Sales tax charged although the customer is tax exempt.",
        "Tax line removed, corrected invoice issued.",
        case_type="tax_correction",
        case_id="C-TAX",
        occurred_at=datetime(2026, 2, 25, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("the freight refund last week", "C-FEB"),
        ("the freight refund five months ago", "C-OCT"),
        ("freight refunds in the past two weeks", "C-FEB"),
    ],
)
def test_relative_time_in_a_question_picks_the_case_of_that_time(
    memory: Memory, query: str, first: str
) -> None:
    seed(memory)
    hits = memory.recall_cases("ATIMES", query, k=5)
    assert [h.case_id for h in hits][:1] == [first]
    assert {h.case_id for h in hits} <= {first, "C-TAX"}  # the same case of another time is left out


@pytest.mark.parametrize(
    ("query", "first"), [("the freight refund in October", "C-OCT"), ("2025-10-14", "C-OCT")]
)
def test_a_date_the_question_names_ranks_that_days_case_first(memory: Memory, query: str, first: str) -> None:
    # a case's date is among its lexical terms: a named date or month boosts, it does not filter
    # (in ERP text "due on 2025-12-28" names what the case is about, not when it happened)
    seed(memory)
    assert [h.case_id for h in memory.recall_cases("ATIMES", query, k=5)][:1] == [first]


def test_relative_time_counts_from_as_of(memory: Memory) -> None:
    seed(memory)
    hits = memory.recall_cases("ATIMES", "freight refund last week", as_of=datetime(2025, 10, 20, tzinfo=UTC))
    assert [h.case_id for h in hits] == ["C-OCT"]  # the February case is after as_of anyway


def test_a_time_no_case_falls_in_narrows_nothing(memory: Memory) -> None:
    seed(memory)
    hits = memory.recall_cases("ATIMES", "the freight refund three weeks ago", k=5)
    assert {"C-OCT", "C-FEB"} <= {h.case_id for h in hits}


def test_case_recall_takes_its_own_profiles_per_call(memory: Memory) -> None:
    seed(memory)
    lexical = memory.recall_cases("ATIMES", "tax exempt", k=5, profile="lexical")
    assert [h.case_id for h in lexical] == ["C-TAX"]  # BM25 alone: only the case holding the words
    with pytest.raises(
        InvalidCaseError, match="profile must be one of \\['case', 'dense', 'dialogue', 'lexical'\\]"
    ):
        memory.recall_cases("ATIMES", "tax exempt", profile="plain")
