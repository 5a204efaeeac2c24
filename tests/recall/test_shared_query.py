"""A context build embeds its query once for both recalls (past cases and earlier conversations)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from connector.embeddings.base import Vectors
from connector.embeddings.shared_query import SharedQuery, embed_one
from connector.lexical.tokens import MAX_QUERY_CHARS, query_terms
from connector.recall import scoped_recall


class CountingEmbedder:
    model_id = "counting-3"
    dimension = 3

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.started = threading.Event()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.extend(texts)
        self.started.set()
        assert self.gate.wait(10)
        return np.array([[float(len(t)), 1.0, 0.0] for t in texts], dtype=np.float32)


def test_concurrent_recalls_of_one_build_embed_the_query_once() -> None:
    embedder, shared = CountingEmbedder(), SharedQuery()
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(embed_one, embedder, "where is INV-1?", shared)
        assert embedder.started.wait(10)
        second = pool.submit(embed_one, embedder, "where is INV-1?", shared)
        embedder.gate.set()
        a, b = first.result(10), second.result(10)
    assert embedder.calls == ["where is INV-1?"]
    assert np.array_equal(a, b)


def test_another_text_or_no_shared_object_is_embedded_on_its_own() -> None:
    embedder, shared = CountingEmbedder(), SharedQuery()
    embedder.gate.set()
    embed_one(embedder, "one", shared)
    embed_one(embedder, "two", shared)
    embed_one(embedder, "one", shared)
    embed_one(embedder, "one")
    assert embedder.calls == ["one", "two", "one"]


def test_a_failed_embedding_reaches_every_waiter() -> None:
    class Broken(CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> Vectors:
            self.calls.extend(texts)
            raise OSError("model file unreadable")

    embedder, shared = Broken(), SharedQuery()
    for _ in range(2):
        with pytest.raises(OSError, match="unreadable"):
            embed_one(embedder, "q", shared)
    assert embedder.calls == ["q"]


class CountingPool(ThreadPoolExecutor):
    """A pool that counts the work handed to it."""

    def __init__(self) -> None:
        super().__init__(2)
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def,override]
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def test_a_recall_that_asks_second_joins_the_running_embedding_without_a_thread_of_its_own() -> None:
    embedder, shared = CountingEmbedder(), SharedQuery()
    with CountingPool() as cases_pool, CountingPool() as turns_pool:
        first = shared.start(embedder, "where is INV-1?", cases_pool)
        assert embedder.started.wait(10)
        second = shared.start(embedder, "where is INV-1?", turns_pool)
        embedder.gate.set()
        assert second is first and np.array_equal(first.result(10), second.result(10))
    assert (cases_pool.submitted, turns_pool.submitted) == (1, 0)
    assert embedder.calls == ["where is INV-1?"]


def test_a_started_embedding_is_shared_with_a_recall_that_embeds_on_its_own_thread() -> None:
    embedder, shared = CountingEmbedder(), SharedQuery()
    embedder.gate.set()
    with ThreadPoolExecutor(1) as pool:
        started = shared.start(embedder, "q", pool).result(10)
    assert np.array_equal(embed_one(embedder, "q", shared), started)
    assert embedder.calls == ["q"]


def test_a_failed_started_embedding_reaches_the_recall_that_joined_it() -> None:
    class Broken(CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> Vectors:
            self.calls.extend(texts)
            raise OSError("model file unreadable")

    embedder, shared = Broken(), SharedQuery()
    with ThreadPoolExecutor(1) as pool:
        shared.start(embedder, "q", pool)
        with pytest.raises(OSError, match="unreadable"):
            shared.start(embedder, "q", pool).result(10)
    assert embedder.calls == ["q"]


def test_what_the_recalls_derive_from_the_text_is_made_once_per_build() -> None:
    made: list[str] = []

    def terms(text: str) -> list[str]:
        made.append(text)
        return text.split()

    shared = SharedQuery()
    assert shared.derived(terms, "where is INV-1") == ["where", "is", "INV-1"]
    assert shared.derived(terms, "where is INV-1") == ["where", "is", "INV-1"]
    shared.derived(terms, "another text")
    SharedQuery().derived(terms, "where is INV-1")  # the next build makes its own
    assert made == ["where is INV-1", "another text", "where is INV-1"]


def test_both_recalls_of_a_build_tokenise_the_query_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def counted(text: str) -> list[str]:
        calls.append(len(text))
        return query_terms(text)

    monkeypatch.setattr(scoped_recall, "query_terms", counted)
    query = "Credit of 312.40 for INV-004821? " * 200  # longer than a recall searches
    shared = SharedQuery()
    cases = scoped_recall.RecallQuery(query, shared)  # case recall passes the whole query
    turns = scoped_recall.RecallQuery(query[:MAX_QUERY_CHARS], shared)  # turn recall its beginning
    cases.terms.append("changed by one recall")  # each recall has its own list

    assert turns.terms == query_terms(query) and calls == [MAX_QUERY_CHARS]
    assert scoped_recall.RecallQuery(query).terms == query_terms(query)  # without a build
