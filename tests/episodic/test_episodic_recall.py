"""Recall: scope first, similarity second, document numbers found lexically (embedded and server Chroma)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.clock import FrozenClock
from connector.episodic.models import InvalidCaseError
from connector.memory import Memory

DAY = timedelta(days=1)


def seed(memory: Memory) -> None:
    t0 = datetime(2026, 2, 1, tzinfo=UTC)
    memory.record_case(
        "ABARTENDE",
        "Customer was invoiced twice for order SO-000123 (INV-004821 and INV-004822, 1,250.00 USD each).",
        "Voided INV-004822 and issued credit memo CM-000311 for 1,250.00 USD on 2026-02-03.",
        case_type="dispute",
        case_id="C-1",
        occurred_at=t0,
    )
    memory.record_case(
        "ABARTENDE",
        "Pallet of copper fittings on SO-000140 arrived nine days late; customer asked for a freight refund.",
        "Refunded freight of 85.00 USD on INV-004900 on 2026-02-11.",
        case_type="late_delivery",
        case_id="C-2",
        occurred_at=t0 + 10 * DAY,
    )
    memory.record_case(
        "ABARTENDE",
        "Sales tax charged on INV-005010 although the customer is tax exempt (certificate on file).",
        "Tax line removed, corrected invoice INV-005010-R issued on 2026-02-20; credit of 96.40 USD.",
        case_type="tax_correction",
        case_id="C-3",
        occurred_at=t0 + 19 * DAY,
    )


def test_a_paraphrased_question_finds_the_case(memory: Memory) -> None:
    seed(memory)
    hits = memory.recall_cases("ABARTENDE", "Why was I billed two times for the same order?")
    assert hits[0].case_id == "C-1"
    assert hits[0].occurred_at == datetime(2026, 2, 1, tzinfo=UTC)
    assert "CM-000311" in hits[0].summary and 0 < hits[0].score <= 1


def test_a_document_number_finds_the_case_that_names_it_first(memory: Memory) -> None:
    seed(memory)
    hits = memory.recall_cases("ABARTENDE", "status of inv004900?")
    assert hits[0].case_id == "C-2" and hits[0].matched_documents == ("INV-004900",)
    assert memory.recall_cases("ABARTENDE", "so-000123 again")[0].case_id == "C-1"


def test_k_limits_the_hits(memory: Memory) -> None:
    seed(memory)
    assert len(memory.recall_cases("ABARTENDE", "invoice problem", k=1)) == 1
    with pytest.raises(InvalidCaseError, match="k must be"):
        memory.recall_cases("ABARTENDE", "invoice problem", k=0)


def test_case_type_and_as_of_filter_before_ranking(memory: Memory) -> None:
    seed(memory)
    assert {h.case_id for h in memory.recall_cases("ABARTENDE", "invoice", case_type="tax_correction")} == {
        "C-3"
    }
    before = memory.recall_cases("ABARTENDE", "invoice", as_of=datetime(2026, 2, 5, tzinfo=UTC), k=5)
    assert {h.case_id for h in before} == {"C-1"}


def test_unrelated_questions_fall_below_the_threshold(memory: Memory) -> None:
    seed(memory)
    assert memory.recall_cases("ABARTENDE", "What is the capital of Peru? Llamas and mountains.") == []


def test_other_tenants_are_a_separate_scope(memory: Memory) -> None:
    seed(memory)
    assert memory.recall_cases("ABARTENDE", "billed twice", tenant="sap-prod") == []


def test_a_customer_without_history_recalls_nothing(memory: Memory) -> None:
    seed(memory)
    assert memory.recall_cases("NOBODY", "billed twice") == []


def test_a_blank_query_is_refused(memory: Memory) -> None:
    with pytest.raises(InvalidCaseError, match="query"):
        memory.recall_cases("ABARTENDE", "  ")


RUNS = itertools.count()
CUSTOMERS = ["ACME", "ABARTENDE", "acme", "ACME ", "C-001", "C-0010"]
TOPICS = [
    "duplicate charge on {doc}",
    "late delivery of {doc}",
    "price correction for {doc}",
    "tax exemption missing on {doc}",
    "damaged goods returned on {doc}",
]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    cases=st.lists(
        st.tuples(st.sampled_from(CUSTOMERS), st.sampled_from(TOPICS), st.integers(100, 999)),
        min_size=1,
        max_size=8,
    ),
    queries=st.lists(
        st.tuples(st.sampled_from(CUSTOMERS), st.sampled_from(TOPICS), st.integers(100, 999)),
        min_size=1,
        max_size=4,
    ),
)
def test_recall_never_returns_another_customers_case(
    memory: Memory, cases: list[tuple[str, str, int]], queries: list[tuple[str, str, int]]
) -> None:
    owner: dict[str, str] = {}
    run = f"run{next(RUNS)}"  # each example gets a tenant of its own in the shared store
    for customer, topic, number in cases:
        text = topic.format(doc=f"INV-{number:06d}")
        recorded = memory.record_case(customer, text, f"Resolved {text}", tenant=run)
        owner.setdefault(recorded.entry_id, customer.strip())
    for customer, topic, number in queries:
        for hit in memory.recall_cases(customer, topic.format(doc=f"INV-{number:06d}"), k=5, tenant=run):
            assert owner[hit.entry_id] == customer.strip()


def test_expired_entries_are_not_recalled_even_before_retention_runs(memory: Memory) -> None:
    seed(memory)
    assert isinstance(memory.clock, FrozenClock)
    memory.clock.advance(timedelta(days=200))
    assert memory.recall_cases("ABARTENDE", "billed twice") == []
