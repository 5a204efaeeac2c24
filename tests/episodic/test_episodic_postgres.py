"""Episodic memory with PostgreSQL as the relational store (JSONB columns, real transactions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.episodic.tables import CASES, ENTRIES
from connector.memory import Memory
from connector.settings import ChromaSettings, EpisodicSettings, Settings

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def pg_memory(pg_engine: Engine, tmp_path: Path) -> Memory:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        episodic=EpisodicSettings(allow_unknown_customers=True),  # cases for customers not synced
    )
    return Memory(settings, clock=FrozenClock(NOW), llm=None, engine=pg_engine)


def test_record_recall_retention_and_forget_on_postgres(pg_memory: Memory) -> None:
    old = NOW - timedelta(days=200)
    first = pg_memory.record_case(
        "ACME",
        "Charged twice on INV-000777 for 99.50 USD.",
        "Credit memo CM-000778 issued.",
        case_type="dispute",
    )
    assert (
        pg_memory.record_case(
            "ACME",
            "Charged twice on INV-000777 for 99.50 USD.",
            "Credit memo CM-000778 issued.",
            case_type="dispute",
        ).status
        == "unchanged"
    )
    late = pg_memory.record_case("ACME", "Late delivery of SO-000779.", "Freight refunded.", occurred_at=old)
    assert late.status == "archived"  # already past retention when written
    pg_memory.record_case("OTHER", "Charged twice on INV-000780.", "Voided.", case_type="dispute")

    hits = pg_memory.recall_cases("ACME", "what happened with inv-000777")
    assert [h.entry_id for h in hits][:1] == [first.entry_id] and hits[0].matched_documents == ("INV-000777",)
    assert pg_memory.episodic.apply_retention().archived == 0
    assert pg_memory.episodic.forget("ACME") == {
        "episodic_entries": 1,
        "episodic_archive": 1,
        "episodic_cases": 2,
    }
    with pg_memory.engine.connect() as conn:
        assert conn.execute(sa.select(ENTRIES.c.customer_id)).scalars().all() == ["OTHER"]
        assert conn.execute(sa.select(CASES.c.customer_id)).scalars().all() == ["OTHER"]
