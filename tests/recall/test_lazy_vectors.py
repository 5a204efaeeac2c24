"""Case and turn memory make their embedder and vector index once, on first use, from any thread."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from connector.embeddings.base import Embedder
from connector.recall.lazy_vectors import LazyVectors
from connector.recall.vector_cache import VectorCache
from connector.recall.vector_index import VectorIndex


class Factories:
    """Counts what each factory made; each call is slow enough for racing threads to overlap."""

    def __init__(self) -> None:
        self.embedders: list[Any] = []
        self.indexes: list[tuple[Any, Any]] = []
        self.arrived = threading.Barrier(8, timeout=10)

    def embedder(self) -> Embedder:
        made: Any = type("Embedder", (), {"model_id": "m", "dimension": 3})()
        self.embedders.append(made)
        return made  # type: ignore[no-any-return]

    def index(self, embedder: Embedder) -> VectorIndex:
        made: Any = type("Index", (), {"model_id": embedder.model_id, "dimension": embedder.dimension})()
        self.indexes.append((made, embedder))
        return made  # type: ignore[no-any-return]


def test_nothing_is_made_before_first_use() -> None:
    made = Factories()
    vectors = LazyVectors(made.embedder, made.index)
    assert (made.embedders, made.indexes, vectors.opened) == ([], [], None)


def test_threads_asking_at_once_share_one_embedder_and_one_index_made_with_it() -> None:
    made = Factories()
    vectors = LazyVectors(made.embedder, made.index)

    def ask(_: int) -> tuple[int, int]:
        made.arrived.wait()
        return id(vectors.index), id(vectors.embedder)

    with ThreadPoolExecutor(8) as pool:
        seen = set(pool.map(ask, range(8)))
    assert len(made.embedders) == 1 and len(made.indexes) == 1
    inner, embedder = made.indexes[0]
    assert vectors.index.inner is inner and embedder is made.embedders[0]
    assert seen == {(id(vectors.index), id(vectors.embedder))}


def test_the_index_reads_through_the_given_cache() -> None:
    made, cache = Factories(), VectorCache(1 << 20)
    assert LazyVectors(made.embedder, made.index, cache).index.cache is cache


def test_reopen_makes_a_new_index_with_the_same_embedder_and_cache() -> None:
    made = Factories()
    vectors = LazyVectors(made.embedder, made.index)
    first = vectors.index
    vectors.reopen()
    assert vectors.opened is None
    second = vectors.index
    assert second is not first and second.cache is first.cache
    assert len(made.indexes) == 2 and len(made.embedders) == 1
