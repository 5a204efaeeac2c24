"""Retention, restore, erasure, reindex, model mismatch and ERP ingest (embedded and server Chroma)."""

from __future__ import annotations

import socket
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from chroma_fixtures import episodic_with

from connector.clock import FrozenClock
from connector.embeddings import MiniLMEmbedder
from connector.embeddings.minilm import MODEL_ID, QINT8_ID
from connector.episodic.tables import CASES, ENTRIES
from connector.errors import EmbeddingModelMismatch, ScopeError, StoreError
from connector.memory import Memory
from connector.semantic.tables import CrmCase
from connector.settings import ChromaSettings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def days_ago(n: int) -> datetime:
    return NOW - timedelta(days=n)


def rows(memory: Memory, table: sa.Table) -> list[dict[str, object]]:
    with memory.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(table)).mappings()]


def record(memory: Memory, customer: str, case_id: str, age_days: int, *, pii: bool = False) -> str:
    return memory.record_case(
        customer,
        f"Customer asked about invoice INV-{zlib.crc32(case_id.encode()) % 10**6:06d} ({case_id}).",
        f"Explained the charge and closed {case_id}.",
        case_id=case_id,
        occurred_at=days_ago(age_days),
        pii=pii,
    ).entry_id


def test_retention_archives_old_entries_and_deletes_old_pii(
    memory: Memory, episodic_clock: FrozenClock
) -> None:
    fresh = record(memory, "ACME", "fresh", 8)
    old = record(memory, "ACME", "old", 179)
    pii_young = record(memory, "ACME", "pii-young", 27, pii=True)
    pii_old = record(memory, "ACME", "pii-old", 29, pii=True)
    episodic_clock.advance(timedelta(days=2))

    report = memory.episodic.apply_retention()

    assert (report.archived, report.pii_deleted) == (1, 1)
    by_id = {r["id"]: r for r in rows(memory, ENTRIES)}
    assert by_id[fresh]["status"] == "live" and by_id[pii_young]["status"] == "live"
    assert by_id[old]["status"] == "archived" and by_id[old]["archived_at"] == NOW + timedelta(days=2)
    assert pii_old not in by_id and all(c["entry_id"] != pii_old for c in rows(memory, CASES))
    assert set(memory.episodic.index.vectors([fresh, old, pii_young, pii_old])) == {fresh, pii_young}
    assert memory.episodic.apply_retention().archived == 0  # idempotent


def test_restore_brings_archived_entries_back_and_restarts_their_clock(memory: Memory) -> None:
    old = record(memory, "ACME", "old", 200)
    other = record(memory, "ACME", "older", 300)
    memory.episodic.apply_retention()
    assert memory.recall_cases("ACME", "invoice question") == []

    report = memory.episodic.restore("ACME", case_ids=["old"])

    assert report.entry_ids == (old,)
    assert [h.entry_id for h in memory.recall_cases("ACME", "invoice question")] == [old]
    assert memory.episodic.apply_retention().archived == 0  # restored today: kept
    assert memory.episodic.restore("ACME").entry_ids == (other,)


def test_archived_pii_is_deleted_too(memory: Memory, episodic_clock: FrozenClock) -> None:
    entry = record(memory, "ACME", "pii", 5, pii=True)
    episodic_clock.advance(timedelta(days=26))
    assert memory.episodic.apply_retention().pii_deleted == 1
    assert rows(memory, ENTRIES) == [] and rows(memory, CASES) == []
    assert memory.episodic.index.vectors([entry]) == {}


def test_forget_erases_a_customer_from_every_store_and_reports_it(memory: Memory) -> None:
    live = record(memory, "ACME", "a", 1)
    archived = record(memory, "ACME", "b", 190)
    memory.episodic.apply_retention()
    kept = record(memory, "OTHER", "a", 1)

    removed = memory.episodic.forget("ACME")

    assert removed == {"episodic_entries": 1, "episodic_archive": 1, "episodic_cases": 2}
    assert {r["customer_id"] for r in rows(memory, ENTRIES)} == {"OTHER"}
    assert {r["customer_id"] for r in rows(memory, CASES)} == {"OTHER"}
    assert set(memory.episodic.index.vectors([live, archived, kept])) == {kept}
    assert memory.episodic.forget("ACME") == {
        "episodic_entries": 0,
        "episodic_archive": 0,
        "episodic_cases": 0,
    }


def test_forget_needs_a_customer(memory: Memory) -> None:
    with pytest.raises(ScopeError):
        memory.episodic.forget(" ")


class OtherModel:
    """A stand-in embedder with another model id and dimension."""

    model_id = "other-model"
    dimension = 8

    def embed(self, texts: object) -> object:
        import numpy as np

        return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)  # type: ignore[arg-type]


def test_opening_an_index_built_with_another_model_is_a_clear_error(memory: Memory) -> None:
    record(memory, "ACME", "a", 1)
    other = episodic_with(memory, OtherModel())  # type: ignore[arg-type]
    with pytest.raises(
        EmbeddingModelMismatch, match=r"minilm-l6-v2-qint8-mha \(dimension 384\).*other-model.*reindex"
    ):
        other.recall("ACME", "invoice")


def test_reindex_rebuilds_the_index_for_the_configured_model(memory: Memory) -> None:
    entry = record(memory, "ACME", "a", 1)
    record(memory, "ACME", "b", 200)
    memory.episodic.apply_retention()
    other = episodic_with(memory, OtherModel())  # type: ignore[arg-type]

    assert other.reindex() == 1  # the live entry only; the archive stays out of the index
    assert [h.entry_id for h in other.recall("ACME", "invoice")] == [entry]
    assert {r["embedding_model"] for r in rows(memory, ENTRIES) if r["status"] == "live"} == {"other-model"}
    with pytest.raises(EmbeddingModelMismatch):
        episodic_with(memory, memory.embedder).recall("ACME", "invoice")
    assert episodic_with(memory, memory.embedder).reindex() == 1


def test_a_store_of_the_previous_default_build_is_refused_until_reindexed(memory: Memory) -> None:
    entry = record(memory, "ACME", "a", 1)
    previous = episodic_with(memory, MiniLMEmbedder(model=QINT8_ID))
    assert previous.reindex() == 1  # as a store written before the default changed
    current = episodic_with(memory, memory.embedder)
    refused = rf"built with {QINT8_ID} .*configured embedder is {MODEL_ID} .*reindex"
    with pytest.raises(EmbeddingModelMismatch, match=refused):
        current.recall("ACME", "invoice")

    assert current.reindex() == 1
    assert [h.entry_id for h in current.recall("ACME", "invoice")] == [entry]
    assert {r["embedding_model"] for r in rows(memory, ENTRIES)} == {MODEL_ID}


def crm_case(external_id: str, customer: str | None, **kw: object) -> CrmCase:
    values: dict[str, object] = {
        "tenant": "default",
        "external_id": external_id,
        "customer_external_id": customer,
        "subject": "Invoice INV-007001 charged at the old price list",
        "description": "Customer expected the 2026 contract price of 12.40 USD per unit.",
        "resolution": "Credit memo CM-000500 for 62.00 USD issued.",
        "status": "Closed",
        "case_class": "billing",
        "is_closed": True,
        "closed_at": days_ago(3),
        "content_hash": "h1",
        "synced_at": NOW,
    }
    values.update(kw)
    return CrmCase(**values)  # type: ignore[arg-type]


def test_closed_erp_cases_become_entries_once_and_follow_changes(memory: Memory) -> None:
    from sqlmodel import Session

    with Session(memory.engine) as session:
        session.add(crm_case("000101", "ACME"))
        session.add(crm_case("000102", "ACME", is_closed=False, status="Open"))
        session.add(crm_case("000103", None))
        session.commit()

    assert memory.episodic.ingest_erp_cases("default") == 1
    assert memory.episodic.ingest_erp_cases("default") == 0
    hit = memory.recall_cases("ACME", "wrong price on the invoice")[0]
    assert hit.case_id == "crm:000101" and "CM-000500" in hit.summary and hit.case_type == "billing"

    with memory.engine.begin() as conn:
        conn.execute(
            sa.update(CrmCase.metadata.tables["crm_case"])
            .where(sa.column("external_id") == "000101")
            .values(resolution="Refund of 62.00 USD paid instead.", content_hash="h2")
        )
    assert memory.episodic.ingest_erp_cases("default") == 1
    assert "Refund of 62.00 USD" in memory.recall_cases("ACME", "wrong price on the invoice")[0].summary
    assert len(rows(memory, ENTRIES)) == 1


def test_an_unreachable_chroma_server_is_a_store_error_and_loses_nothing(
    memory: Memory, tmp_path: Path, unused_port: int
) -> None:
    settings = memory.settings.model_copy(
        update={"data_dir": tmp_path / "down", "chroma": ChromaSettings(host="127.0.0.1", port=unused_port)}
    )
    down = Memory(settings, clock=memory.clock, llm=None, engine=memory.engine)
    with pytest.raises(StoreError, match=f"127.0.0.1:{unused_port}"):
        down.record_case("ACME", "Disputed INV-000001.", "Credited.")
    assert rows(memory, ENTRIES) == [] and rows(memory, CASES) == []
