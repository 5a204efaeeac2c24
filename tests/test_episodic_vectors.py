"""The relational vector copy: recall ranks from it, falls back to Chroma without it, restore and
reindex reuse it instead of embedding again (embedded and server Chroma)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import sqlalchemy as sa
from chroma_fixtures import episodic_with

from connector.clock import FrozenClock
from connector.episodic import EpisodicMemory
from connector.episodic import vectors as copies
from connector.episodic.models import CaseHit
from connector.episodic.tables import ENTRIES
from connector.memory import Memory

T0 = datetime(2026, 2, 1, tzinfo=UTC)
CASES = [
    ("C-1", "dispute", "Customer was invoiced twice for order SO-000123 (INV-004821 and INV-004822).",
     "Voided INV-004822 and issued credit memo CM-000311 for 1,250.00 USD."),
    ("C-2", "late_delivery", "Pallet of copper fittings on SO-000140 arrived nine days late.",
     "Refunded freight of 85.00 USD on INV-004900."),
    ("C-3", "tax_correction", "Sales tax charged on INV-005010 although the customer is tax exempt.",
     "Tax line removed, corrected invoice issued; credit of 96.40 USD."),
    ("C-4", "pricing", "Unit price on INV-005100 was the old list price instead of the contract price.",
     "Credit memo CM-000320 for the difference of 42.00 USD."),
]  # fmt: skip
QUERIES = [
    "Why was I billed two times for the same order?",
    "the delivery came late, what did we do?",
    "they are exempt from sales tax",
    "wrong price on the invoice",
    "status of inv004900?",
    "invoice problem",
]


def seed(memory: Memory, customer: str = "ABARTENDE") -> None:
    for i, (case_id, case_type, request, resolution) in enumerate(CASES):
        memory.record_case(
            customer, request, resolution, case_id=case_id, case_type=case_type,
            occurred_at=T0 + timedelta(days=i),
        )  # fmt: skip


def drop_copies(memory: Memory, customer: str = "ABARTENDE") -> None:
    """Make the rows look like rows written before migration 0006 (no vector copy)."""
    with memory.engine.begin() as conn:
        conn.execute(sa.update(ENTRIES).where(ENTRIES.c.customer_id == customer).values(vector=None))


def recall_all(memory: Memory) -> list[list[CaseHit]]:
    return [memory.recall_cases("ABARTENDE", q, k=4) for q in QUERIES]


def assert_same_hits(a: Sequence[Sequence[CaseHit]], b: Sequence[Sequence[CaseHit]]) -> None:
    for hits_a, hits_b in zip(a, b, strict=True):
        assert [h.entry_id for h in hits_a] == [h.entry_id for h in hits_b]
        for x, y in zip(hits_a, hits_b, strict=True):
            assert x.score == pytest.approx(y.score, abs=2e-3)  # float16 copy vs float32 in Chroma
            assert x.matched_documents == y.matched_documents


@contextmanager
def chroma_reads_fail(episodic: EpisodicMemory) -> Iterator[None]:
    original = episodic.index.vectors

    def refuse(ids: Sequence[str]) -> dict[str, object]:
        raise AssertionError(f"Chroma was asked for {len(ids)} vectors")

    episodic.index.vectors = refuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        episodic.index.vectors = original  # type: ignore[method-assign]


@contextmanager
def embedder_must_not_run(episodic: EpisodicMemory) -> Iterator[None]:
    embedder = episodic.embedder
    original = embedder.embed

    def refuse(texts: Sequence[str]) -> object:
        raise AssertionError(f"the embedder was called for {len(texts)} texts")

    embedder.embed = refuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        embedder.embed = original  # type: ignore[method-assign]


def test_every_entry_row_carries_a_float16_copy_of_its_vector(memory: Memory) -> None:
    seed(memory)
    with memory.engine.connect() as conn:
        rows = conn.execute(sa.select(ENTRIES.c.id, ENTRIES.c.vector, ENTRIES.c.embedding_model)).all()
    in_chroma = memory.episodic.index.vectors([r.id for r in rows])
    for row in rows:
        assert len(row.vector) == 2 * memory.episodic.embedder.dimension
        assert row.embedding_model == memory.episodic.embedder.model_id
        np.testing.assert_allclose(copies.decode(row.vector), in_chroma[row.id], atol=1e-3)


def test_recall_ranks_from_the_copies_without_chroma_and_matches_the_chroma_ranking(memory: Memory) -> None:
    seed(memory)
    with chroma_reads_fail(memory.episodic):
        from_copies = recall_all(memory)
    drop_copies(memory)
    from_chroma = recall_all(memory)
    assert from_copies[0][0].case_id == "C-1" and from_copies[4][0].case_id == "C-2"
    assert_same_hits(from_copies, from_chroma)


def test_rows_without_a_copy_are_read_from_chroma_beside_rows_with_one(memory: Memory) -> None:
    seed(memory)
    expected = recall_all(memory)
    with memory.engine.begin() as conn:  # half the rows lose their copy
        conn.execute(sa.update(ENTRIES).where(ENTRIES.c.case_id.in_(["C-1", "C-3"])).values(vector=None))
    assert_same_hits(recall_all(memory), expected)


def test_a_row_whose_vector_is_nowhere_is_skipped_not_an_error(memory: Memory) -> None:
    seed(memory)
    with memory.engine.connect() as conn:
        lost = conn.execute(sa.select(ENTRIES.c.id).where(ENTRIES.c.case_id == "C-1")).scalar_one()
    drop_copies(memory)
    memory.episodic.index.delete([lost])
    hits = memory.recall_cases("ABARTENDE", "Why was I billed two times for the same order?", k=4)
    assert hits and lost not in {h.entry_id for h in hits}


def test_restore_puts_the_archived_copy_back_without_embedding(
    memory: Memory, episodic_clock: FrozenClock
) -> None:
    seed(memory)
    expected = recall_all(memory)
    episodic_clock.advance(timedelta(days=400))
    assert memory.episodic.apply_retention().archived == len(CASES)
    assert memory.recall_cases("ABARTENDE", "invoice problem") == []

    with embedder_must_not_run(memory.episodic):
        assert memory.episodic.restore("ABARTENDE").restored == len(CASES)

    assert memory.episodic.index.count() == len(CASES)
    assert_same_hits(recall_all(memory), expected)
    drop_copies(memory)  # what Chroma got back is the same vector
    assert_same_hits(recall_all(memory), expected)


def test_reindex_rebuilds_chroma_from_the_copies_without_embedding(memory: Memory) -> None:
    seed(memory)
    expected = recall_all(memory)
    with embedder_must_not_run(memory.episodic):
        assert memory.episodic.reindex() == len(CASES)
    drop_copies(memory)
    assert_same_hits(recall_all(memory), expected)


def test_reindex_gives_rows_from_before_the_copy_one_taken_from_chroma(memory: Memory) -> None:
    seed(memory)
    expected = recall_all(memory)
    drop_copies(memory)
    with embedder_must_not_run(memory.episodic):
        assert memory.episodic.reindex() == len(CASES)
    with memory.engine.connect() as conn:
        assert None not in conn.execute(sa.select(ENTRIES.c.vector)).scalars().all()
    with chroma_reads_fail(memory.episodic):
        assert_same_hits(recall_all(memory), expected)


class OtherModel:
    """A stand-in embedder with another model id and dimension."""

    model_id = "other-model"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:  # type: ignore[type-arg]
        return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)


def test_copies_of_another_model_are_never_used_for_ranking(memory: Memory) -> None:
    seed(memory)
    other = episodic_with(memory, OtherModel())  # type: ignore[arg-type]
    assert other.reindex() == len(CASES)  # re-embeds: the copies were made by MiniLM
    with memory.engine.connect() as conn:
        rows = conn.execute(sa.select(ENTRIES.c.vector, ENTRIES.c.embedding_model)).all()
    assert {(len(r.vector), r.embedding_model) for r in rows} == {(16, "other-model")}
    assert [h.case_id for h in other.recall("ABARTENDE", "status of inv004900?")][:1] == ["C-2"]
