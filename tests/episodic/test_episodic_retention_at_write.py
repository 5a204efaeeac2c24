"""Retention applies when a case is written: a case already past the retention window goes straight
to the archive (``archived``), a PII case past its PII window is not stored (``expired``), and
``recall(..., include_archived=True)`` reaches the archive by document number (SQLite and PostgreSQL,
embedded and server Chroma)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session

from connector.clock import FrozenClock
from connector.episodic.tables import CASES, ENTRIES
from connector.memory import Memory
from connector.semantic.tables import CrmCase
from connector.settings import Settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def memory_on(engine: Engine, episodic_settings: Settings) -> Memory:
    return Memory(episodic_settings, clock=FrozenClock(NOW), llm=None, engine=engine)


def days_ago(n: int) -> datetime:
    return NOW - timedelta(days=n)


def entries(memory: Memory) -> dict[str, dict[str, object]]:
    with memory.engine.connect() as conn:
        return {r["case_id"]: dict(r) for r in conn.execute(sa.select(ENTRIES)).mappings()}


def case_count(memory: Memory) -> int:
    with memory.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(CASES)).scalar_one())


def test_a_case_past_retention_is_archived_at_write_and_not_embedded(memory_on: Memory) -> None:
    memory = memory_on
    old = memory.record_case(
        "ACME",
        "Charged twice on INV-000901.",
        "Credit memo CM-000902.",
        case_id="old",
        occurred_at=days_ago(200),
    )
    fresh = memory.record_case("ACME", "Late delivery of SO-000903.", "Freight refunded.", case_id="new")

    assert (old.status, fresh.status) == ("archived", "created")
    stored = entries(memory)
    assert stored["old"]["status"] == "archived" and stored["old"]["archived_at"] == NOW
    assert stored["old"]["vector_hash"] is None and stored["old"]["vector_pending"] is False
    assert memory.episodic.index.vectors([old.entry_id]) == {}
    assert case_count(memory) == 2  # the raw case is kept with its archived entry
    assert memory.episodic.apply_retention().archived == 0
    assert memory.episodic.check_index().consistent
    assert "old" not in {h.case_id for h in memory.recall_cases("ACME", "what about INV-000901?", k=3)}
    assert [h.case_id for h in memory.recall_cases("ACME", "SO-000903 late delivery", k=3)] == ["new"]


def test_include_archived_finds_the_archive_by_document_number_and_says_so(memory_on: Memory) -> None:
    memory = memory_on
    memory.record_case(
        "ACME",
        "Charged twice on INV-000901.",
        "Credit memo CM-000902.",
        case_id="old",
        occurred_at=days_ago(200),
    )
    memory.record_case("ACME", "Wrong price on INV-000777.", "Credit for the difference.", case_id="live")
    memory.record_case(
        "OTHER", "Charged twice on INV-000901.", "Voided.", case_id="theirs", occurred_at=days_ago(200)
    )

    hits = memory.recall_cases("ACME", "INV-000901 and INV-000777?", k=3, include_archived=True)

    assert [(h.case_id, h.archived) for h in hits] == [("live", False), ("old", True)]
    assert hits[1].matched_documents == ("INV-000901",)
    assert "old" not in {h.case_id for h in memory.recall_cases("ACME", "INV-000901", k=3)}
    without_number = memory.recall_cases("ACME", "charged twice", k=3, include_archived=True)
    assert all(not h.archived for h in without_number)  # the archive is reached by document number


def test_a_pii_case_past_its_window_is_not_stored(memory_on: Memory) -> None:
    memory = memory_on
    expired = memory.record_case(
        "ACME",
        "Card ending 4242 charged twice.",
        "Refunded.",
        case_id="pii",
        pii=True,
        occurred_at=days_ago(40),
    )
    kept = memory.record_case(
        "ACME",
        "Card ending 1881 declined.",
        "Retried.",
        case_id="pii-young",
        pii=True,
        occurred_at=days_ago(5),
    )

    assert (expired.status, kept.status) == ("expired", "created")
    assert set(entries(memory)) == {"pii-young"} and case_count(memory) == 1
    assert memory.episodic.apply_retention().pii_deleted == 0


def test_a_batch_reports_each_case_by_where_it_went(memory_on: Memory) -> None:
    episodic = memory_on.episodic
    batch = [
        episodic.prepare("ACME", "Short shipment on SO-000010.", "Shipped the rest.", case_id="a"),
        episodic.prepare(
            "ACME", "Old dispute on INV-000011.", "Credited.", case_id="b", occurred_at=days_ago(181)
        ),
        episodic.prepare(
            "ACME", "Old card issue.", "Refunded.", case_id="c", pii=True, occurred_at=days_ago(31)
        ),
        episodic.prepare(
            "ACME", "Old dispute on INV-000011.", "Credited.", case_id="b", occurred_at=days_ago(181)
        ),
    ]

    assert [r.status for r in episodic.record_cases(batch)] == ["created", "archived", "expired", "unchanged"]
    assert episodic.index.count() == 1


def test_erp_cases_closed_before_the_window_are_archived_and_counted_so(memory_on: Memory) -> None:
    memory = memory_on

    def crm(external_id: str, closed_days_ago: int) -> CrmCase:
        return CrmCase(
            tenant="default", external_id=external_id, customer_external_id="ACME",
            subject=f"Invoice INV-00{external_id} at the old price",
            description="Expected the contract price.",
            resolution="Credit memo issued.", status="Closed", case_class="billing", is_closed=True,
            closed_at=days_ago(closed_days_ago), content_hash=f"h{external_id}", synced_at=NOW,
        )  # fmt: skip

    with Session(memory.engine) as session:
        session.add_all([crm("7001", 3), crm("7002", 400), crm("7003", 500)])
        session.commit()

    assert memory.episodic.ingest_erp_cases_by_status("default") == {"created": 1, "archived": 2}
    assert memory.episodic.ingest_erp_cases_by_status("default") == {}
    assert [h.case_id for h in memory.recall_cases("ACME", "old price on the invoice", k=3)] == ["crm:7001"]
    archived = memory.recall_cases("ACME", "INV-007002", k=3, include_archived=True)
    assert [(h.case_id, h.archived) for h in archived] == [("crm:7002", True)]
