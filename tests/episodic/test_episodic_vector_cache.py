"""The in-process vector cache is derived from Chroma and cannot diverge from it: a hit needs the
scope and the hash the row wants now, writes and erasure drop what they touch, it stays within its
byte budget, and recall ranks exactly the same with it as without it."""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa
from chroma_fixtures import episodic_with
from test_episodic_vectors import QUERIES, entry_ids, recall_all, seed

from connector.episodic.models import CaseHit
from connector.episodic.tables import ENTRIES
from connector.memory import Memory
from connector.recall.vector_cache import VectorCache
from connector.recall.vector_index import Stamp
from connector.scope import Scope

ALICE = Scope.of("default", "ALICE")
BOB = Scope.of("default", "BOB")
DIM = 8


def unit(seed_value: int) -> np.ndarray:
    vector = np.random.default_rng(seed_value).standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def stamp(scope: Scope, vector_hash: str | None) -> Stamp:
    return Stamp(scope.tenant, scope.customer_id, vector_hash)


def hits_as_tuples(hits: list[list[CaseHit]]) -> list[list[tuple[object, ...]]]:
    return [[(h.entry_id, h.score, h.lexical_score, h.fused_score) for h in q] for q in hits]


# The cache on its own -------------------------------------------------------------------------------
def test_a_cached_vector_is_returned_only_for_the_hash_its_row_wants() -> None:
    cache = VectorCache(1 << 20)
    cache.keep("e1", stamp(ALICE, "h1"), unit(1))

    assert np.array_equal(cache.lookup(ALICE, {"e1": "h1"})["e1"], unit(1))
    assert cache.lookup(ALICE, {"e1": "h2"}) == {}  # another writer re-embedded the entry
    assert cache.lookup(ALICE, {"e1": None}) == {}  # a row from before hashes reads Chroma


def test_a_cached_vector_is_never_returned_to_another_scope() -> None:
    cache = VectorCache(1 << 20)
    cache.keep("e1", stamp(ALICE, "h1"), unit(1))

    assert cache.lookup(BOB, {"e1": "h1"}) == {}
    assert cache.lookup(Scope.of("other-tenant", "ALICE"), {"e1": "h1"}) == {}


def test_an_unstamped_vector_is_not_cached() -> None:
    cache = VectorCache(1 << 20)
    cache.keep("e1", stamp(ALICE, None), unit(1))
    cache.keep("e2", Stamp(None, None, "h2"), unit(2))

    assert cache.stats().entries == 0


def test_the_cache_stays_within_its_bytes_and_drops_the_least_recently_used() -> None:
    one = VectorCache(1 << 20)
    one.keep("probe", stamp(ALICE, "h"), unit(0))
    size = one.stats().bytes
    cache = VectorCache(3 * size)
    for i in range(3):
        cache.keep(f"e{i}", stamp(ALICE, f"h{i}"), unit(i))
    cache.lookup(ALICE, {"e0": "h0"})  # e0 used last: e1 is now the oldest

    cache.keep("e3", stamp(ALICE, "h3"), unit(3))

    assert cache.stats().bytes <= 3 * size
    assert set(cache.lookup(ALICE, {f"e{i}": f"h{i}" for i in range(4)})) == {"e0", "e2", "e3"}


def test_a_cache_of_zero_bytes_holds_nothing() -> None:
    cache = VectorCache(0)
    cache.keep("e1", stamp(ALICE, "h1"), unit(1))

    assert cache.lookup(ALICE, {"e1": "h1"}) == {} and cache.stats().entries == 0


def test_a_cached_vector_cannot_be_changed_through_a_hit() -> None:
    cache = VectorCache(1 << 20)
    source = unit(1)
    cache.keep("e1", stamp(ALICE, "h1"), source)
    source[0] = 9.0  # the caller's array is not the cached one

    hit = cache.lookup(ALICE, {"e1": "h1"})["e1"]

    assert np.array_equal(hit, unit(1))
    with pytest.raises(ValueError):
        hit[0] = 9.0


def test_dropping_a_scope_leaves_other_scopes_cached() -> None:
    cache = VectorCache(1 << 20)
    cache.keep("a1", stamp(ALICE, "h1"), unit(1))
    cache.keep("b1", stamp(BOB, "h2"), unit(2))

    cache.drop_scope(ALICE)

    assert cache.ids_of(ALICE) == set() and cache.ids_of(BOB) == {"b1"}


# Through recall ---------------------------------------------------------------------------------------
def test_recall_ranks_the_same_with_and_without_the_cache(memory: Memory) -> None:
    seed(memory)
    seed(memory, customer="COFFEESHOP")
    uncached = episodic_with(memory, memory.embedder)  # no vector cache: every read goes to Chroma
    without = [uncached.recall("ABARTENDE", q, k=4) for q in QUERIES]

    cold, warm = recall_all(memory), recall_all(memory)

    assert memory.episodic.index.cache.stats().hits > 0
    assert hits_as_tuples(cold) == hits_as_tuples(without) == hits_as_tuples(warm)


def test_the_cache_holds_only_what_chroma_holds(memory: Memory) -> None:
    seed(memory)
    recall_all(memory)
    cache = memory.episodic.index.cache
    ids = sorted(cache.ids_of(Scope.of("default", "ABARTENDE")))
    stored = memory.episodic.index.inner.stored(ids)
    with memory.engine.connect() as conn:
        hashes = dict(conn.execute(sa.select(ENTRIES.c.id, ENTRIES.c.vector_hash)).all())

    cached = cache.lookup(Scope.of("default", "ABARTENDE"), {i: hashes[i] for i in ids})

    assert ids and set(cached) == set(ids)
    for entry_id in ids:
        assert np.array_equal(cached[entry_id], stored[entry_id].vector)
        assert stored[entry_id].stamp.vector_hash == hashes[entry_id]


def test_an_entry_another_process_rewrote_is_read_again_from_chroma(memory: Memory) -> None:
    seed(memory)
    recall_all(memory)  # this process now caches every entry of the customer
    other = episodic_with(memory, memory.embedder)  # another process: its own cache, same stores
    other.record_case(
        "ABARTENDE", "Customer asked to change the delivery address of SO-000140 to the new warehouse.",
        "Address updated before dispatch.", case_id="C-2", case_type="late_delivery",
    )  # fmt: skip
    c2 = entry_ids(memory)["C-2"]
    fresh = episodic_with(memory, memory.embedder)

    hits = memory.recall_cases("ABARTENDE", "new warehouse delivery address", k=4)

    assert hits_as_tuples([hits]) == hits_as_tuples(
        [fresh.recall("ABARTENDE", "new warehouse delivery address", k=4)]
    )
    assert hits[0].entry_id == c2
    with memory.engine.connect() as conn:
        wanted = conn.execute(sa.select(ENTRIES.c.vector_hash).where(ENTRIES.c.id == c2)).scalar_one()
    stored = memory.episodic.index.inner.stored([c2])[c2]
    cached = memory.episodic.index.cache.lookup(Scope.of("default", "ABARTENDE"), {c2: wanted})
    assert np.array_equal(cached[c2], stored.vector)


def test_forget_leaves_nothing_of_the_customer_in_the_cache(memory: Memory) -> None:
    seed(memory)
    seed(memory, customer="COFFEESHOP")
    recall_all(memory)
    memory.recall_cases("COFFEESHOP", QUERIES[0], k=4)
    cache = memory.episodic.index.cache
    gone, kept = Scope.of("default", "ABARTENDE"), Scope.of("default", "COFFEESHOP")
    assert cache.ids_of(gone) and cache.ids_of(kept)

    memory.forget("ABARTENDE")

    assert cache.ids_of(gone) == set()
    assert len(cache.ids_of(kept)) == len(entry_ids(memory, "COFFEESHOP"))
    assert cache.stats().entries == len(cache.ids_of(kept))


def test_a_customer_erased_by_another_process_leaves_the_cache_at_its_next_recall(memory: Memory) -> None:
    seed(memory)
    recall_all(memory)
    episodic_with(memory, memory.embedder).forget("ABARTENDE")

    assert memory.recall_cases("ABARTENDE", QUERIES[0], k=4) == []
    assert memory.episodic.index.cache.ids_of(Scope.of("default", "ABARTENDE")) == set()


def test_writes_through_the_index_drop_what_they_touch(memory: Memory) -> None:
    seed(memory)
    recall_all(memory)
    index = memory.episodic.index
    scope = Scope.of("default", "ABARTENDE")
    ids = entry_ids(memory)
    c1, c3 = ids["C-1"], ids["C-3"]

    index.update_metadata([c1], [{"tenant": "default", "customer_id": "COFFEESHOP"}])
    index.delete([c3])

    assert c1 not in index.cache.ids_of(scope) and c3 not in index.cache.ids_of(scope)
    hits = {h.entry_id for q in recall_all(memory) for h in q}
    assert c1 not in hits and c3 not in hits  # Chroma's second guard and a missing vector, as uncached
    index.recreate()
    assert index.cache.stats().entries == 0
