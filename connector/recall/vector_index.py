"""What episodic memory needs of a vector store: the small interface Chroma (or a stand-in) fills.

The vector store is the store of record for entry vectors; the relational store decides which
entries exist, belong to a scope and are live. Every stored vector carries, as metadata, its
entry's scope and ``vector_hash`` (which model and text made it), so a reader can check a fetched
vector against the row that asked for it (:func:`guarded`) and ``reindex --check`` can compare the
two stores id by id. That stamp is all the metadata a vector needs (:data:`STAMP_KEYS`): a cold
recall reads every key stored with each vector, and what the relational rows hold already (dates,
documents, type) only made that read slower.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from connector.embeddings.base import Vectors
from connector.scope import Scope
from connector.vectors.stamps import HASH_KEY, STAMP_KEYS, Stamp, StoredVector

__all__ = [
    "HASH_KEY", "STAMP_KEYS", "Eraser", "Stamp", "StoredVector", "VectorIndex", "guarded", "vector_hash",
]  # fmt: skip


def vector_hash(model_id: str, text: str) -> str:
    """Which model embedded which text: equal hashes mean the stored vector is the one the row wants."""
    return hashlib.sha256(f"{model_id}\x1f{text}".encode()).hexdigest()[:32]


class Eraser(Protocol):
    """What ``forget`` needs of a vector store: find a scope's vectors, delete vectors by id."""

    def ids_in_scope(self, tenant: str, customer_id: str) -> list[str]: ...

    def delete(self, ids: Sequence[str]) -> None: ...


class VectorIndex(Protocol):
    """Entry vectors by id. Ids are the relational ``episodic_entry.id``; no similarity search."""

    model_id: str
    dimension: int

    def stored(self, ids: Sequence[str]) -> dict[str, StoredVector]:
        """The vectors of the ids the index holds, with their metadata (missing ids left out)."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The bare vectors of the ids the index holds (missing ids left out)."""
        ...

    def upsert(
        self, ids: Sequence[str], vectors: Vectors, metadatas: Sequence[Mapping[str, Any]]
    ) -> None: ...

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def ids_in_scope(self, tenant: str, customer_id: str) -> list[str]:
        """Ids stamped with the scope, whatever the relational rows say (erasure only)."""
        ...

    def count(self) -> int: ...

    def stamps(self) -> Iterator[tuple[str, Stamp]]:
        """Every id the index holds with its stamp (for reconcile), read in pages."""
        ...

    def stored_model(self) -> tuple[str | None, int | None]: ...

    def recreate(self) -> None: ...


def guarded(
    found: Mapping[str, StoredVector], scope: Scope, wanted_hashes: Mapping[str, str | None]
) -> dict[str, Vectors]:
    """The fetched vectors that belong to ``scope`` and are the ones their rows want.

    A second guard behind the relational scope filter: a vector stored under another scope is never
    ranked, and one whose hash differs from its row's (a write not yet indexed, or left half-done) is
    skipped until ``reindex --check --fix`` repairs it. Rows from before hashes (``None``) accept the
    stored vector of their scope.
    """
    kept: dict[str, Vectors] = {}
    for entry_id, stored in found.items():
        if stored.stamp.scope != (scope.tenant, scope.customer_id):
            continue
        wanted = wanted_hashes.get(entry_id)
        if wanted is not None and stored.stamp.vector_hash != wanted:
            continue
        kept[entry_id] = stored.vector
    return kept
