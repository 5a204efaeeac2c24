"""A case vector's Chroma metadata is its stamp alone (tenant, customer, vector hash). A collection
written by an older version holds six more keys per vector: it is recalled exactly as before, with the
same second guard, every vector written again sheds them, and `reindex` (or `--check --fix`) rewrites
the rest without embedding anything (SQLite and PostgreSQL, embedded and server Chroma)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from test_episodic_vectors import (
    CASES,
    assert_same_hits,
    embedder_must_not_run,
    entry_ids,
    memory_on,
    recall_all,
    seed,
)

from connector.episodic.tables import ENTRIES
from connector.memory import Memory
from connector.recall.vector_index import STAMP_KEYS

__all__ = ["memory_on"]  # the fixture, shared with test_episodic_vectors

OLD_KEYS = frozenset({"case_id", "case_type", "occurred_at", "occurred_at_ts", "documents", "pii"})
STAMP = frozenset(STAMP_KEYS)


def collection(memory: Memory) -> Any:
    """The raw Chroma collection behind the index (writes here bypass what the index adds)."""
    return memory.episodic.index.inner.collection


def stored_keys(memory: Memory) -> dict[str, frozenset[str]]:
    ids = list(entry_ids(memory).values())
    got = collection(memory).get(ids=ids, include=["metadatas"])
    return {i: frozenset(m) for i, m in zip(got["ids"], got["metadatas"], strict=True)}


def write_as_the_old_version(memory: Memory, *, customer_of: dict[str, str] | None = None) -> list[str]:
    """Give every entry's vector the nine keys the writer stored before (``customer_of``: entry ids
    whose vector is stamped with another customer). Returns the entry ids."""
    with memory.engine.connect() as conn:
        rows = [dict(r) for r in conn.execute(sa.select(ENTRIES)).mappings()]
    ids = [r["id"] for r in rows]
    old = [
        {
            "tenant": r["tenant"],
            "customer_id": (customer_of or {}).get(r["id"], r["customer_id"]),
            "case_id": r["case_id"],
            "case_type": r["case_type"] or "",
            "occurred_at": r["occurred_at"].isoformat(),
            "occurred_at_ts": int(r["occurred_at"].timestamp()),
            "documents": ", ".join(r["documents"]),
            "pii": bool(r["pii"]),
            "vector_hash": r["vector_hash"],
        }
        for r in rows
    ]
    collection(memory).update(ids=ids, metadatas=old)
    memory.episodic.vector_cache.clear()  # as in a process that opens the old store
    return ids


def test_a_new_vector_is_stored_with_its_stamp_alone(memory_on: Memory) -> None:
    seed(memory_on)

    assert set(stored_keys(memory_on).values()) == {STAMP}
    assert memory_on.episodic.check_index().old_metadata == 0


def test_an_old_collection_is_recalled_the_same_and_reindex_rewrites_it_without_embedding(
    memory_on: Memory,
) -> None:
    memory = memory_on
    seed(memory)
    expected = recall_all(memory)
    write_as_the_old_version(memory)
    assert set(stored_keys(memory).values()) == {STAMP | OLD_KEYS}

    assert_same_hits(recall_all(memory), expected)  # read from Chroma with the nine keys
    check = memory.episodic.check_index()
    assert (check.old_metadata, check.consistent, check.fixed) == (len(CASES), True, False)
    assert set(stored_keys(memory).values()) == {STAMP | OLD_KEYS}  # a check changes nothing

    with embedder_must_not_run(memory.episodic):
        assert memory.episodic.reindex() == len(CASES)

    assert set(stored_keys(memory).values()) == {STAMP}
    assert memory.episodic.check_index().old_metadata == 0
    memory.episodic.vector_cache.clear()
    assert_same_hits(recall_all(memory), expected)


def test_a_case_written_again_sheds_the_old_keys(memory: Memory) -> None:
    seed(memory)
    write_as_the_old_version(memory)
    c1, c2 = entry_ids(memory)["C-1"], entry_ids(memory)["C-2"]
    case_id, case_type, request, resolution = CASES[0]

    updated = memory.record_case(
        "ABARTENDE", request, resolution + " Confirmed.", case_id=case_id, case_type=case_type
    )

    assert updated.status == "updated"
    keys = stored_keys(memory)
    assert keys[c1] == STAMP and keys[c2] == STAMP | OLD_KEYS
    assert memory.episodic.check_index().old_metadata == len(CASES) - 1


def test_an_old_vector_stamped_with_another_customer_is_never_ranked_nor_restamped(memory_on: Memory) -> None:
    memory = memory_on
    seed(memory)
    c1 = entry_ids(memory)["C-1"]
    write_as_the_old_version(memory, customer_of={c1: "COFFEESHOP"})
    query = "Why was I billed two times for the same order?"

    assert c1 not in {h.entry_id for h in memory.recall_cases("ABARTENDE", query, k=4)}
    check = memory.episodic.check_index()
    assert (check.missing, check.old_metadata) == (1, len(CASES) - 1)  # re-embedded, not relabelled

    fixed = memory.episodic.check_index(fix=True)

    assert fixed.fixed and memory.episodic.check_index().consistent
    assert set(stored_keys(memory).values()) == {STAMP}
    assert memory.episodic.index.stored([c1])[c1].stamp.customer_id == "ABARTENDE"
    assert memory.recall_cases("ABARTENDE", query, k=1)[0].entry_id == c1
