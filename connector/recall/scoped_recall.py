"""The hybrid ranking of one scope's candidates, shared by case recall and turn recall.

Scope first, similarity second: the candidates are rows of the relational store read with the
scope's own filter (the caller's statement: its table, retention and type filters), so the cost
follows the customer's history, not the index size. Then, for those ids only: their vectors from
the vector index through the in-process cache, checked against their rows
(:meth:`~connector.recall.vector_cache.CachedIndex.guarded`); their BM25 scores from the scoped
lexical index (the caller's lexical source); the fusion of both
(:func:`~connector.recall.fusion.fuse`) with the embedding model's dense threshold. What a hit
shows (a case's summary, a turn with its neighbours) is the caller's: it gets the ranked rows.

The query is embedded on this recall's own worker pool, beside the reads: started by the caller
before the candidates are read (case recall), or here once the scope has candidates (turn recall,
which embeds nothing for a customer without indexed turns).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from connector.embeddings.base import Vectors
from connector.embeddings.shared_query import SharedQuery, embed_one
from connector.errors import StoreError
from connector.lexical import index as lexical
from connector.lexical.tokens import MAX_QUERY_CHARS, query_terms
from connector.recall.fusion import Fused, Fusion, fuse
from connector.recall.lazy_vectors import LazyVectors
from connector.recall.question_form import asks_yes_or_no
from connector.recall.ranking import score_threshold
from connector.scope import Scope
from connector.threads import LazyPool


@dataclass(slots=True)
class RecallQuery:
    """One recall's query: its text, lexical terms and queried document keys, and its embedding
    (``vector``: already started by the caller, or None to start it once there are candidates)."""

    text: str
    shared: SharedQuery | None = None
    doc_keys: set[str] = field(default_factory=set)
    vector: Future[Vectors] | None = None
    terms: list[str] = field(init=False)
    yes_no: bool = field(init=False)

    def __post_init__(self) -> None:
        # query_terms reads the first MAX_QUERY_CHARS: both recalls' texts share their terms
        text = self.text[:MAX_QUERY_CHARS]
        self.terms = (
            query_terms(text) if self.shared is None else list(self.shared.derived(query_terms, text))
        )
        self.yes_no = asks_yes_or_no(text)

    def cancel(self) -> None:
        """The ranking needs no embedding (one shared with another recall runs on for it)."""
        if self.vector is not None and self.shared is None:
            self.vector.cancel()


class ScopedRecall:
    """Ranks one scope's candidate rows by vector, lexical score and fusion (see the module doc).

    Candidate rows carry ``id`` (the vector's and the lexical document's id), ``vector_hash``
    (the hash the row wants its vector to have), ``lexical_length`` (the length of its lexical
    document, read with the row: :func:`connector.lexical.index.with_lengths`; NULL when it has
    none), and ``doc_keys`` when the query names documents.
    """

    def __init__(self, vectors: LazyVectors, lexical_source: str, pool_name: str) -> None:
        self.vectors = vectors
        self.lexical_source = lexical_source
        self._pool = LazyPool(pool_name)

    def close(self) -> None:
        """Stop the threads that embed queries."""
        self._pool.shutdown()

    def embed(self, text: str, shared: SharedQuery | None) -> Future[Vectors]:
        """Start embedding ``text`` on the pool, or join the embedding the caller's build started."""
        embedder = self.vectors.embedder  # resolved here: the worker must not race to create it
        if shared is not None:
            return shared.start(embedder, text, self._pool.get())
        return self._pool.get().submit(embed_one, embedder, text)

    def rank(
        self,
        conn: sa.Connection,
        scope: Scope,
        candidates: sa.Executable,
        params: Mapping[str, Any],
        query: RecallQuery,
        *,
        k: int,
        fusion: Fusion,
        complete: bool = False,
        cut: bool = True,
    ) -> list[tuple[Any, Fused]]:
        """The top ``k`` candidate rows (read by ``candidates`` with ``params``) with their rank.

        A row whose vector is missing, of another scope or not the one it wants (a write not yet
        indexed) is left out until a repair re-embeds it. ``complete``: the statement reads all the
        scope's recallable entries (no type or date filter), so the cache drops the others.
        ``cut``: weak candidates fall below the model's dense threshold (False: the statement's
        rows are evidence enough, e.g. the cases of the time the question names).
        """
        result = conn.execute(candidates, params)
        at = _Columns.of(list(result.keys()))
        rows = list(result.all())
        if rows and query.vector is None:
            query.vector = self.embed(query.text, query.shared)
        ids: list[str] = []
        if rows or complete:  # an empty complete read still drops the scope's cached vectors
            rows, ids, matrix = self._vectors_of(scope, rows, at, complete=complete)
        if not rows or query.vector is None:
            query.cancel()
            return []
        # Columns by position: a Row's attribute lookup costs ten times its index, per row.
        lengths = {i: r[at.length] for i, r in zip(ids, rows, strict=True) if r[at.length] is not None}
        scored = lexical.search(conn, scope, self.lexical_source, query.terms, lengths)
        entry_keys = [r.doc_keys for r in rows] if query.doc_keys else [()] * len(rows)
        ranked = fuse(
            query.vector.result(), matrix, [scored.get(i) for i in ids], entry_keys, query.doc_keys,
            k=k, threshold=score_threshold(self.vectors.embedder.model_id) if cut else -np.inf, fusion=fusion,
            yes_no=query.yes_no,
        )  # fmt: skip
        return [(rows[r.index], r) for r in ranked]

    def _vectors_of(
        self, scope: Scope, rows: list[Any], at: _Columns, *, complete: bool
    ) -> tuple[list[Any], list[str], Vectors]:
        """The rows that have their vector in the index, their ids, and those vectors as one matrix."""
        dimension = self.vectors.embedder.dimension
        ids = [r[at.id] for r in rows]
        wanted = dict(zip(ids, [r[at.vector_hash] for r in rows], strict=True))
        vectors = self.vectors.index.guarded(scope, wanted, complete=complete)
        kept = [n for n, i in enumerate(ids) if i in vectors]
        if not kept:
            return [], [], np.zeros((0, dimension), dtype=np.float32)
        if len(kept) < len(rows):
            rows, ids = [rows[n] for n in kept], [ids[n] for n in kept]
        matrix = _stacked([vectors[i] for i in ids])
        if matrix.shape[1] != dimension:
            raise StoreError(f"index vectors have dimension {matrix.shape[1]}, embedder {dimension}")
        return rows, ids, matrix


@dataclass(frozen=True, slots=True)
class _Columns:
    """Where a candidate row holds the columns the ranking reads of every row."""

    id: int
    vector_hash: int
    length: int

    @classmethod
    def of(cls, keys: list[str]) -> _Columns:
        return cls(keys.index("id"), keys.index("vector_hash"), keys.index(lexical.LENGTH))


def _stacked(vectors: list[Vectors]) -> Vectors:
    """The vectors as the rows of one matrix, as ``np.vstack`` makes it: one ``np.array`` call
    when they are all flat and of one size (a fourth of vstack's cost over 100 vectors)."""
    try:
        matrix = np.array(vectors)
    except ValueError:  # of different sizes: vstack says which
        return np.vstack(vectors)
    return matrix if matrix.ndim == 2 else np.vstack(vectors)
