"""Chroma is the store of record for vectors: recall reads the scope's vectors from it by id and checks
each against its row; writes commit rows before vectors; `reindex --check` finds and repairs what
differs, both ways (SQLite and PostgreSQL, embedded and server Chroma)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from chroma_fixtures import episodic_with
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.episodic import EpisodicMemory, writer
from connector.episodic.models import CaseHit
from connector.episodic.tables import ENTRIES
from connector.errors import StoreError
from connector.memory import Memory
from connector.recall.vector_index import StoredVector
from connector.settings import Settings

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


def prepared_cases(episodic: EpisodicMemory) -> list[Any]:
    """The four cases of ``CASES`` prepared for one ``record_cases`` batch of ABARTENDE."""
    return [
        episodic.prepare("ABARTENDE", request, resolution, case_id=case_id, case_type=case_type)
        for case_id, case_type, request, resolution in CASES
    ]


def entry_ids(memory: Memory, customer: str = "ABARTENDE") -> dict[str, str]:
    with memory.engine.connect() as conn:
        found = conn.execute(
            sa.select(ENTRIES.c.case_id, ENTRIES.c.id).where(ENTRIES.c.customer_id == customer)
        )
        return {r.case_id: r.id for r in found}


def recall_all(memory: Memory) -> list[list[CaseHit]]:
    return [memory.recall_cases("ABARTENDE", q, k=4) for q in QUERIES]


def assert_same_hits(a: Sequence[Sequence[CaseHit]], b: Sequence[Sequence[CaseHit]]) -> None:
    for hits_a, hits_b in zip(a, b, strict=True):
        assert [h.entry_id for h in hits_a] == [h.entry_id for h in hits_b]
        for x, y in zip(hits_a, hits_b, strict=True):
            assert x.score == pytest.approx(y.score, abs=1e-4)
            assert x.matched_documents == y.matched_documents


def assert_same_first_hits(a: Sequence[Sequence[CaseHit]], b: Sequence[Sequence[CaseHit]]) -> None:
    """Texts embedded again in another batch move slightly (per-batch int8 scaling): the best hit holds."""
    assert [hits[0].entry_id for hits in a] == [hits[0].entry_id for hits in b]


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


class RecordingIndex:
    """The real index, with the ids every ``stored`` read asked for (a VectorIndex collaborator)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.asked: list[list[str]] = []
        self.model_id, self.dimension = inner.model_id, inner.dimension

    def stored(self, ids: Sequence[str]) -> dict[str, StoredVector]:
        self.asked.append(list(ids))
        return self.inner.stored(ids)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def memory_on(engine: Engine, episodic_settings: Settings, episodic_clock: FrozenClock) -> Memory:
    """A non-LLM Memory on SQLite and PostgreSQL, with embedded and server Chroma."""
    return Memory(episodic_settings, clock=episodic_clock, llm=None, engine=engine)


def test_no_vector_is_kept_in_the_relational_rows(memory: Memory) -> None:
    seed(memory)
    columns = {c.name for c in ENTRIES.columns}
    assert "vector" not in columns
    with memory.engine.connect() as conn:
        rows = conn.execute(sa.select(ENTRIES.c.id, ENTRIES.c.vector_hash, ENTRIES.c.vector_pending)).all()
    stored = memory.episodic.index.stored([r.id for r in rows])
    assert {r.id: r.vector_hash for r in rows} == {i: s.stamp.vector_hash for i, s in stored.items()}
    assert not any(r.vector_pending for r in rows)


def test_recall_asks_the_index_for_the_scopes_ids_only(memory: Memory) -> None:
    seed(memory)
    seed(memory, customer="COFFEESHOP")
    index = RecordingIndex(memory.episodic.index)
    episodic = EpisodicMemory(
        memory.engine, clock=memory.clock, retention=memory.settings.retention,
        embedder=lambda: memory.embedder, index=lambda _: index,  # type: ignore[arg-type,return-value]
        llm=None, erasures=memory.erasures, default_tenant=memory.default_tenant,
    )  # fmt: skip

    hits = episodic.recall("ABARTENDE", "Why was I billed two times for the same order?", k=2)

    assert hits[0].case_id == "C-1"
    assert [sorted(ids) for ids in index.asked] == [sorted(entry_ids(memory).values())]


class ReshapingIndex(RecordingIndex):
    """The real index handing each stored vector back reshaped (another VectorIndex's shape or size)."""

    def __init__(self, inner: Any, reshape: Any) -> None:
        super().__init__(inner)
        self.reshape = reshape

    def stored(self, ids: Sequence[str]) -> dict[str, StoredVector]:
        found = self.inner.stored(ids).items()
        return {i: StoredVector(self.reshape(s.vector), s.stamp) for i, s in found}


def episodic_over(memory: Memory, index: Any) -> EpisodicMemory:
    return EpisodicMemory(
        memory.engine, clock=memory.clock, retention=memory.settings.retention,
        embedder=lambda: memory.embedder, index=lambda _: index,
        llm=None, erasures=memory.erasures, default_tenant=memory.default_tenant,
    )  # fmt: skip


def test_vectors_handed_back_as_one_row_matrices_rank_as_flat_ones(memory: Memory) -> None:
    seed(memory)
    expected = recall_all(memory)
    episodic = episodic_over(memory, ReshapingIndex(memory.episodic.index, lambda v: v.reshape(1, -1)))

    assert [episodic.recall("ABARTENDE", q, k=4) for q in QUERIES] == expected


def test_vectors_of_another_size_than_the_embedders_are_a_store_error(memory: Memory) -> None:
    seed(memory)
    episodic = episodic_over(memory, ReshapingIndex(memory.episodic.index, lambda v: v[:-1]))

    with pytest.raises(StoreError, match="dimension"):
        episodic.recall("ABARTENDE", QUERIES[0], k=4)


def test_a_vector_stored_under_another_scope_is_never_ranked(memory: Memory) -> None:
    seed(memory)
    c1 = entry_ids(memory)["C-1"]
    stored = memory.episodic.index.stored([c1])[c1]
    assert stored.stamp.customer_id == "ABARTENDE"
    memory.episodic.index.update_metadata([c1], [{"customer_id": "COFFEESHOP"}])

    hits = memory.recall_cases("ABARTENDE", "Why was I billed two times for the same order?", k=4)

    assert hits and c1 not in {h.entry_id for h in hits}
    assert memory.episodic.check_index().missing == 1


def test_a_vector_that_is_not_the_one_its_row_wants_is_skipped_until_fixed(memory: Memory) -> None:
    seed(memory)
    expected = recall_all(memory)
    c2 = entry_ids(memory)["C-2"]
    with memory.engine.begin() as conn:  # the row now wants another vector than Chroma holds
        conn.execute(sa.update(ENTRIES).where(ENTRIES.c.id == c2).values(vector_hash="0" * 32))
    assert c2 not in {h.entry_id for hits in recall_all(memory) for h in hits}

    check = memory.episodic.check_index(fix=True)

    assert (check.missing, check.orphans, check.fixed) == (1, 0, True)
    assert memory.episodic.check_index().consistent
    assert_same_first_hits(recall_all(memory), expected)


def test_a_failed_sql_commit_leaves_no_vector_in_chroma(memory_on: Memory) -> None:
    memory = memory_on
    memory.episodic.index.count()  # the collection exists before the failing write

    def refuse(conn: sa.Connection) -> None:
        raise RuntimeError("disk full")

    sa.event.listen(memory.engine, "commit", refuse)
    try:
        with pytest.raises(RuntimeError, match="disk full"):
            seed(memory)
    finally:
        sa.event.remove(memory.engine, "commit", refuse)

    assert memory.episodic.index.count() == 0
    with memory.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(ENTRIES)).scalar_one() == 0
    assert memory.episodic.check_index().consistent


def test_a_failed_chroma_write_leaves_pending_rows_the_next_write_completes(memory_on: Memory) -> None:
    memory = memory_on
    index = memory.episodic.index
    original = index.upsert

    def refuse(*args: object) -> None:
        raise StoreError("Chroma upsert failed: server gone")

    index.upsert = refuse  # type: ignore[method-assign]
    try:
        with pytest.raises(StoreError, match="pending"):
            memory.record_case("ABARTENDE", CASES[0][2], CASES[0][3], case_id="C-1", case_type="dispute")
    finally:
        index.upsert = original  # type: ignore[method-assign]

    with memory.engine.connect() as conn:
        assert conn.execute(sa.select(ENTRIES.c.vector_pending)).scalars().all() == [True]
    assert index.count() == 0
    assert memory.recall_cases("ABARTENDE", "billed twice for one order") == []
    assert memory.episodic.check_index().missing == 1

    again = memory.record_case("ABARTENDE", CASES[0][2], CASES[0][3], case_id="C-1", case_type="dispute")

    assert again.status == "updated"
    assert [h.case_id for h in memory.recall_cases("ABARTENDE", "billed twice for one order")] == ["C-1"]
    assert memory.episodic.check_index().consistent


def test_reindex_check_reports_and_fixes_orphans_and_missing_vectors(memory_on: Memory) -> None:
    memory = memory_on
    seed(memory)
    expected = recall_all(memory)
    index = memory.episodic.index
    lost = entry_ids(memory)["C-3"]
    index.delete([lost])
    orphan = np.ones((1, index.dimension), dtype=np.float32) / np.sqrt(index.dimension)
    index.upsert(["no-such-entry"], orphan, [{"tenant": "default", "customer_id": "ABARTENDE"}])

    check = memory.episodic.check_index()

    assert (check.live_entries, check.index_vectors, check.orphans, check.missing) == (4, 4, 1, 1)
    assert not check.consistent and not check.fixed
    assert index.count() == 4  # a check alone changes nothing

    fixed = memory.episodic.check_index(fix=True)

    assert fixed.fixed and (fixed.orphans, fixed.missing) == (1, 1)
    assert index.vectors(["no-such-entry"]) == {} and lost in index.vectors([lost])
    assert memory.episodic.check_index().consistent
    assert_same_first_hits(recall_all(memory), expected)


def test_rows_from_before_vector_hashes_are_recalled_and_stamped_without_embedding(memory: Memory) -> None:
    seed(memory)
    expected = recall_all(memory)
    with memory.engine.begin() as conn:
        conn.execute(sa.update(ENTRIES).values(vector_hash=None))
    ids = list(entry_ids(memory).values())
    memory.episodic.index.update_metadata(ids, [{"vector_hash": ""}] * len(ids))
    assert_same_hits(recall_all(memory), expected)

    with embedder_must_not_run(memory.episodic):
        assert memory.episodic.check_index(fix=True).unstamped == len(CASES)

    with memory.engine.connect() as conn:
        assert None not in conn.execute(sa.select(ENTRIES.c.vector_hash)).scalars().all()
    assert memory.episodic.check_index().consistent


def test_reindex_with_the_same_model_embeds_nothing(memory: Memory) -> None:
    seed(memory)
    expected = recall_all(memory)
    with embedder_must_not_run(memory.episodic):
        assert memory.episodic.reindex() == len(CASES)
    assert_same_hits(recall_all(memory), expected)


def test_restore_embeds_the_archived_summary_again(memory: Memory, episodic_clock: FrozenClock) -> None:
    seed(memory)
    expected = recall_all(memory)
    episodic_clock.advance(timedelta(days=400))
    assert memory.episodic.apply_retention().archived == len(CASES)
    assert memory.episodic.index.count() == 0

    assert memory.episodic.restore("ABARTENDE").restored == len(CASES)

    assert memory.episodic.index.count() == len(CASES)
    assert_same_first_hits(recall_all(memory), expected)
    assert memory.episodic.check_index().consistent


class OtherModel:
    """A stand-in embedder with another model id and dimension."""

    model_id = "other-model"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:  # type: ignore[type-arg]
        return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)


def test_reindex_for_another_model_embeds_every_live_entry_again(memory: Memory) -> None:
    seed(memory)
    other = episodic_with(memory, OtherModel())  # type: ignore[arg-type]
    assert other.reindex() == len(CASES)
    with memory.engine.connect() as conn:
        models = conn.execute(sa.select(ENTRIES.c.embedding_model)).scalars().all()
    assert set(models) == {"other-model"}
    assert [h.case_id for h in other.recall("ABARTENDE", "status of inv004900?")][:1] == ["C-2"]
    assert other.check_index().consistent


def test_a_long_batch_stops_after_its_complete_chunks_when_chroma_fails_and_completes_when_repeated(
    memory_on: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of a long batch are complete in both stores before the next one starts: a Chroma
    failure in the second chunk leaves the first recorded, the second pending (reported by
    ``reindex --check``), the rest unwritten; the same batch again completes it."""
    memory = memory_on
    monkeypatch.setattr(writer, "WRITE_CHUNK", 2)
    episodic = memory.episodic
    batch = prepared_cases(episodic)
    batch.append(episodic.prepare("ABARTENDE", CASES[0][2], CASES[0][3], case_id="C-1b", case_type="dispute"))
    batch.append(episodic.prepare("ABARTENDE", "Portal login locked.", "Password reset.", case_id="C-5"))
    index = episodic.index
    original, upserts = index.upsert, []

    def second_fails(*args: Any) -> None:
        upserts.append(args)
        if len(upserts) == 2:
            raise StoreError("Chroma upsert failed: server gone")
        original(*args)

    index.upsert = second_fails  # type: ignore[method-assign]
    try:
        with pytest.raises(StoreError, match="pending"):
            episodic.record_cases(batch)
    finally:
        index.upsert = original  # type: ignore[method-assign]

    with memory.engine.connect() as conn:
        pending = dict(conn.execute(sa.select(ENTRIES.c.case_id, ENTRIES.c.vector_pending)).all())
    assert pending == {"C-1": False, "C-2": False, "C-3": True, "C-4": True}
    ids = entry_ids(memory)
    assert set(index.vectors(list(ids.values()))) == {ids["C-1"], ids["C-2"]}
    check = episodic.check_index()
    assert (check.missing, check.orphans) == (2, 0) and not check.consistent

    again = episodic.record_cases(batch)

    assert [r.status for r in again] == ["unchanged", "unchanged", "updated", "updated", "merged", "created"]
    assert again[4].entry_id == again[0].entry_id  # the same content under another id, chunks apart
    assert episodic.check_index().consistent
    assert [h.case_id for h in memory.recall_cases("ABARTENDE", "the delivery came late", k=1)] == ["C-2"]


def test_an_embedding_that_fails_while_the_rows_are_prepared_stores_nothing_and_raises_its_error(
    memory_on: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The texts embed on a helper thread while the batch's rows are read, applied and written: a
    failure there rolls the rows back and reaches the caller as the embedder raised it; nothing is
    half stored, and the same batch recorded again is created whole."""
    memory = memory_on
    episodic = memory.episodic
    batch = prepared_cases(episodic)

    def refuse(texts: Sequence[str]) -> object:
        raise StoreError("embeddings endpoint failed: 503")

    monkeypatch.setattr(episodic.embedder, "embed", refuse)
    with pytest.raises(StoreError, match="embeddings endpoint failed: 503"):
        episodic.record_cases(batch)
    monkeypatch.undo()

    assert entry_ids(memory) == {}
    assert episodic.index.count() == 0
    assert episodic.check_index().consistent

    again = episodic.record_cases(batch)

    assert [r.status for r in again] == ["created"] * len(CASES)
    assert [h.case_id for h in memory.recall_cases("ABARTENDE", "the delivery came late", k=1)] == ["C-2"]
    assert episodic.check_index().consistent


def test_a_long_batch_whose_second_chunk_fails_to_embed_keeps_the_first_chunk_complete(
    memory_on: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next chunk embeds while this one is written; its failure stops the batch after the
    chunks already complete (recallable, nothing pending) with the embedder's own error."""
    memory = memory_on
    monkeypatch.setattr(writer, "WRITE_CHUNK", 2)
    episodic = memory.episodic
    batch = prepared_cases(episodic)
    embedder = episodic.embedder
    original, calls = embedder.embed, []

    def second_fails(texts: Sequence[str]) -> Any:
        calls.append(list(texts))
        if len(calls) == 2:
            raise RuntimeError("onnxruntime: out of memory")
        return original(texts)

    monkeypatch.setattr(embedder, "embed", second_fails)
    with pytest.raises(RuntimeError, match="out of memory"):
        episodic.record_cases(batch)
    monkeypatch.undo()

    with memory.engine.connect() as conn:
        pending = dict(conn.execute(sa.select(ENTRIES.c.case_id, ENTRIES.c.vector_pending)).all())
    assert pending == {"C-1": False, "C-2": False}
    assert episodic.check_index().consistent

    again = episodic.record_cases(batch)

    assert [r.status for r in again] == ["unchanged", "unchanged", "created", "created"]
    assert episodic.check_index().consistent
