"""A text recorded again is not embedded again, gets the very same vector, and forget drops what its
customer's texts left in the process (embedded and server Chroma)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import numpy as np
import sqlalchemy as sa

from connector.episodic import writer
from connector.episodic.tables import ENTRIES
from connector.episodic.text_vectors import TextVectors
from connector.memory import Memory
from connector.scope import Scope

T0 = datetime(2026, 2, 1, tzinfo=UTC)
REQUEST = "Pallet of copper fittings on SO-{n:06d} arrived nine days late."
RESOLUTION = "Refunded freight of {n}.00 USD on INV-{n:06d}."


@contextmanager
def embedded_texts(memory: Memory) -> Iterator[list[str]]:
    """Every text the embedder is asked for while the block runs."""
    embedder = memory.episodic.embedder
    original = embedder.embed
    asked: list[str] = []

    def recording(texts: Sequence[str]) -> object:
        asked.extend(texts)
        return original(texts)

    embedder.embed = recording  # type: ignore[method-assign]
    try:
        yield asked
    finally:
        embedder.embed = original  # type: ignore[method-assign]


def record(memory: Memory, customer: str, n: int, *, pii: bool = False) -> str:
    """A templated case (its numbers differ, its embedded words do not); returns its entry id."""
    recorded = memory.record_case(
        customer, REQUEST.format(n=n), RESOLUTION.format(n=n), case_id=f"C-{n}", case_type="late_delivery",
        occurred_at=T0, pii=pii,
    )  # fmt: skip
    return recorded.entry_id


def stored_vectors(memory: Memory) -> dict[str, np.ndarray]:  # type: ignore[type-arg]
    with memory.engine.connect() as conn:
        ids = conn.execute(sa.select(ENTRIES.c.id)).scalars().all()
    return {i: s.vector for i, s in memory.episodic.index.stored(list(ids)).items()}


def test_a_text_recorded_before_is_not_embedded_again_and_gets_the_same_vector(memory: Memory) -> None:
    first = record(memory, "ABARTENDE", 140)

    with embedded_texts(memory) as asked:
        second = record(memory, "COFFEESHOP", 141)

    assert asked == []
    vectors = stored_vectors(memory)
    assert vectors[first].tobytes() == vectors[second].tobytes()


def test_the_same_text_in_every_chunk_of_a_long_batch_is_embedded_once_into_one_vector(
    memory: Memory,
) -> None:
    episodic = memory.episodic
    cases = [
        episodic.prepare(
            f"CUST-{n % 7}", REQUEST.format(n=n), RESOLUTION.format(n=n), case_id=f"C-{n}",
            case_type="late_delivery", occurred_at=T0 + timedelta(hours=n),
        )
        for n in range(writer.WRITE_CHUNK * 2 + 3)
    ]  # fmt: skip

    with embedded_texts(memory) as asked:
        results = episodic.record_cases(cases)
    again = episodic.record_cases(cases[:5])

    assert len(asked) == 1
    assert {r.status for r in results} == {"created"}
    assert {r.status for r in again} == {"unchanged"}
    assert len({v.tobytes() for v in stored_vectors(memory).values()}) == 1


def test_forget_drops_the_vectors_its_customers_texts_got(memory: Memory) -> None:
    record(memory, "ABARTENDE", 140)
    memory.forget("ABARTENDE")

    with embedded_texts(memory) as asked:
        record(memory, "COFFEESHOP", 141)

    assert len(asked) == 1


def test_a_pii_cases_vector_is_not_kept(memory: Memory) -> None:
    record(memory, "ABARTENDE", 140, pii=True)

    with embedded_texts(memory) as asked:
        record(memory, "COFFEESHOP", 141)

    assert len(asked) == 1


def test_the_least_recently_used_vectors_go_first_and_a_scope_drops_only_what_it_used() -> None:
    a, b = Scope("t", "A"), Scope("t", "B")
    kept = TextVectors(max_entries=2)
    v = np.ones(4, dtype=np.float32)
    kept.keep({"h1": v, "h2": v}, {"h1": [a], "h2": [b]})
    kept.lookup(["h1"])  # used since: h2 is now the oldest
    kept.keep({"h3": v}, {"h3": [a, b]})

    assert set(kept.lookup(["h1", "h2", "h3"])) == {"h1", "h3"}
    kept.drop_scope(b)
    assert set(kept.lookup(["h1", "h2", "h3"])) == {"h1"}
